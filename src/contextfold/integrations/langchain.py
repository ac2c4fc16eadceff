"""LangChain 1.x agents: :class:`ContextFoldMiddleware` for ``create_agent``.

::

    from langchain.agents import create_agent
    from contextfold import Memory, TokenBudget
    from contextfold.integrations.langchain import ContextFoldMiddleware

    memory = Memory("sqlite:///agent.db", policy=TokenBudget(8000))
    agent = create_agent(model, tools, middleware=[ContextFoldMiddleware(memory)],
                         checkpointer=checkpointer)
    agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})

Everything happens around the model call (``wrap_model_call``: no graph node of its own).
Before it, the state's messages new since the previous call are appended to contextfold in
one batch (by message id, so a replayed step appends nothing twice); the model receives
contextfold's context instead of the whole history — the system prompt with the summary
block appended, then the live messages, never over the budget and never splitting a tool
call from its result. After it, a final answer is stored at once; a reply that calls tools
is stored by the next call, with the tool results that follow it, in one append. The
``usage_metadata`` the provider reports feeds ``record_usage`` (for ``ReportedUsage``).
System messages kept in the state count as part of the system prompt: they are never
stored or folded, and reach the model in the system message. The session is the run's
``thread_id`` unless ``session_id`` is given. Sync (``invoke``) and async (``ainvoke``)
runs both work; an ``AsyncMemory`` serves async runs only.

Which state messages are new is kept in process (see :mod:`.langchain_sync`): after a
restart the first call re-offers the state's messages and the store drops those it already
holds. A run that ends on tool results rather than a model reply (a ``return_direct`` tool,
an interrupt) has them stored by the thread's next model call.

``trim_state`` (on by default) removes folded messages from the graph state, as LangChain's
own ``SummarizationMiddleware`` does: after a run, ``state["messages"]`` holds the messages
not folded yet (the newest ones, the run's answer last) and system messages, so checkpoints
stay bounded. Folded messages remain in contextfold (``memory.messages(thread_id,
include_folded=True)`` with the default archive retention) and their gist in the summary the
model receives. A fold costs one extra read of the live messages. ``trim_state=False`` keeps
the whole transcript in the state — for LangGraph's history and UIs — and LangGraph then
re-serialises all of it into every checkpoint, so each step costs more as the conversation
grows.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

try:
    from langchain.agents.middleware.types import (
        AgentMiddleware,
        AgentState,
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
        PrivateStateAttr,
    )
    from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.types import Command
    from typing_extensions import NotRequired
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_extra

    raise missing_extra("LangChain", "langchain", exc) from exc

from ..bounded import LRU
from ..context import Context
from ..errors import ConfigError
from ..memory import AsyncMemory, Memory
from .bridge import MemoryBridge, split_context
from .langchain_messages import system_message
from .langchain_sync import SessionState, SessionSync, SyncPlan, plan_sync, removals, thread_id

__all__ = ["ContextFoldMiddleware", "ContextFoldState", "SyncPlan", "plan_sync", "thread_id"]


class ContextFoldState(AgentState[Any]):
    """The agent state as earlier versions of the middleware kept it (their private
    bookkeeping keys are no longer written; kept so such checkpoints still load)."""

    contextfold_synced: NotRequired[Annotated[str | None, PrivateStateAttr]]
    contextfold_trimmed: NotRequired[Annotated[int | None, PrivateStateAttr]]


_SCHEMAS: LRU[int, tuple[Any, dict[str, Any] | None]] = LRU(256)
_SCHEMAS_LOCK = threading.Lock()


def tool_schema(tool: Any) -> dict[str, Any] | None:
    """``tool``'s OpenAI schema (a provider tool dict as is; None if it has none), kept
    for the most recent tools: agents built anew per run reuse their tools, and a
    schema built from a pydantic model costs milliseconds. The tool is held with its
    schema, so its ``id`` cannot be reused while cached."""
    key = id(tool)
    with _SCHEMAS_LOCK:
        hit = _SCHEMAS.get(key)
        if hit is not None and hit[0] is tool:
            return hit[1]
    schema: dict[str, Any] | None
    try:
        schema = convert_to_openai_tool(tool)
    except (TypeError, ValueError, NotImplementedError):
        schema = dict(tool) if isinstance(tool, Mapping) else None  # a provider tool dict
    if isinstance(tool, Mapping):
        return schema  # a dict may change in place: never cached
    with _SCHEMAS_LOCK:
        _SCHEMAS.put(key, (tool, schema))
    return schema


def _reply(response: ModelResponse[Any]) -> AIMessage | None:
    """The model's reply in ``response`` (its last AI message)."""
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return message
    return None


class ContextFoldMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """contextfold as the memory of a LangChain ``create_agent`` agent (see the module
    docstring). ``max_tokens``: the context budget (default: the memory policy's).
    ``trim_state``: remove folded messages from the graph state (default on).
    ``record_usage``: feed the provider-reported input tokens to ``record_usage``."""

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        session_id: str | None = None,
        *,
        max_tokens: int | None = None,
        trim_state: bool = True,
        record_usage: bool = True,
    ) -> None:
        super().__init__()
        self.bridge = MemoryBridge(memory, "ContextFoldMiddleware")
        self.session_id = session_id
        self.max_tokens = max_tokens
        self.trim_state = trim_state
        self.record_usage = record_usage
        self._tool_cache: tuple[tuple[int, ...], list[dict[str, Any]]] | None = None
        self._sessions = SessionSync(self.bridge, record_usage=record_usage)

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
            self._tool_cache = (key, [s for t in tools if (s := tool_schema(t)) is not None])
        return self._tool_cache[1]

    @staticmethod
    def _state_messages(request: ModelRequest[Any]) -> Sequence[BaseMessage]:
        state = request.state
        messages = state.get("messages") if state is not None else None
        return messages if messages is not None else request.messages

    def _context_options(self, request: ModelRequest[Any], session: SessionState
                         ) -> tuple[dict[str, Any], list[str]]:
        """``context()`` options for ``request`` and the system texts kept in its state."""
        in_state = session.view.system_texts(request.messages)
        texts = [request.system_prompt] if request.system_prompt else []
        system = "\n\n".join([*texts, *in_state]) or None
        return {"system": system, "tools": self._tools(request.tools),
                "max_tokens": self.max_tokens}, in_state

    @staticmethod
    def _request(request: ModelRequest[Any], context: Context, in_state: list[str],
                 session: SessionState) -> ModelRequest[Any]:
        parts = split_context(context)
        texts = [*in_state, parts.summary or ""]
        summary = "\n\n".join(t for t in texts if t) or None
        original = request.system_message
        cached = session.system
        if cached is None or cached[0] is not original or cached[1] != summary:
            cached = session.system = (original, summary, system_message(original, summary))
        return request.override(
            messages=session.view.to_langchain(parts.messages, request.messages),  # type: ignore[arg-type]
            system_message=cached[2],
        )

    def _trim_due(self, context: Context, session: SessionState) -> int | None:
        """The summary version to trim the state against, or None when nothing was folded
        since the last trim (a fold costs one read of the live messages, no call else)."""
        if not self.trim_state or context.summary is None:
            return None
        version = context.summary.version
        return version if version != session.trimmed else None

    @staticmethod
    def _result(response: ModelResponse[Any], gone: list[str]
                ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        if not gone:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(
            update={"messages": [RemoveMessage(id=i) for i in gone]}))

    # -- the hook ----------------------------------------------------------------------------
    # No before_model / after_model / after_agent: each would be a graph step (a checkpoint
    # write) per model call or run. The state's new messages are stored before the call,
    # the reply after it, and trimming rides on the model node's own update.

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        sid = self.session(request.runtime)
        state_messages = self._state_messages(request)
        session = self._sessions.sync(sid, state_messages)
        options, in_state = self._context_options(request, session)
        context = self.bridge.context(sid, **options)
        response = handler(self._request(request, context, in_state, session))
        reply = _reply(response)
        if reply is not None:
            self._sessions.record(sid, reply, session)
        gone: list[str] = []
        version = self._trim_due(context, session)
        if version is not None:
            live = self.bridge.call("messages", sid, include_folded=False)
            gone = removals(state_messages, live)
            session.trimmed = version
        return self._result(response, gone)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        sid = self.session(request.runtime)
        state_messages = self._state_messages(request)
        session = await self._sessions.async_sync(sid, state_messages)
        options, in_state = self._context_options(request, session)
        context = await self.bridge.acontext(sid, **options)
        response = await handler(self._request(request, context, in_state, session))
        reply = _reply(response)
        if reply is not None:
            await self._sessions.arecord(sid, reply, session)
        gone: list[str] = []
        version = self._trim_due(context, session)
        if version is not None:
            live = await self.bridge.acall("messages", sid, include_folded=False)
            gone = removals(state_messages, live)
            session.trimmed = version
        return self._result(response, gone)
