"""LangChain 1.x agents: :class:`ContextFoldMiddleware` for ``create_agent``.

::

    from langchain.agents import create_agent
    from contextfold import Memory, TokenBudget
    from contextfold.integrations.langchain import ContextFoldMiddleware

    memory = Memory("sqlite:///agent.db", policy=TokenBudget(8000))
    agent = create_agent(model, tools, middleware=[ContextFoldMiddleware(memory)],
                         checkpointer=checkpointer)
    agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})

Before every model call and at the end of a run, the new messages in the agent state are
appended to contextfold in one batch (by message id, so a replayed step appends nothing
twice; which messages are new is kept in the state, so it survives restarts with the
checkpointer; a model's reply is stored with the tool results that follow it); the model
receives contextfold's context instead
of the whole history — the system prompt with the summary block appended, then the live
messages, never over the budget and never splitting a tool call from its result; the
``usage_metadata`` the provider reports feeds ``record_usage`` (for ``ReportedUsage``).
System messages kept in the state count as part of the system prompt: they are never
stored or folded, and reach the model in the system message.
The session is the run's ``thread_id`` unless ``session_id`` is given. Sync (``invoke``)
and async (``ainvoke``) runs both work; an ``AsyncMemory`` serves async runs only.

``trim_state`` (off by default) removes folded messages from the graph state after each
fold. Off: the checkpoint keeps the whole transcript — what LangGraph's history, time
travel and UIs show — and every checkpoint write re-serialises it, so writes grow with the
conversation. On: the state holds only live messages, so checkpoints stay bounded; folded
messages remain in contextfold (``memory.messages(session, include_folded=True)`` with the
default archive retention) but leave the graph's own history, and each step costs one
extra O(1) stats read (plus one read of the live messages after a fold).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

try:
    from langchain.agents.middleware.types import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
        PrivateStateAttr,
    )
    from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.config import get_config
    from typing_extensions import NotRequired
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_extra

    raise missing_extra("LangChain", "langchain", exc) from exc

from ..errors import ConfigError
from ..memory import AsyncMemory, Memory
from ..messages import Message
from .bridge import MemoryBridge, split_context
from .langchain_messages import LangChainView, from_langchain, message_id, system_message

__all__ = ["ContextFoldMiddleware", "ContextFoldState", "SyncPlan", "plan_sync", "thread_id"]

#: State key holding the id of the newest state message already in contextfold.
SYNCED_KEY = "contextfold_synced"
#: State key holding the summary version the state was last trimmed against.
TRIMMED_KEY = "contextfold_trimmed"


class ContextFoldState(AgentState[Any]):
    """The agent state plus the middleware's private bookkeeping (kept in checkpoints)."""

    contextfold_synced: NotRequired[Annotated[str | None, PrivateStateAttr]]
    contextfold_trimmed: NotRequired[Annotated[int | None, PrivateStateAttr]]


def thread_id(runtime: Any = None) -> str | None:
    """The current run's ``thread_id`` (from the runtime, else the runnable config)."""
    info = getattr(runtime, "execution_info", None)
    tid = getattr(info, "thread_id", None)
    if tid:
        return str(tid)
    try:
        config = get_config()
    except RuntimeError:
        return None
    value = (config.get("configurable") or {}).get("thread_id")
    return str(value) if value else None


class SyncPlan:
    """What to append from a state's messages, where the new ones start, and the new
    watermark."""

    __slots__ = ("messages", "start", "watermark")

    def __init__(self, messages: list[Message], watermark: str | None, start: int = 0) -> None:
        self.messages = messages
        self.watermark = watermark
        self.start = start


def plan_sync(state_messages: Sequence[BaseMessage], synced: str | None) -> SyncPlan:
    """The state messages after the watermark ``synced`` (all of them when it is unset or
    no longer in the state: the store drops those it already holds, by id). The watermark
    is looked for from the newest message back, so a step costs what it added."""
    start = 0
    if synced is not None:
        for i in range(len(state_messages) - 1, -1, -1):
            if message_id(state_messages[i], i) == synced:
                start = i + 1
                break
    new: list[Message] = []
    for i in range(start, len(state_messages)):
        converted = from_langchain(state_messages[i], i)
        if converted is not None and converted.role != "system":  # a prompt, never folded
            new.append(converted)
    last = message_id(state_messages[-1], len(state_messages) - 1) if state_messages else synced
    return SyncPlan(new, last, start)


