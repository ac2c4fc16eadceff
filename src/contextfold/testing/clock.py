"""A fake clock for tests of timers: time moves only when the test says so.

``FakeClock.now`` goes where a clock callable goes (``AsyncMemory(clock=fake.now)``),
``FakeClock.sleep`` where an async sleep goes (``IdleScheduler(memory, sleep=fake.sleep)``):
a sleeper wakes when :meth:`FakeClock.advance` moves the time past its deadline.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

__all__ = ["FakeClock"]


class FakeClock:
    """Time that stands still until :meth:`advance`. Starts at ``start`` (aware UTC)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2025, 1, 1, 9, 0, tzinfo=timezone.utc)
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> datetime:
        """Move time forward and wake every sleeper whose deadline has come."""
        if seconds < 0:
            raise ValueError(f"time only moves forward, got {seconds!r}")
        self._now += timedelta(seconds=seconds)
        waiting = []
        for deadline, fut in self._sleepers:
            if fut.done():
                continue
            if deadline <= self._now:
                fut.set_result(None)
            else:
                waiting.append((deadline, fut))
        self._sleepers = waiting
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Return once the clock has been advanced by ``seconds`` (at once if <= 0)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now + timedelta(seconds=seconds), fut))
        await fut

    @property
    def sleepers(self) -> int:
        """How many coroutines are sleeping on this clock now."""
        return sum(not f.done() for _, f in self._sleepers)
