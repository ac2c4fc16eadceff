"""Adapter benchmark rows (see ``bench_adapters.py``): LangChain ``create_agent`` and a
hand-built LangGraph loop."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapter_harness import (
    SUMMARY,
    SYSTEM,
    Clock,
    Config,
    answer_text,
    memory_for,
    timed,
    tool_result,
    turn_of,
    user_text,
)

from contextfold import Message

# -- LangChain ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _langchain() -> Any:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage, convert_to_openai_messages
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    @tool
    def lookup_order(order: str) -> str:
        """Look up an order by its id (A-1234)."""
        return tool_result(order)

    class Model(BaseChatModel):
        """Scripted tool-calling model: records what it was sent (untimed by the hooks)."""

        clock: Any = None

        @property
        def _llm_type(self) -> str:
            return "bench"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            self.clock.sent(list(messages), lambda sent: [
                Message.from_openai(d) for d in convert_to_openai_messages(sent)])
            last = messages[-1]
            usage = {"input_tokens": 10, "output_tokens": 10, "total_tokens": 20}
            if isinstance(last, ToolMessage):
                msg = AIMessage(answer_text(int(last.tool_call_id.split("_")[1])),
                                usage_metadata=usage)
            else:
                t = turn_of(str(last.content))
                calls = [{"name": "lookup_order", "args": {"order": f"A-{1000 + t}"},
                          "id": f"call_{t}_a", "type": "tool_call"}]
                if t % 10 == 0:
                    calls.append({"name": "lookup_order", "args": {"order": f"A-{999 + t}"},
                                  "id": f"call_{t}_b", "type": "tool_call"})
                msg = AIMessage("", tool_calls=calls, usage_metadata=usage)
            return ChatResult(generations=[ChatGeneration(message=msg)])

    return Model, lookup_order


def _timed_middleware(base: type, clock: Clock) -> type:
    """``base`` with the hooks it defines timed into ``clock`` (the model call nested in
    ``wrap_model_call`` excluded); hooks it does not define stay undefined."""
    from langchain.agents.middleware.types import AgentMiddleware

    def timed_hook(name: str) -> Callable[..., Any]:
        def hook(self: Any, state: Any, runtime: Any) -> Any:
            return timed(clock, getattr(super(timed_cls, self), name))(state, runtime)
        return hook

    def wrap_model_call(self: Any, request: Any, handler: Any) -> Any:
        inner = 0.0

        def call(req: Any) -> Any:
            nonlocal inner
            start = time.process_time()
            try:
                return handler(req)
            finally:
                inner += time.process_time() - start

        start = time.process_time()
        try:
            return super(timed_cls, self).wrap_model_call(request, call)
        finally:
            clock.seconds += time.process_time() - start - inner

    hooks: dict[str, Any] = {name: timed_hook(name)
                             for name in ("before_model", "after_model", "after_agent")
                             if getattr(base, name) is not getattr(AgentMiddleware, name)}
    if base.wrap_model_call is not AgentMiddleware.wrap_model_call:  # type: ignore[attr-defined]
        hooks["wrap_model_call"] = wrap_model_call
    timed_cls = type(f"Timed{base.__name__}", (base,), hooks)
    return timed_cls


def langchain_configs(budget: int) -> list[Config]:
    def play(kind: str, store: str = "-", **options: Any) -> Callable[[int, Path, Clock], None]:
        def run(turns: int, tmp: Path, clock: Clock) -> None:
            from langchain.agents import create_agent
            from langchain.agents.middleware import SummarizationMiddleware
            from langchain_core.language_models.fake_chat_models import FakeListChatModel
            from langchain_core.messages import HumanMessage
            from langgraph.checkpoint.memory import InMemorySaver

            from contextfold.integrations.langchain import ContextFoldMiddleware

            model_cls, lookup_order = _langchain()
            middleware: list[Any] = []
            if kind == "contextfold":
                middleware = [_timed_middleware(ContextFoldMiddleware, clock)(
                    memory_for(store, tmp, budget), **options)]
            elif kind == "summarization":
                middleware = [_timed_middleware(SummarizationMiddleware, clock)(
                    FakeListChatModel(responses=[SUMMARY]), trigger=("tokens", budget),
                    keep=("messages", 20))]
            agent = create_agent(model_cls(clock=clock), [lookup_order], system_prompt=SYSTEM,
                                 checkpointer=InMemorySaver(), middleware=middleware)
            cfg = {"configurable": {"thread_id": "bench"}}
            for t in range(1, turns + 1):
                agent.invoke({"messages": [HumanMessage(user_text(t))]}, cfg)
        return run

    fw = "LangChain create_agent"
    return [
        Config(fw, "none (full history)", "-", play("none"), info=True),
        Config(fw, "SummarizationMiddleware", "-", play("summarization"), own=True),
        Config(fw, "ContextFoldMiddleware", "memory", play("contextfold", "memory")),
        Config(fw, "ContextFoldMiddleware", "sqlite", play("contextfold", "sqlite")),
        Config(fw, "ContextFoldMiddleware(trim_state=False)", "memory",
               play("contextfold", "memory", trim_state=False), info=True),
        Config(fw, "ContextFoldMiddleware(trim_state=False)", "sqlite",
               play("contextfold", "sqlite", trim_state=False), info=True),
    ]


# -- LangGraph ----------------------------------------------------------------------------------


def langgraph_configs(budget: int) -> list[Config]:
    def play(kind: str, store: str = "-") -> Callable[[int, Path, Clock], None]:
        def run(turns: int, tmp: Path, clock: Clock) -> None:
            from langchain_core.language_models.fake_chat_models import FakeListChatModel
            from langchain_core.messages import (
                AIMessage,
                HumanMessage,
                SystemMessage,
                ToolMessage,
                convert_to_openai_messages,
            )
            from langmem.short_term import summarize_messages

            from contextfold.integrations.langgraph import ContextFold

            def reply(messages: list[Any]) -> AIMessage:
                last = messages[-1]
                if isinstance(last, ToolMessage):
                    return AIMessage(answer_text(int(last.tool_call_id.split("_")[1])),
                                     id=str(uuid.uuid4()))
                t = turn_of(str(last.content))
                return AIMessage("", id=str(uuid.uuid4()), tool_calls=[{
                    "name": "lookup_order", "args": {"order": f"A-{1000 + t}"},
                    "id": f"call_{t}_a", "type": "tool_call"}])

            state: list[Any] = []
            fold = ContextFold(memory_for(store, tmp, budget), session_id="bench") \
                if kind == "contextfold" else None
            summarizer = FakeListChatModel(responses=[SUMMARY])
            running = None
            for t in range(1, turns + 1):
                state.append(HumanMessage(user_text(t), id=str(uuid.uuid4())))
                for _ in range(2):
                    begin = time.process_time()
                    if fold is not None:
                        sent = fold.messages(state, system=SYSTEM)
                    else:
                        result = summarize_messages(
                            state, running_summary=running, model=summarizer,
                            max_tokens=budget, max_summary_tokens=256)
                        running = result.running_summary
                        sent = [SystemMessage(SYSTEM), *result.messages]
                    clock.seconds += time.process_time() - begin
                    clock.sent(sent, lambda sent: [Message.from_openai(d) for d in
                                                   convert_to_openai_messages(sent)])
                    if sent[-1].content != state[-1].content:
                        clock.newest_missing += 1
                    ai = reply(state)
                    if fold is not None:
                        begin = time.process_time()
                        fold.record(ai)
                        clock.seconds += time.process_time() - begin
                    state.append(ai)
                    if ai.tool_calls:
                        state.append(ToolMessage(tool_result(ai.tool_calls[0]["args"]["order"]),
                                                 tool_call_id=ai.tool_calls[0]["id"],
                                                 id=str(uuid.uuid4())))
        return run

    fw = "LangGraph hand-built"
    return [
        Config(fw, "langmem summarize_messages", "-", play("langmem"), own=True),
        Config(fw, "ContextFold helper", "memory", play("contextfold", "memory")),
        Config(fw, "ContextFold helper", "sqlite", play("contextfold", "sqlite")),
    ]
