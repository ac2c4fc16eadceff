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
from contextfold.testing import ConcatSummarizer, check_invariant


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
