"""With deferred folds, an add that makes its session due is one write transaction: the
store writes the due mark (as of the append's last seq) in the append's own transaction."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from contextfold import AsyncMemory
from contextfold.policy import MessageCount, SessionStats
from contextfold.stores import MemoryStore
from contextfold.stores.base import AppendResult, PreparedMessage, appends_due
from contextfold.stores.sqlite import SQLiteStore
from contextfold.testing import ConcatSummarizer
from contextfold.worker import Worker

POLICY = MessageCount(max_messages=3, keep_last=1)


class CountingSQLite(SQLiteStore):
    """Counts write transactions and separate due marks."""

    writes = 0
    marks = 0

    async def _write(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        self.writes += 1
        return await super()._write(fn)

    async def mark_due(self, session_id: str, due_at: datetime | None, *, as_of_seq: int) -> None:
        self.marks += 1
        await super().mark_due(session_id, due_at, as_of_seq=as_of_seq)


class OldStyleStore(MemoryStore):
    """A store written before ``append`` took a due check."""

    marks = 0

    async def append(  # type: ignore[override]
        self, session_id: str, items: Sequence[PreparedMessage], now: datetime
    ) -> AppendResult:
        return await super().append(session_id, items, now)

    async def mark_due(self, session_id: str, due_at: datetime | None, *, as_of_seq: int) -> None:
        self.marks += 1
        await super().mark_due(session_id, due_at, as_of_seq=as_of_seq)


class BrokenPolicy:
    """A policy that fails once the session has ``fail_from`` messages."""

    def __init__(self, fail_from: int) -> None:
        self.fail_from = fail_from

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        if stats.live_count >= self.fail_from:
            raise ZeroDivisionError("the policy broke")
        return False

    def plan(self, *args: Any, **kwargs: Any) -> None:
        return None


def _due_row(path: Path, sid: str) -> tuple[Any, int]:
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "SELECT due_at, due_seq FROM sessions WHERE session_id = ?", (sid,)
        ).fetchone()
    return row[0], row[1]


def test_a_due_add_is_one_write_with_the_mark_as_of_its_last_seq(tmp_path: Path) -> None:
    async def main() -> None:
        path = tmp_path / "m.db"
        store = CountingSQLite(path)
        memory = AsyncMemory(store, fold="deferred", policy=POLICY)
        await memory.add("s", {"role": "user", "content": "warm up"})  # setup: its own write
        for n in range(2, 8):
            before = store.writes
            await memory.add("s", {"role": "user", "content": f"turn {n}"})
            assert store.writes - before == 1
            due_at, due_seq = _due_row(path, "s")
            if n <= 3:  # under the policy: no mark
                assert (due_at, due_seq) == (None, -1)  # the schema default
            else:
                assert due_at is not None and due_seq == n
        assert store.marks == 0
        worker = Worker(AsyncMemory(store, policy=POLICY, summarizer=ConcatSummarizer()))
        assert (await worker.run(once=True)).committed == 1  # the worker finds it due
        await memory.close()

    asyncio.run(main())


def test_with_masking_the_mark_is_still_written_after_the_view_has_the_messages(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        store = CountingSQLite(tmp_path / "m.db")
        memory = AsyncMemory(store, fold="deferred", policy=POLICY, masking=True)
        for n in range(1, 6):
            await memory.add("s", {"role": "user", "content": f"turn {n}"})
        assert store.marks == 2 and [s for s, _ in await store.list_due()] == ["s"]
        await memory.close()

    asyncio.run(main())


def test_a_store_without_the_due_check_gets_a_separate_mark() -> None:
    async def main() -> None:
        store = OldStyleStore()
        assert not appends_due(store) and appends_due(MemoryStore())
        memory = AsyncMemory(store, fold="deferred", policy=POLICY)  # type: ignore[arg-type]
        for n in range(1, 6):
            await memory.add("s", {"role": "user", "content": f"turn {n}"})
        assert store.marks == 2 and [s for s, _ in await store.list_due()] == ["s"]

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_policy_that_raises_stores_nothing_of_the_add(tmp_path: Path, kind: str) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "m.db") if kind == "sqlite" else MemoryStore()
        memory = AsyncMemory(store, fold="deferred", policy=BrokenPolicy(3))
        await memory.add("s", {"role": "user", "content": "one", "id": "1"},
                         {"role": "user", "content": "two", "id": "2"})
        with pytest.raises(ZeroDivisionError):
            await memory.add("s", {"role": "user", "content": "three", "id": "3"})
        assert [m.message.id for m in await memory.messages("s")] == ["1", "2"]
        assert (await memory.stats("s")).last_seq == 2  # type: ignore[union-attr]
        await memory.close()

    asyncio.run(main())
