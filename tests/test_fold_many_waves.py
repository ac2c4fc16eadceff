"""``fold_many`` takes sessions in waves: one lease claim, one snapshot read and one
release per wave; a session another process holds is skipped, the rest fold."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from contextfold import AsyncMemory, MessageCount
from contextfold.stores import MemoryStore
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.base import SummaryResult
from contextfold.testing import ConcatSummarizer, FunctionSummarizer, check_invariant


class Counting:
    """Wraps a store and counts the calls ``fold_many`` makes."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args, **kwargs)

        return counted


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_fold_many_in_waves(kind: str, tmp_path: Path) -> None:
    async def main() -> None:
        inner = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "w.db")
        store = Counting(inner)
        memory = AsyncMemory(store, fold="manual", policy=MessageCount(3),  # type: ignore[arg-type]
                             summarizer=ConcatSummarizer())
        sids = [f"s{i}" for i in range(7)]
        for sid in sids:
            for i in range(6):
                await memory.add(sid, {"role": "user", "content": f"{sid} note {i}"})
        held = await inner.claim("s3", "someone-else", lease_seconds=30)
        assert held is not None
        store.calls.clear()
        batch = await memory.fold_many([*sids, "ghost"], concurrency=3)
        status = {s: o.status for s, o in batch.outcomes.items()}
        assert status.pop("s3") == "skipped"
        assert "another process" in batch.outcomes["s3"].reason
        assert status.pop("ghost") == "skipped"
        assert set(status.values()) == {"committed"}
        waves = 3  # 8 sessions, 3 per wave
        assert store.calls["claim_many"] == waves
        assert store.calls["snapshots"] == waves
        assert store.calls["release_many"] == waves
        assert "snapshot" not in store.calls and "claim" not in store.calls
        for sid in sids:
            await check_invariant(inner, sid)
        # every lease the batch took is released: another folder may take them now
        again = await inner.claim_many(sids, "next", lease_seconds=30)
        assert sorted(x.session_id for x in again) == [s for s in sids if s != "s3"]
        await memory.close()

    asyncio.run(main())


class SlowCommits(Counting):
    """A store whose fold commits take a while (a database under load)."""

    def __init__(self, store: Any, delay: float) -> None:
        super().__init__(store)
        self.delay = delay
        self.committing = 0
        self.commits_done = 0

    async def commit_fold(self, *args: Any, **kwargs: Any) -> Any:
        self.committing += 1
        try:
            await asyncio.sleep(self.delay)
            return await self._store.commit_fold(*args, **kwargs)
        finally:
            self.committing -= 1
            self.commits_done += 1


def test_fold_many_slot_bounds_summarizer_calls_not_commits() -> None:
    """``concurrency`` bounds summarizer calls in flight: a fold's slot is free once its
    summarizer has answered (or failed), so the next call does not wait for the commit."""

    async def main() -> None:
        store = SlowCommits(MemoryStore(), delay=0.05)
        running = peak = 0
        started_while_committing = 0

        async def summarize(request: Any) -> Any:
            nonlocal running, peak, started_while_committing
            running += 1
            peak = max(peak, running)
            if store.committing:
                started_while_committing += 1
            try:
                await asyncio.sleep(0.01)
                if request.session_id == "s2":
                    raise RuntimeError("provider down")
                return SummaryResult("ok", calls=1)
            finally:
                running -= 1

        memory = AsyncMemory(store, fold="manual", policy=MessageCount(3),  # type: ignore[arg-type]
                             summarizer=FunctionSummarizer(summarize))
        sids = [f"s{i}" for i in range(8)]
        for sid in sids:
            for i in range(6):
                await memory.add(sid, {"role": "user", "content": f"{sid} note {i}"})
        batch = await memory.fold_many(sids, concurrency=1)
        assert peak == 1
        assert started_while_committing > 0  # the slot was not held through the commit
        assert batch.failed == ["s2"]
        assert sorted(s for s, o in batch.outcomes.items() if o.status == "committed") == [
            s for s in sids if s != "s2"
        ]
        for sid in sids:
            await check_invariant(store._store, sid)
        await memory.close()

    asyncio.run(main())
