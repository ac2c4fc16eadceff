"""In-process timers for time-based policies (``Idle``): fold after idling, then clear.

:class:`IdleScheduler` keeps one due time per session — ``memory.due_at(stats)``, the
policy's own answer — in a heap, and one task that sleeps until the soonest due time (or
until :meth:`IdleScheduler.touch` reports new activity), then folds what is due through
the engine, which re-checks the policy with ``memory.clock``: a timer that fires late or
for a session that became active again does nothing. No polling, no busy loop.

Time has one source, ``memory.clock``; sleeping is the injectable ``sleep`` (default
``asyncio.sleep``). Tests pass ``FakeClock.now`` as the memory's clock and
``FakeClock.sleep`` here (see :class:`contextfold.testing.FakeClock`).

Every due time is also written to the store (``mark_due``), so the same policy can run out
of process instead: a :class:`~contextfold.worker.Worker` (``contextfold worker``) built
with the same policy claims those marks; a restarted scheduler picks them up with
:meth:`IdleScheduler.load`.

Contract: call :meth:`touch` after every activity you want to reset the timers (an ``add``);
do not call it for background or utility model calls, which must not count as activity.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from .errors import ConfigError, ContextFoldError
from .memory import AsyncMemory, FoldOutcome

__all__ = ["IdleScheduler"]

log = logging.getLogger("contextfold.idle")

Sleep = Callable[[float], Awaitable[None]]


class IdleScheduler:
    """Runs ``memory``'s timed policy for the sessions it is told about.

    ``sleep``: how to wait (seconds); default ``asyncio.sleep``. ``retry_after``: seconds
    before a failed fold is tried again. ``on_outcome``: called with every fold or clear
    the timers cause (for logs or metrics).
    """

    def __init__(
        self,
        memory: AsyncMemory,
        *,
        sleep: Sleep = asyncio.sleep,
        retry_after: float = 60.0,
        on_outcome: Callable[[FoldOutcome], None] | None = None,
    ) -> None:
        if not retry_after > 0:
            raise ConfigError(f"retry_after must be > 0 seconds, got {retry_after!r}")
        self.memory = memory
        self.retry_after = retry_after
        self.sleep = sleep
        self.on_outcome = on_outcome
        self._due: dict[str, datetime] = {}
        self._heap: list[tuple[datetime, str]] = []
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def due(self, session_id: str) -> datetime | None:
        """When the session's timer fires next (None: no timer)."""
        return self._due.get(session_id)

    async def touch(self, session_id: str) -> datetime | None:
        """Re-arm the session's timer from its current stats (call after activity);
        returns the new due time. Also marks it in the store for out-of-process workers."""
        store = await self.memory._ready()
        stats = await store.stats(session_id)
        due = self.memory.due_at(stats) if stats is not None else None
        if stats is not None:
            await store.mark_due(session_id, due, as_of_seq=stats.last_seq)
        self._arm(session_id, due)
        return due

    def _arm(self, session_id: str, due: datetime | None) -> None:
        if due is None:
            self._due.pop(session_id, None)
        else:
            self._due[session_id] = due
            heapq.heappush(self._heap, (due, session_id))
        self._changed.set()

    async def load(self) -> int:
        """Arm timers for every session the store has marked due (after a restart)."""
        store = await self.memory._ready()
        marks = await store.list_due(limit=None)
        for session_id, due in marks:
            self._arm(session_id, due)
        return len(marks)

    def _next(self) -> datetime | None:
        while self._heap:
            due, sid = self._heap[0]
            if self._due.get(sid) == due:
                return due
            heapq.heappop(self._heap)  # superseded by a later touch
        return None

    async def run_due(self) -> list[FoldOutcome]:
        """Fold (or clear) every session whose timer has fired, then re-arm each from its
        new stats. Returns the outcomes of the folds that ran."""
        now = self.memory.clock()
        ready: list[str] = []
        while (due := self._next()) is not None and due <= now:
            _, sid = heapq.heappop(self._heap)
            del self._due[sid]
            ready.append(sid)
        outcomes: list[FoldOutcome] = []
        for sid in ready:
            try:
                outcome = await self.memory.fold(sid)
            except ContextFoldError as exc:  # raise_errors=True: keep the timers going
                outcome = FoldOutcome(sid, "failed", str(exc), error=exc)
            outcomes.append(outcome)
            if outcome.status in ("committed", "cleared", "failed"):
                log.info("idle timer for %s: %s (%s)", sid, outcome.status, outcome.reason)
            if self.on_outcome is not None:
                self.on_outcome(outcome)
            if outcome.status in ("failed", "conflict"):
                self._arm(sid, self.memory.clock() + timedelta(seconds=self.retry_after))
            elif outcome.status != "cleared":
                await self.touch(sid)
        return outcomes

    async def run(self) -> None:
        """Sleep until the soonest timer or new activity, fold what is due, repeat —
        until cancelled (:meth:`stop`)."""
        while True:
            self._changed.clear()
            due = self._next()
            if due is not None:
                delay = (due - self.memory.clock()).total_seconds()
                if delay <= 0:
                    await self.run_due()
                    continue
            await self._wait(None if due is None else delay)

    async def _wait(self, delay: float | None) -> None:
        waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._changed.wait())]
        if delay is not None:
            waiters.append(asyncio.ensure_future(self.sleep(delay)))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    def start(self) -> asyncio.Task[None]:
        """Run :meth:`run` as a task on the current loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name="contextfold-idle")
        return self._task

    async def stop(self) -> None:
        """Cancel the timer task and wait for it to end."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def __aenter__(self) -> IdleScheduler:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
