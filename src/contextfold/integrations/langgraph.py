"""LangGraph: :class:`ContextFold`, for hand-built ``StateGraph``\\ s that do not use
``create_agent`` (which takes :class:`~contextfold.integrations.langchain.ContextFoldMiddleware`).

::

    from langgraph.graph import MessagesState, StateGraph
    from contextfold.integrations.langgraph import ContextFold

    fold = ContextFold(memory)

    def agent(state: MessagesState, config):
        messages = fold.messages(state["messages"], config, system=SYSTEM, tools=tools)
        response = model.bind_tools(tools).invoke(messages)
        fold.record(response, config)       # stores the reply, feeds its usage_metadata
        return {"messages": [response]}

``messages`` appends the state's new messages (idempotently, by message id — LangGraph's
``add_messages`` gives every message one) and returns what the model should receive: one
system message (your system prompt with the summary block appended) followed by the live
messages, never over the budget and never splitting a tool call from its result. The
session is the run's ``thread_id`` unless ``session_id`` is given. Works with any
checkpointer; after a restart the first call of a thread re-offers the state's messages and
the store drops those it already holds. System messages in the state are part of the
system prompt (never stored or folded). When contextfold clears an idle session, delete the
thread from the checkpointer too (``checkpointer.delete_thread``), or the next run of that
thread would store its old messages again. ``trim`` returns ``RemoveMessage``\\ s for the
state messages already folded, to keep checkpoints bounded (see the LangChain module for
what that costs). Every method has an ``a``-prefixed async twin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

try:
    from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_extra

    raise missing_extra("LangGraph", "langchain", exc) from exc

from ..context import Context
from ..errors import ConfigError
from ..memory import AsyncMemory, Memory
from .bridge import MemoryBridge, split_context
from .langchain_sync import SessionSync, removals, thread_id

__all__ = ["ContextFold"]


class ContextFold:
    """contextfold as the memory of a hand-built LangGraph graph (see the module docstring).
    ``max_tokens``: the context budget (default: the memory policy's)."""

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        session_id: str | None = None,
        *,
        max_tokens: int | None = None,
    ) -> None:
        self.bridge = MemoryBridge(memory, "ContextFold")
        self.session_id = session_id
        self.max_tokens = max_tokens
        self._sync = SessionSync(self.bridge)
        self._tool_cache: tuple[tuple[int, ...], list[dict[str, Any]]] | None = None

    def session(self, config: Mapping[str, Any] | None = None) -> str:
        sid = self.session_id
        if not sid and config is not None:
            value = (config.get("configurable") or {}).get("thread_id")
            sid = str(value) if value else None
        sid = sid or thread_id()
        if not sid:
            raise ConfigError("ContextFold needs a session: pass session_id=..., or run the "
                              "graph with config={'configurable': {'thread_id': ...}}")
        return sid

    def _schemas(self, tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
        """The tools' OpenAI schemas (converted again only when the tools change)."""
        if not tools:
            return None
        key = tuple(id(t) for t in tools)
        if self._tool_cache is None or self._tool_cache[0] != key:
            self._tool_cache = (key, [convert_to_openai_tool(t) for t in tools])
        return self._tool_cache[1]

    def _view(self, sid: str, context: Context, state_messages: Sequence[BaseMessage]
              ) -> list[BaseMessage]:
        parts = split_context(context)
        head = [SystemMessage(content=parts.system_text)] if parts.system_text else []
        return [*head, *self._sync.get(sid).view.to_langchain(parts.messages, state_messages)]

    def _system(self, sid: str, system: str | None, state_messages: Sequence[BaseMessage]
                ) -> str | None:
        in_state = self._sync.get(sid).view.system_texts(state_messages)
        return "\n\n".join([*([system] if system else []), *in_state]) or None

    # -- sync ---------------------------------------------------------------------------------

    def sync(self, state_messages: Sequence[BaseMessage], config: Mapping[str, Any] | None = None
             ) -> str:
        """Append the state's new messages; returns the session id."""
        sid = self.session(config)
        self._sync.sync(sid, state_messages)
        return sid

    def messages(self, state_messages: Sequence[BaseMessage],
                 config: Mapping[str, Any] | None = None, *, system: str | None = None,
                 tools: Sequence[Any] | None = None) -> list[BaseMessage]:
        """Sync the state, then the bounded context as LangChain messages."""
        sid = self.sync(state_messages, config)
        context = self.bridge.context(sid, system=self._system(sid, system, state_messages),
                                      tools=self._schemas(tools), max_tokens=self.max_tokens)
        return self._view(sid, context, state_messages)

    def record(self, response: BaseMessage, config: Mapping[str, Any] | None = None) -> None:
        """Store the model's reply and feed its reported input tokens to ``record_usage``
        (which may fold, for ``ReportedUsage``): a final answer at once; a reply that
        calls tools with its results, by the next :meth:`messages`. A reply without an
        id gets one, so the state's copy is recognised later."""
        self._sync.record(self.session(config), response)

    def trim(self, state_messages: Sequence[BaseMessage],
             config: Mapping[str, Any] | None = None) -> list[RemoveMessage]:
        """``RemoveMessage``\\ s for the state messages contextfold no longer holds live."""
        sid = self.session(config)
        live = self.bridge.call("messages", sid, include_folded=False)
        return [RemoveMessage(id=i) for i in removals(state_messages, live)]

    # -- async --------------------------------------------------------------------------------

    async def async_sync(self, state_messages: Sequence[BaseMessage],
                         config: Mapping[str, Any] | None = None) -> str:
        sid = self.session(config)
        await self._sync.async_sync(sid, state_messages)
        return sid

    async def amessages(self, state_messages: Sequence[BaseMessage],
                        config: Mapping[str, Any] | None = None, *, system: str | None = None,
                        tools: Sequence[Any] | None = None) -> list[BaseMessage]:
        sid = await self.async_sync(state_messages, config)
        context = await self.bridge.acontext(sid, system=self._system(sid, system,
                                                                      state_messages),
                                             tools=self._schemas(tools),
                                             max_tokens=self.max_tokens)
        return self._view(sid, context, state_messages)

    async def arecord(self, response: BaseMessage, config: Mapping[str, Any] | None = None
                      ) -> None:
        await self._sync.arecord(self.session(config), response)

    async def atrim(self, state_messages: Sequence[BaseMessage],
                    config: Mapping[str, Any] | None = None) -> list[RemoveMessage]:
        sid = self.session(config)
        live = await self.bridge.acall("messages", sid, include_folded=False)
        return [RemoveMessage(id=i) for i in removals(state_messages, live)]
