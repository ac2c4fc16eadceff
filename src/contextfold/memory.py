"""Bounded conversation memory: :class:`Memory` (sync) and :class:`AsyncMemory` (async).

:class:`AsyncMemory` (in :mod:`contextfold.engine`) is the core. :class:`Memory` is the
synchronous front: it drives the very same coroutines in the caller's thread
(:func:`contextfold.inline.run_inline`; the stores do their I/O synchronously while it
does), so there is one implementation of every step, no hand-copied twin and no thread
hop per call. What truly needs an event loop (an LLM summarizer's HTTP call,
``fold_many``'s concurrency) runs on a private loop thread started on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from .context import Context
from .engine import AsyncMemory, MessageLike, error_text
from .errors import ConfigError
from .inline import LoopThread, run_inline
from .messages import StoredMessage
from .outcomes import AddResult, BatchResult, FoldOutcome, Usage
from .policy import SessionStats
from .stores.base import LedgerEntry, SearchHit, Store, Summary

__all__ = [
    "AddResult",
    "AsyncMemory",
    "BatchResult",
    "FoldOutcome",
    "Memory",
    "Usage",
    "error_text",
]

T = TypeVar("T")


class Memory:
    """Bounded conversation memory, synchronous. Same arguments and methods as
    :class:`AsyncMemory`, whose steps it runs in the calling thread.

    Works inside a running event loop too (Jupyter): a call blocks that loop for its
    duration, like any synchronous call; use ``AsyncMemory`` to keep the loop free.
    One ``Memory`` may be shared by threads: stores serialise their own I/O.
    """

    def __init__(self, store: Store | str | None = None, **options: Any) -> None:
        self._loop = LoopThread()
        self._closed = False
        self._async: AsyncMemory = AsyncMemory(store, **options)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise ConfigError("this Memory is closed")
        return run_inline(coro, self._loop)

    @property
    def engine(self) -> AsyncMemory:
        """The async engine underneath (for its configuration)."""
        return self._async

    @property
    def store(self) -> Store:
        return self._async.store

    def add(self, session_id: str, *messages: MessageLike) -> AddResult:
        return self._run(self._async.add(session_id, *messages))

    def record_usage(self, session_id: str, input_tokens: int) -> FoldOutcome | None:
        return self._run(self._async.record_usage(session_id, input_tokens))

    def fold(self, session_id: str, *, force: bool = False, key: str | None = None) -> FoldOutcome:
        return self._run(self._async.fold(session_id, force=force, key=key))

    def fold_many(
        self,
        session_ids: Iterable[str],
        *,
        concurrency: int = 8,
        force: bool = False,
        key: Callable[[str], str] | None = None,
    ) -> BatchResult:
        """Concurrent folds need an event loop: the batch runs on the private loop thread
        (one hop per batch)."""
        if self._closed:
            raise ConfigError("this Memory is closed")
        return self._loop.run(
            self._async.fold_many(session_ids, concurrency=concurrency, force=force, key=key)
        )

    def context(
        self,
        session_id: str,
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        query: str | None = None,
    ) -> Context:
        return self._run(self._async.context(
            session_id, system=system, max_tokens=max_tokens, tools=tools, query=query))

    def summary(self, session_id: str) -> Summary | None:
        return self._run(self._async.summary(session_id))

    def messages(self, session_id: str, *, include_folded: bool = True) -> list[StoredMessage]:
        return self._run(self._async.messages(session_id, include_folded=include_folded))

    def search(
        self,
        session_id: str,
        query: str | Sequence[str],
        *,
        limit: int = 20,
        folded: bool | None = None,
        min_matched: int = 1,
    ) -> list[SearchHit]:
        return self._run(self._async.search(
            session_id, query, limit=limit, folded=folded, min_matched=min_matched))

    def stats(self, session_id: str) -> SessionStats | None:
        return self._run(self._async.stats(session_id))

    def sessions(self, *, limit: int | None = 100, offset: int = 0) -> list[SessionStats]:
        return self._run(self._async.sessions(limit=limit, offset=offset))

    def ledger(
        self, session_id: str | None = None, *, limit: int | None = 100
    ) -> list[LedgerEntry]:
        return self._run(self._async.ledger(session_id, limit=limit))

    def usage(self, session_id: str | None = None) -> Usage:
        return self._run(self._async.usage(session_id))

    def delete(self, session_id: str) -> bool:
        return self._run(self._async.delete(session_id))

    def restore(self, session_id: str, text: str) -> str:
        return self._run(self._async.restore(session_id, text))

    def close(self) -> None:
        if not self._closed:
            try:
                self._run(self._async.close())
            finally:
                self._closed = True
                self._loop.stop()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass
