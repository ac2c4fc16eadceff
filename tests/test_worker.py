"""Deferred folding and the fold worker, in process (memory and SQLite stores)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from contextfold.errors import ConfigError, SummarizationError
from contextfold.memory import AsyncMemory
from contextfold.policy import Idle, MessageCount
from contextfold.stores import MemoryStore
from contextfold.stores.base import Store
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.base import SummaryRequest
from contextfold.testing import ConcatSummarizer, FunctionSummarizer, check_invariant
from contextfold.worker import Worker

POLICY = MessageCount(max_messages=4, keep_last=1)


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    if request.param == "memory":
        shared = MemoryStore()
        return lambda: shared
    return lambda: SQLiteStore(tmp_path / "w.db")


def _memory(store: Store, **kw: object) -> AsyncMemory:
    kw.setdefault("policy", POLICY)
    return AsyncMemory(store, **kw)  # type: ignore[arg-type]


async def _fill(memory: AsyncMemory, sid: str, n: int) -> None:
    for i in range(n):
        result = await memory.add(sid, {"role": "user", "content": f"{sid} says {i}"})
        assert result.fold is None


def test_deferred_add_marks_due_and_worker_folds(make_store: Callable[[], Store]) -> None:
    async def main() -> None:
        app = _memory(make_store(), fold="deferred")
        await _fill(app, "a", 6)
        await _fill(app, "b", 3)  # under the policy: never due
        stats = await app.stats("a")
        assert stats is not None and stats.through_seq == 0  # add did not fold
        assert [sid for sid, _ in await app.store.list_due()] == ["a"]

        worker_mem = _memory(make_store(), summarizer=ConcatSummarizer())
        worker = Worker(worker_mem, owner="w1", concurrency=2)
        totals = await worker.run(once=True)
        assert (totals.claimed, totals.committed, totals.released) == (1, 1, 1)
        stats = await app.stats("a")
        assert stats is not None and stats.through_seq == 5 and stats.live_count == 1
        (row,) = await app.ledger("a")
        assert (row.outcome, row.owner, row.lease_token) == ("committed", "w1", 1)
        assert await app.store.list_due() == []
        await check_invariant(app.store, "a")
        await app.close()
        await worker_mem.close()

    asyncio.run(main())


def test_idle_policy_marks_due_in_the_future() -> None:
    async def main() -> None:
        store = MemoryStore()
        app = AsyncMemory(store, fold="deferred", policy=Idle(fold_after=3600))
        await app.add("s", {"role": "user", "content": "hello"})
        stats = await app.stats("s")
        assert stats is not None and stats.last_activity is not None
        assert await store.list_due() == [("s", stats.last_activity + timedelta(hours=1))]
        assert (await Worker(app).run(once=True)).claimed == 0  # nothing due yet

    asyncio.run(main())


def test_failed_fold_is_retried_later(make_store: Callable[[], Store]) -> None:
    async def main() -> None:
        store = make_store()
        app = _memory(store, fold="deferred",
                      summarizer=ConcatSummarizer(fail_with=SummarizationError("model down")))
        await _fill(app, "a", 6)
        totals = await Worker(app, owner="w1", retry_after=600).run(once=True)
        assert (totals.failed, totals.committed) == (1, 0)
        ((sid, due),) = await store.list_due()
        assert sid == "a" and due > datetime.now(timezone.utc) + timedelta(minutes=9)
        (row,) = await app.ledger("a")
        assert (row.outcome, row.owner, row.error_class) == ("failed", "w1", "SummarizationError")
        assert (await app.stats("a")).through_seq == 0  # type: ignore[union-attr]
        await app.close()

    asyncio.run(main())


def test_stop_without_grace_releases_in_flight_sessions(make_store: Callable[[], Store]) -> None:
    async def main() -> None:
        store = make_store()
        app = _memory(store, fold="deferred", summarizer=ConcatSummarizer(delay=30))
        await _fill(app, "a", 6)
        worker = Worker(app, owner="w1", grace_seconds=0)
        running = asyncio.create_task(worker.run())
        while worker.stats.claimed == 0:
            await asyncio.sleep(0.01)
        worker.stop()
        totals = await asyncio.wait_for(running, 5)
        assert (totals.cancelled, totals.released) == (1, 1)
        (lease,) = await store.claim_due("w2", limit=5, lease_seconds=30)
        assert (lease.session_id, lease.token) == ("a", 2)
        await app.close()

    asyncio.run(main())


def test_graceful_stop_lets_in_flight_folds_commit(make_store: Callable[[], Store]) -> None:
    async def main() -> None:
        store = make_store()
        app = _memory(store, fold="deferred", summarizer=ConcatSummarizer(delay=0.3))
        await _fill(app, "a", 6)
        worker = Worker(app, owner="w1", grace_seconds=10)
        running = asyncio.create_task(worker.run())
        while worker.stats.claimed == 0:
            await asyncio.sleep(0.01)
        worker.stop()
        totals = await asyncio.wait_for(running, 5)
        assert (totals.committed, totals.cancelled) == (1, 0)
        assert await store.list_due() == []
        await app.close()

    asyncio.run(main())


def test_long_fold_keeps_its_lease_by_renewing(make_store: Callable[[], Store]) -> None:
    async def main() -> None:
        store = make_store()
        app = _memory(store, fold="deferred", summarizer=ConcatSummarizer(delay=1.0))
        await _fill(app, "a", 6)
        totals = await Worker(app, owner="w1", lease_seconds=0.3).run(once=True)
        assert (totals.committed, totals.conflicts, totals.lost) == (1, 0, 0)
        await app.close()

    asyncio.run(main())


def _stalling_summarizer(seconds: float) -> FunctionSummarizer:
    def summarize(request: SummaryRequest) -> str:
        time.sleep(seconds)  # blocks the event loop: no heartbeat can run
        return "a summary"

    return FunctionSummarizer(summarize)


def test_fold_of_a_stalled_worker_is_fenced_off(make_store: Callable[[], Store]) -> None:
    async def main() -> None:
        store = make_store()
        slow = _memory(store, fold="deferred", summarizer=_stalling_summarizer(0.5))
        await _fill(slow, "a", 6)
        totals = await Worker(slow, owner="slow", lease_seconds=0.2).run(once=True)
        assert (totals.conflicts, totals.committed, totals.lost) == (1, 0, 0)
        (row,) = await slow.ledger("a")
        assert row.outcome == "conflict" and "fenced" in (row.error or "")
        assert (await slow.stats("a")).through_seq == 0  # type: ignore[union-attr]
        ((_, due),) = await store.list_due()  # retried after retry_after, not in a hot loop
        assert due > datetime.now(timezone.utc) + timedelta(seconds=20)
        await store.mark_due("a", datetime.now(timezone.utc), as_of_seq=6)
        fast = _memory(store, summarizer=ConcatSummarizer())
        assert (await Worker(fast, owner="fast").run(once=True)).committed == 1
        await slow.close()

    asyncio.run(main())


def test_fold_that_raises_a_bug_releases_its_session_for_a_retry(
    make_store: Callable[[], Store], caplog: pytest.LogCaptureFixture
) -> None:
    """An exception that is no ContextFoldError (a bug in a fold's code path) used to end
    the worker's task silently with the session still leased: no worker could fold it
    until the lease expired. Now it is logged with its traceback, counted as failed, and
    the lease released with the session due again after ``retry_after``."""

    async def main() -> None:
        store = make_store()
        app = _memory(store, fold="deferred", summarizer=ConcatSummarizer())
        await _fill(app, "a", 6)
        calls = 0

        async def memory_for(sid: str) -> AsyncMemory:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("boom")
            return app

        worker = Worker(app, owner="w1", retry_after=600, lease_seconds=600,
                        memory_for=memory_for)
        totals = await asyncio.wait_for(worker.run(once=True), 10)
        assert (totals.claimed, totals.failed, totals.released) == (1, 1, 1)
        assert "RuntimeError: boom" in caplog.text
        ((sid, due),) = await store.list_due()
        assert sid == "a" and due > datetime.now(timezone.utc) + timedelta(minutes=9)
        # the lease is free at once, not in 600 s: due again, any worker folds it
        await store.mark_due("a", datetime.now(timezone.utc), as_of_seq=6)
        again = await asyncio.wait_for(
            Worker(app, owner="w2", memory_for=memory_for).run(once=True), 10)
        assert (again.claimed, again.committed) == (1, 1)
        assert (await app.stats("a")).through_seq == 5  # type: ignore[union-attr]
        await app.close()

    asyncio.run(main())


def test_bad_worker_settings_are_config_errors() -> None:
    app = AsyncMemory(MemoryStore())
    for kw in ({"concurrency": 0}, {"lease_seconds": 0}, {"retry_after": -1}):
        with pytest.raises(ConfigError):
            Worker(app, **kw)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="deferred"):
        AsyncMemory(MemoryStore(), fold="later")  # type: ignore[arg-type]


def test_sqlite_file_from_before_leases_is_migrated(tmp_path: Path) -> None:
    import sqlite3

    from contextfold.stores.sqlite import MIGRATIONS

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0][2])
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                 "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    conn.execute("INSERT INTO schema_migrations VALUES (1, 'initial schema', '2026-01-01')")
    conn.commit()
    conn.close()

    async def main() -> None:
        app = _memory(SQLiteStore(path), fold="deferred", summarizer=ConcatSummarizer())
        await _fill(app, "a", 6)
        assert (await Worker(app).run(once=True)).committed == 1
        await app.close()

    asyncio.run(main())
    rows = sqlite3.connect(path).execute("SELECT version FROM schema_migrations ORDER BY 1")
    versions = [r[0] for r in rows]
    assert versions == [v for v, _, _ in MIGRATIONS]


def test_reported_usage_over_the_limit_marks_due_in_deferred_mode() -> None:
    from contextfold.policy import ReportedUsage

    async def main() -> None:
        store = MemoryStore()
        app = AsyncMemory(store, fold="deferred", policy=ReportedUsage(1000))
        await app.add("s", {"role": "user", "content": "hi"},
                      {"role": "assistant", "content": "yo"}, {"role": "user", "content": "more"})
        assert await store.list_due() == []
        assert await app.record_usage("s", 5000) is None  # deferred: no fold here
        assert [sid for sid, _ in await store.list_due()] == ["s"]

    asyncio.run(main())
