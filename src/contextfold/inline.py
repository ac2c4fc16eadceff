"""Running an engine step inline: one coroutine, driven by an event loop or by the caller.

Every engine step (``AsyncMemory.add``, ``context``, ``fold`` …) is one ``async def``.
``AsyncMemory`` awaits it on the caller's event loop. The synchronous ``Memory`` drives
the *same* coroutine in the caller's own thread with :func:`run_inline`: it marks the
call as inline (a context variable) and sends into the coroutine once. While that mark is
set, every store does its I/O synchronously right where it is awaited (SQLite on its
writer connection under its lock, PostgreSQL on a synchronous psycopg connection, the
memory store never waits at all), so no ``await`` in the step ever suspends and the
coroutine finishes on that first send. This is psycopg 3's idea — one body of logic, a
sync or an async waiter underneath — applied at the store boundary.

What cannot run without an event loop (an LLM summarizer's HTTP call, ``fold_many``'s
concurrency) is handed to the :class:`LoopThread` of the ``Memory`` with
:func:`run_elsewhere`: one thread hop per summarizer call or per batch, never per turn.

A step that suspends anyway while inline is a bug in a store; :func:`run_inline` closes
it and raises ``RuntimeError`` rather than block or lose work.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Generator
from contextvars import ContextVar
from typing import Any, Generic, TypeVar, cast

__all__ = ["LoopThread", "Ready", "inline", "run_elsewhere", "run_inline"]

T = TypeVar("T")


class LoopThread:
    """A private event loop on a daemon thread, started on first use; runs the coroutines
    an inline step cannot run itself. Usable from any thread, including one whose own
    event loop is running (Jupyter): the caller blocks until the coroutine is done."""

    def __init__(self, name: str = "contextfold-loop") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name=self._name, daemon=True
                )
                self._thread.start()
            loop = self._loop
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run called from its own thread")
        token = _INLINE.set(None)  # what runs on the loop is async, not inline
        try:
            return asyncio.run_coroutine_threadsafe(coro, loop).result()
        finally:
            _INLINE.reset(token)

    def stop(self) -> None:
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()


_INLINE: ContextVar[LoopThread | None] = ContextVar("contextfold_inline", default=None)


def inline() -> bool:
    """True while a step runs inline (stores must then do their I/O synchronously)."""
    return _INLINE.get() is not None


def run_inline(coro: Coroutine[Any, Any, T], loop: LoopThread) -> T:
    """Run ``coro`` to completion in this thread, its store I/O done synchronously.
    ``loop`` runs what cannot be done inline (see :func:`run_elsewhere`)."""
    token = _INLINE.set(loop)
    try:
        coro.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    finally:
        _INLINE.reset(token)
    coro.close()
    raise RuntimeError("an inline contextfold step suspended; a store awaited real I/O")


async def run_elsewhere(make: Coroutine[Any, Any, T]) -> T:
    """Await ``make``: on the caller's loop normally; when inline, on the ``Memory``'s
    loop thread (blocking this thread, which is the sync caller's)."""
    loop = _INLINE.get()
    if loop is None:
        return await make
    return loop.run(make)


class Ready(Generic[T]):
    """An awaitable that is already done: ``await Ready(x)`` is ``x`` without suspending.
    The synchronous stand-in for a driver's awaitable while a step runs inline."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, Any, T]:
        return self.value
        yield  # pragma: no cover - makes this a generator that never suspends
