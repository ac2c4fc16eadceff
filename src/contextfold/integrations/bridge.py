"""What every adapter shares: calling a ``Memory`` or ``AsyncMemory`` from sync or async
framework hooks, stable message ids, and splitting a context into its system text, summary
and conversation.

Frameworks call their hooks sync or async depending on how the user runs the agent
(``invoke`` / ``ainvoke``). :class:`MemoryBridge` accepts either front: a sync
:class:`~contextfold.Memory` serves both (async hooks run its calls in a worker thread so
the event loop never blocks); an :class:`~contextfold.AsyncMemory` serves async hooks only,
and a sync hook fails loudly naming the class to use instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..context import SUMMARY_HEADER, Context
from ..errors import ConfigError
from ..memory import AddResult, AsyncMemory, FoldOutcome, Memory
from ..messages import Message

__all__ = ["ContextParts", "MemoryBridge", "missing_extra", "split_context", "stable_id"]

T = TypeVar("T")


def missing_extra(framework: str, extra: str, exc: ImportError) -> ImportError:
    """The ImportError an adapter raises when its framework is not installed."""
    err = ImportError(
        f"contextfold's {framework} adapter needs {framework}: "
        f'pip install "contextfold[{extra}]" ({exc})'
    )
    err.__cause__ = exc
    return err


def stable_id(prefix: str, *parts: object) -> str:
    """A deterministic message id from JSON-able ``parts`` (for frameworks whose messages
    carry none): the same message always gets the same id, in any process."""
    raw = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return f"{prefix}-{hashlib.sha256(raw.encode('utf-8')).hexdigest()[:32]}"


class MemoryBridge:
    """Sync and async access to one ``Memory`` or ``AsyncMemory``."""

    def __init__(self, memory: Memory | AsyncMemory, adapter: str) -> None:
        if not isinstance(memory, (Memory, AsyncMemory)):
            raise ConfigError(
                f"{adapter} needs a contextfold Memory or AsyncMemory, got {type(memory).__name__}"
            )
        self.memory = memory
        self.adapter = adapter

    # -- plumbing ----------------------------------------------------------------------------

    def _sync(self, name: str) -> Callable[..., Any]:
        if isinstance(self.memory, AsyncMemory):
            raise ConfigError(
                f"{self.adapter} was given an AsyncMemory but is being called synchronously "
                f"({name}); pass contextfold.Memory for sync runs (invoke/run_sync), or run "
                "the agent asynchronously (ainvoke/run)"
            )
        return getattr(self.memory, name)  # type: ignore[no-any-return]

    async def _async(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if isinstance(self.memory, AsyncMemory):
            return await getattr(self.memory, name)(*args, **kwargs)
        return await asyncio.to_thread(getattr(self.memory, name), *args, **kwargs)

    # -- the calls adapters make -------------------------------------------------------------

    def add(self, session_id: str, messages: Sequence[Message]) -> AddResult:
        return self._sync("add")(session_id, *messages)  # type: ignore[no-any-return]

    async def aadd(self, session_id: str, messages: Sequence[Message]) -> AddResult:
        return await self._async("add", session_id, *messages)  # type: ignore[no-any-return]

    def context(
        self,
        session_id: str,
        *,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> Context:
        fn = self._sync("context")
        return fn(session_id, system=system, tools=tools, max_tokens=max_tokens)  # type: ignore[no-any-return]

    async def acontext(
        self,
        session_id: str,
        *,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> Context:
        return await self._async(  # type: ignore[no-any-return]
            "context", session_id, system=system, tools=tools, max_tokens=max_tokens
        )

    def record_usage(self, session_id: str, input_tokens: int) -> FoldOutcome | None:
        return self._sync("record_usage")(session_id, input_tokens)  # type: ignore[no-any-return]

    async def arecord_usage(self, session_id: str, input_tokens: int) -> FoldOutcome | None:
        return await self._async("record_usage", session_id, input_tokens)  # type: ignore[no-any-return]

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Any other ``Memory`` method, synchronously."""
        return self._sync(name)(*args, **kwargs)

    async def acall(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Any other ``Memory`` method, asynchronously."""
        return await self._async(name, *args, **kwargs)


@dataclass(frozen=True)
class ContextParts:
    """A context taken apart for frameworks that carry system text outside the message
    list: the leading system prompt(s), the rendered summary block (``None`` before the
    first fold) and the conversation that follows (bridge turn, live messages)."""

    system: tuple[str, ...]
    summary: str | None
    messages: tuple[Message, ...]
    context: Context

    @property
    def system_text(self) -> str | None:
        """System prompt(s) and summary block as one system text (None if neither)."""
        texts = [*self.system, *([self.summary] if self.summary else [])]
        return "\n\n".join(texts) if texts else None


def split_context(context: Context) -> ContextParts:
    """Split ``context`` at its first non-system message."""
    msgs = context.messages
    system: list[str] = []
    summary: str | None = None
    n = 0
    for message in msgs:
        if message.role != "system":
            break
        n += 1
        text = message.text
        if summary is None and text.startswith(SUMMARY_HEADER):
            summary = text
        else:
            system.append(text)
    return ContextParts(tuple(system), summary, tuple(msgs[n:]) if n else tuple(msgs), context)