class SessionViews:
    """A :class:`LangChainView` per session, the least recently used dropped beyond
    ``size`` (a dropped session just converts its next context whole again)."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._views: OrderedDict[str, LangChainView] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str) -> LangChainView:
        with self._lock:
            view = self._views.get(session_id)
            if view is None:
                view = self._views[session_id] = LangChainView()
                while len(self._views) > self.size:
                    self._views.popitem(last=False)
            else:
                self._views.move_to_end(session_id)
            return view


def _reported_input_tokens(messages: Sequence[BaseMessage], start: int = 0) -> int | None:
    """The input tokens the provider reported for the newest model reply at or after
    ``start`` (None if it reported none)."""
    for i in range(len(messages) - 1, start - 1, -1):
        last = messages[i]
        if isinstance(last, AIMessage):
            usage = last.usage_metadata
            value = usage.get("input_tokens") if usage else None
            return value if isinstance(value, int) and not isinstance(value, bool) \
                and value >= 0 else None
    return None


class ContextFoldMiddleware(AgentMiddleware[ContextFoldState, Any, Any]):
    """contextfold as the memory of a LangChain ``create_agent`` agent (see the module
    docstring). ``max_tokens``: the context budget (default: the memory policy's).
    ``record_usage``: feed the provider-reported input tokens to ``record_usage``."""

    state_schema = ContextFoldState

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        session_id: str | None = None,
        *,
        max_tokens: int | None = None,
        trim_state: bool = False,
        record_usage: bool = True,
    ) -> None:
        super().__init__()
        self.bridge = MemoryBridge(memory, "ContextFoldMiddleware")
        self.session_id = session_id
        self.max_tokens = max_tokens
        self.trim_state = trim_state
        self.record_usage = record_usage
        self._tool_cache: tuple[tuple[int, ...], list[dict[str, Any]]] | None = None
        self._views = SessionViews()

    # -- helpers -----------------------------------------------------------------------------

    def session(self, runtime: Any = None) -> str:
        sid = self.session_id or thread_id(runtime)
        if not sid:
            raise ConfigError(
                "ContextFoldMiddleware needs a session: pass session_id=..., or run the agent "
                "with config={'configurable': {'thread_id': ...}}"
            )
        return sid

    def _tools(self, tools: Sequence[Any]) -> list[dict[str, Any]] | None:
        """OpenAI schemas of the request's tools, to count them against the budget."""
        if not tools:
            return None
        key = tuple(id(t) for t in tools)
        if self._tool_cache is None or self._tool_cache[0] != key:
            schemas = []
            for tool in tools:
                try:
                    schemas.append(convert_to_openai_tool(tool))
                except (TypeError, ValueError, NotImplementedError):
                    if isinstance(tool, Mapping):  # a provider tool dict: count it as is
                        schemas.append(dict(tool))
            self._tool_cache = (key, schemas)
        return self._tool_cache[1]

    @staticmethod
    def _updates(state: Mapping[str, Any], plan: SyncPlan, remove: list[str],
                 version: int | None) -> dict[str, Any] | None:
        """The state update, or None when nothing changed (no channel write)."""
        update: dict[str, Any] = {}
        if plan.watermark != state.get(SYNCED_KEY):
            update[SYNCED_KEY] = plan.watermark
        if remove:
            update["messages"] = [RemoveMessage(id=i) for i in remove]
        if version is not None:
            update[TRIMMED_KEY] = version
        return update or None

    def _trim_needed(self, state: Mapping[str, Any], stats: Any) -> bool:
        version = stats.summary_version if stats is not None else -1
        return bool(version != state.get(TRIMMED_KEY, 0))

    @staticmethod
    def _removals(state: Mapping[str, Any], live: list[Any]) -> list[str]:
        live_ids = {m.message.id for m in live}
        messages = state.get("messages") or []
        return [mid for i, m in enumerate(messages)
                if m.id and (mid := message_id(m, i)) not in live_ids]

    def _plan(self, state: Mapping[str, Any], runtime: Any
              ) -> tuple[str, SyncPlan, int | None]:
        """(session, what to append, the input tokens to record or None): the reply the
        newest new message answers carries the provider's count of the call before."""
        sid = self.session(runtime)
        messages = state.get("messages") or []
        plan = plan_sync(messages, state.get(SYNCED_KEY))
        reported = (_reported_input_tokens(messages, plan.start)
                    if self.record_usage and plan.messages else None)
        return sid, plan, reported

    def _sync(self, state: Mapping[str, Any], runtime: Any) -> dict[str, Any] | None:
        sid, plan, reported = self._plan(state, runtime)
        if plan.messages:
            self.bridge.add(sid, plan.messages)
        if reported is not None:
            self.bridge.record_usage(sid, reported)
        remove: list[str] = []
        version = None
        if self.trim_state:
            stats = self.bridge.call("stats", sid)
            if self._trim_needed(state, stats):
                live = self.bridge.call("messages", sid, include_folded=False) if stats else []
                remove = self._removals(state, live)
                version = stats.summary_version if stats is not None else 0
        return self._updates(state, plan, remove, version)

    async def _async_sync(self, state: Mapping[str, Any], runtime: Any
                          ) -> dict[str, Any] | None:
        sid, plan, reported = self._plan(state, runtime)
        if plan.messages:
            await self.bridge.aadd(sid, plan.messages)
        if reported is not None:
            await self.bridge.arecord_usage(sid, reported)
        remove: list[str] = []
        version = None
        if self.trim_state:
            stats = await self.bridge.acall("stats", sid)
            if self._trim_needed(state, stats):
                live = (await self.bridge.acall("messages", sid, include_folded=False)
                        if stats else [])
                remove = self._removals(state, live)
                version = stats.summary_version if stats is not None else 0
        return self._updates(state, plan, remove, version)

    def _request(self, request: ModelRequest[Any], context: Any, in_state: list[str]
                 ) -> ModelRequest[Any]:
        parts = split_context(context)
        texts = [*in_state, parts.summary or ""]
        summary = "\n\n".join(t for t in texts if t) or None
        view = self._views.get(self.session(request.runtime))
        return request.override(
            messages=view.to_langchain(parts.messages, request.messages),  # type: ignore[arg-type]
            system_message=system_message(request.system_message, summary),
        )

    def _context_options(self, request: ModelRequest[Any]) -> tuple[dict[str, Any], list[str]]:
        """``context()`` options for ``request`` and the system texts kept in its state."""
        in_state = self._views.get(self.session(request.runtime)).system_texts(request.messages)
        texts = [request.system_prompt] if request.system_prompt else []
        system = "\n\n".join([*texts, *in_state]) or None
        return {"system": system, "tools": self._tools(request.tools),
                "max_tokens": self.max_tokens}, in_state

    # -- hooks -------------------------------------------------------------------------------
    # Two graph nodes, not three: the model's reply is stored (and its reported usage
    # recorded) by the next step's before_model, or at the end of the run by after_agent,
    # in one append with the tool results that follow it. An after_model node would cost
    # every model call a graph step and a store round trip of its own.

    def before_model(self, state: ContextFoldState, runtime: Any) -> dict[str, Any] | None:
        return self._sync(state, runtime)

    async def abefore_model(self, state: ContextFoldState, runtime: Any
                            ) -> dict[str, Any] | None:
        return await self._async_sync(state, runtime)

    def after_agent(self, state: ContextFoldState, runtime: Any) -> dict[str, Any] | None:
        return self._sync(state, runtime)

    async def aafter_agent(self, state: ContextFoldState, runtime: Any
                           ) -> dict[str, Any] | None:
        return await self._async_sync(state, runtime)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        options, in_state = self._context_options(request)
        context = self.bridge.context(self.session(request.runtime), **options)
        return handler(self._request(request, context, in_state))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        options, in_state = self._context_options(request)
        context = await self.bridge.acontext(self.session(request.runtime), **options)
        return await handler(self._request(request, context, in_state))
