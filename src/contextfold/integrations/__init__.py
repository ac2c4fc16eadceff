"""Framework adapters: contextfold as the memory of an agent framework.

One module and one extra per framework, each imported lazily (``import contextfold`` needs
none of them):

========================================  ===============================  ===================
module                                    what                             extra
========================================  ===============================  ===================
``contextfold.integrations.langchain``    ``ContextFoldMiddleware`` for    ``langchain``
                                          ``create_agent``
``contextfold.integrations.langgraph``    ``ContextFold`` helper/node for  ``langchain``
                                          hand-built ``StateGraph``\\ s
``contextfold.integrations.pydantic_ai``  ``ContextFoldCapability``,       ``pydantic-ai``
                                          ``history_processor``
``contextfold.integrations.openai_agents``  ``ContextFoldSession``         ``openai-agents``
``contextfold.integrations.llamaindex``   ``ContextFoldMemory``            ``llamaindex``
========================================  ===============================  ===================

Every adapter converts the framework's messages to contextfold messages and back, appends
idempotently by message id (a stable id is derived when the framework gives none), hands
the model ``context()`` — the summary plus the live messages, never over the budget, tool
calls never separated from their results — and re-implements none of the folding.
"""
