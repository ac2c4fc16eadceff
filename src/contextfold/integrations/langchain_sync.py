"""Keeping contextfold in step with a LangGraph state's messages (shared by the LangChain
middleware and the LangGraph helper). Needs ``langchain-core`` (the ``langchain`` extra).

Per session, in process: the id of the newest state message already stored (the
*watermark*: a step converts and appends only what follows it), a model reply that calls
tools, held until its results arrive so both are stored in one append, the summary version
the state was last trimmed against, and the session's :class:`LangChainView`. All of it is
a cache: a new process, or a session dropped beyond ``size``, re-offers the whole state
once and the store drops the messages it already holds (by id).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import Any

try:
    from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
    from langgraph.config import get_config
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_extra

    raise missing_extra("LangChain", "langchain", exc) from exc

from ..bounded import LRU
from ..messages import Message
from .bridge import MemoryBridge
from .langchain_messages import LangChainView, from_langchain, message_id

__all__ = ["SessionState", "SessionSync", "SyncPlan", "plan_sync", "removals", "thread_id"]


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


def removals(state_messages: Sequence[BaseMessage], live: Sequence[Any]) -> list[str]:
    """Ids of the state messages contextfold no longer holds live (folded), system
    messages excepted: they are the prompt, never stored, so never folded."""
    live_ids = {m.message.id for m in live}
    return [mid for i, m in enumerate(state_messages)
            if m.id and not isinstance(m, SystemMessage)
            and (mid := message_id(m, i)) not in live_ids]


def input_tokens(message: BaseMessage | None) -> int | None:
    """The input tokens a provider reported on ``message`` (None if it reported none)."""
    usage = message.usage_metadata if isinstance(message, AIMessage) else None
    value = usage.get("input_tokens") if usage else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class SessionState:
    """One session's bookkeeping (see the module docstring)."""

    __slots__ = ("held", "synced", "system", "trimmed", "view")

    def __init__(self) -> None:
        self.synced: str | None = None
        self.held: tuple[Message, int | None] | None = None
        self.trimmed = 0
        self.view = LangChainView()
        #: the last system message handed to the model: (the request's, summary, merged)
        self.system: tuple[Any, str | None, Any] | None = None


class SessionSync:
    """Appends a state's new messages and the model's replies to one memory, per session.

    :meth:`sync` appends the state messages after the session's watermark (with a reply
    held by :meth:`record` first, if the state does not carry it) and records the held
    reply's reported usage; :meth:`record` stores a final answer at once and holds a reply
    that calls tools until the next :meth:`sync` (one store round trip per model call, not
    two). Each has an ``a``-prefixed async twin."""

    def __init__(self, bridge: MemoryBridge, *, record_usage: bool = True,
                 size: int = 1024) -> None:
        self.bridge = bridge
        self.record_usage = record_usage
        self._sessions: LRU[str, SessionState] = LRU(size)
        self._lock = threading.Lock()

    def get(self, session_id: str) -> SessionState:
        """The session's state (a new one for a session not seen, or dropped)."""
        with self._lock:
            state = self._sessions.get(session_id)
            if state is None:
                state = SessionState()
                self._sessions.put(session_id, state)
            return state

    # -- planning (no I/O) --------------------------------------------------------------------

    def _plan(self, state: SessionState, state_messages: Sequence[BaseMessage]
              ) -> tuple[list[Message], int | None, str | None]:
        plan = plan_sync(state_messages, state.synced)
        new = plan.messages
        held, state.held = state.held, None
        if held is not None and all(m.id != held[0].id for m in new):
            new = [held[0], *new]
        return new, held[1] if held is not None else None, plan.watermark

    def _hold(self, state: SessionState, response: BaseMessage
              ) -> tuple[list[Message], int | None]:
        if not response.id:
            response.id = f"lc-{uuid.uuid4()}"  # so the state's copy is recognised later
        converted = from_langchain(response)
        tokens = input_tokens(response) if self.record_usage else None
        held, state.held = state.held, None  # two replies without a sync between them
        out = [held[0]] if held is not None else []
        if converted is not None and converted.tool_calls:
            # the state will carry it next: the next sync starts after it (its results)
            state.held = (converted, tokens)
            state.synced = converted.id
            return out, held[1] if held is not None else None
        if converted is not None:
            out.append(converted)
        return out, tokens if tokens is not None or held is None else held[1]

    # -- sync front ---------------------------------------------------------------------------

    def sync(self, session_id: str, state_messages: Sequence[BaseMessage]) -> SessionState:
        """Append the state's new messages; returns the session's state."""
        state = self.get(session_id)
        new, tokens, watermark = self._plan(state, state_messages)
        if new:
            self.bridge.add(session_id, new)
        if tokens is not None:
            self.bridge.record_usage(session_id, tokens)
        state.synced = watermark
        return state

    def record(self, session_id: str, response: BaseMessage,
               state: SessionState | None = None) -> None:
        """Store the model's reply (a final answer now, one calling tools with its
        results) and feed its reported input tokens to ``record_usage``. A reply without
        an id gets one. ``state``: the session's, if the caller holds it."""
        state = state or self.get(session_id)
        new, tokens = self._hold(state, response)
        if new:
            self.bridge.add(session_id, new)
            state.synced = new[-1].id
        if tokens is not None:
            self.bridge.record_usage(session_id, tokens)

    # -- async front --------------------------------------------------------------------------

    async def async_sync(self, session_id: str, state_messages: Sequence[BaseMessage]
                         ) -> SessionState:
        state = self.get(session_id)
        new, tokens, watermark = self._plan(state, state_messages)
        if new:
            await self.bridge.aadd(session_id, new)
        if tokens is not None:
            await self.bridge.arecord_usage(session_id, tokens)
        state.synced = watermark
        return state

    async def arecord(self, session_id: str, response: BaseMessage,
                      state: SessionState | None = None) -> None:
        state = state or self.get(session_id)
        new, tokens = self._hold(state, response)
        if new:
            await self.bridge.aadd(session_id, new)
            state.synced = new[-1].id
        if tokens is not None:
            await self.bridge.arecord_usage(session_id, tokens)
