"""Engine behaviour: folding, failures that change nothing, concurrency, the context view."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextfold import (
    AsyncMemory,
    ConfigError,
    ConflictError,
    Memory,
    MessageCount,
    SummarizationError,
    TokenBudget,
    ValidationError,
)
from contextfold.context import SUMMARY_HEADER
from contextfold.stores import MemoryStore
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.base import SummaryResult
from contextfold.testing import ConcatSummarizer, FunctionSummarizer, check_invariant


def turns(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} says hello"}
        for i in range(start, start + n)
    ]


def sqlite_dump(path: Path) -> list[str]:
    """Every row of every table but the ledger, as SQL text: a byte-for-byte check. The
    fold lease's epoch (``lease_token``) is left out: every fold takes the lease, so an
    attempt advances it even when it writes nothing else (which is its fencing job)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("UPDATE sessions SET lease_token = 0")  # not committed: a view only
        return [
            line
            for line in conn.iterdump()
            if 'INTO "ledger"' not in line and "sqlite_sequence" not in line
        ]
    finally:
        conn.rollback()
        conn.close()


@pytest.fixture(params=["memory", "sqlite"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    if request.param == "memory":
        shared = MemoryStore()
        return lambda: shared
    return lambda: SQLiteStore(tmp_path / "engine.db")


def test_add_folds_inline_and_keeps_every_message(store_factory: Callable[[], Any]) -> None:
    with Memory(
        store_factory(), summarizer=ConcatSummarizer(), policy=MessageCount(10, keep_last=4)
    ) as memory:
        for msg in turns(25):
            memory.add("s", msg)
        stats = memory.stats("s")
        assert stats is not None and stats.live_count <= 10 and stats.through_seq > 0
        assert len(memory.messages("s")) == 25
        assert [m.seq for m in memory.messages("s", include_folded=False)] == list(
            range(stats.through_seq + 1, 26)
        )
        ledger = memory.ledger("s")
        assert ledger and all(r.outcome == "committed" for r in ledger)
        assert memory.usage("s").messages_folded == stats.through_seq


def test_context_renders_summary_block_and_live_turns() -> None:
    with Memory(
        "memory://", summarizer=ConcatSummarizer(), policy=MessageCount(6, keep_last=2)
    ) as memory:
        for msg in turns(9):
            memory.add("s", msg)
        ctx = memory.context("s", system="You are terse.")
        assert ctx.messages[0].role == "system" and ctx.messages[0].text == "You are terse."
        assert ctx.messages[1].role == "system"
        assert ctx.messages[1].text.startswith(f"{SUMMARY_HEADER}\n")
        assert "Summary of the earlier conversation" in ctx.messages[1].text
        assert ctx.summary_included
        openai = ctx.to_openai()
        assert openai[2]["role"] in ("user", "assistant") and "timestamp" not in openai[2]


@pytest.mark.parametrize("failure", ["raise", "empty", "over_cap", "wrong_type"])
def test_summarizer_failure_leaves_session_unchanged(tmp_path: Path, failure: str) -> None:
    def bad(request: Any) -> Any:
        if failure == "raise":
            raise RuntimeError("provider exploded")
        if failure == "empty":
            return "   "
        if failure == "over_cap":
            return "word " * (request.max_tokens * 2)
        return 42

    path = tmp_path / "f.db"
    with Memory(
        str(path), summarizer=FunctionSummarizer(bad), fold="manual", policy=MessageCount(4)
    ) as memory:
        for msg in turns(8):
            memory.add("s", msg)
        before = sqlite_dump(path)
        outcome = memory.fold("s")
        assert outcome.status == "failed" and isinstance(outcome.error, SummarizationError)
        assert sqlite_dump(path) == before
        row = memory.ledger("s")[0]
        assert row.outcome == "failed" and row.error_class
        assert "provider exploded" not in (row.error or "") or failure == "raise"


def test_raise_errors_gives_summarization_error_with_cause() -> None:
    cause = RuntimeError("429 from provider")
    with Memory(
        "memory://",
        summarizer=ConcatSummarizer(fail_with=cause),
        fold="manual",
        policy=MessageCount(2),
        raise_errors=True,
    ) as memory:
        for msg in turns(4):
            memory.add("s", msg)
        with pytest.raises(SummarizationError) as info:
            memory.fold("s")
        assert info.value.__cause__ is cause
        assert memory.summary("s") is None and len(memory.messages("s", include_folded=False)) == 4


class _FailingCommitStore(SQLiteStore):
    """Fails inside the commit transaction, after the summary and cursor were updated."""

    @staticmethod
    def _insert_ledger(conn: sqlite3.Connection, entry: Any) -> int:
        if entry.outcome == "committed":
            conn.execute("INSERT INTO no_such_table VALUES (1)")  # sqlite3.OperationalError
        return SQLiteStore._insert_ledger(conn, entry)


@pytest.mark.parametrize("retention", ["archive", "delete"])
def test_commit_failing_midway_rolls_back(tmp_path: Path, retention: str) -> None:
    path = tmp_path / "c.db"
    store = _FailingCommitStore(path, retention=retention)  # type: ignore[arg-type]
    with Memory(
        store, summarizer=ConcatSummarizer(), fold="manual", policy=MessageCount(3)
    ) as memory:
        for msg in turns(6):
            memory.add("s", msg)
        before = sqlite_dump(path)
        outcome = memory.fold("s")
        assert outcome.status == "failed" and outcome.error is not None
        assert sqlite_dump(path) == before
        assert memory.ledger("s")[0].error_class == "OperationalError"


def test_appends_during_a_slow_fold_survive(tmp_path: Path) -> None:
    async def main() -> None:
        memory = AsyncMemory(
            SQLiteStore(tmp_path / "slow.db"),
            fold="manual",
            summarizer=ConcatSummarizer(delay=0.3),
            policy=MessageCount(4),
        )
        for msg in turns(6):
            await memory.add("s", msg)
        fold = asyncio.create_task(memory.fold("s"))
        await asyncio.sleep(0.05)
        for msg in turns(5, start=6):
            await memory.add("s", msg)
        outcome = await fold
        assert outcome.status == "committed" and (outcome.lo, outcome.hi) == (1, 6)
        live = await memory.messages("s", include_folded=False)
        assert [m.seq for m in live] == [7, 8, 9, 10, 11]
        assert next(m.text for m in live) == "turn 6 says hello"
        await check_invariant(memory.store, "s")
        await memory.close()

    asyncio.run(main())


def test_two_simultaneous_folds_exactly_one_commits(tmp_path: Path) -> None:
    """Two engines (as two processes would) fold the same session at once: the fold
    lease lets one fold and the other skip without calling its summarizer; with the
    lease switched off, the compare-and-set commit still lets exactly one win."""
    for leased in (True, False):
        path = tmp_path / f"race-{leased}.db"

        async def main(path: Path, leased: bool) -> None:
            summarizers = [ConcatSummarizer(delay=0.2), ConcatSummarizer(delay=0.2)]
            a, b = (
                AsyncMemory(
                    SQLiteStore(path),
                    fold="manual",
                    summarizer=summarizer,
                    policy=MessageCount(3),
                    fold_lease_seconds=30 if leased else 0,
                )
                for summarizer in summarizers
            )
            for msg in turns(8):
                await a.add("s", msg)
            outcomes = await asyncio.gather(a.fold("s"), b.fold("s"))
            statuses = sorted(o.status for o in outcomes)
            loses = "skipped" if leased else "conflict"
            assert statuses == sorted(["committed", loses])
            loser = next(o for o in outcomes if o.status == loses)
            rows = await a.ledger("s")
            if leased:
                assert "another process is folding" in loser.reason
                assert sum(s.calls for s in summarizers) == 1  # no paid call thrown away
                assert [r.outcome for r in rows] == ["committed"]
                assert rows[0].owner is not None and rows[0].owner.startswith("fold:")
            else:
                assert isinstance(loser.error, ConflictError)
                assert sorted(r.outcome for r in rows) == ["committed", "conflict"]
            summary = await a.summary("s")
            assert summary is not None and summary.version == 1
            await check_invariant(a.store, "s")
            # the lease was released: the next fold is not blocked
            for msg in turns(12)[8:]:
                await b.add("s", msg)
            assert (await b.fold("s")).status == "committed"
            await a.close()
            await b.close()

        asyncio.run(main(path, leased))


def test_same_engine_does_not_fold_a_session_twice_at_once() -> None:
    async def main() -> None:
        summarizer = ConcatSummarizer(delay=0.1)
        memory = AsyncMemory(
            MemoryStore(), fold="manual", summarizer=summarizer, policy=MessageCount(2)
        )
        for msg in turns(5):
            await memory.add("s", msg)
        first, second = await asyncio.gather(memory.fold("s"), memory.fold("s"))
        assert {first.status, second.status} == {"committed", "skipped"}
        assert summarizer.calls == 1

    asyncio.run(main())


def test_failed_fold_view_still_honours_budget() -> None:
    with Memory(
        "memory://",
        summarizer=ConcatSummarizer(fail_with=RuntimeError("down")),
        policy=TokenBudget(300, keep_last=2),
    ) as memory:
        for msg in turns(60):
            result = memory.add("s", msg)
        assert result.fold is not None and result.fold.status == "failed"
        ctx = memory.context("s")
        assert ctx.tokens <= 300 and ctx.omitted > 0 and ctx.omitted_seqs is not None
        assert len(memory.messages("s", include_folded=False)) == 60
        assert ctx.messages[0].role == "user"


def test_single_huge_message_is_truncated_in_view_and_flagged() -> None:
    with Memory(
        "memory://", summarizer=ConcatSummarizer(), fold="manual", policy=TokenBudget(200)
    ) as memory:
        memory.add("s", {"role": "user", "content": "word " * 2000})
        ctx = memory.context("s")
        assert ctx.truncated and ctx.tokens <= 200
        assert "elided by contextfold" in ctx.messages[-1].text and ctx.elided == (1,)
        assert len(memory.messages("s")[0].message.text) == 10_000  # stored intact


def test_fold_many_bounded_concurrency_and_outcomes() -> None:
    running = 0
    peak = 0

    async def slow(request: Any) -> SummaryResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        if request.session_id == "bad":
            raise RuntimeError("nope")
        return SummaryResult("ok", input_tokens=5, output_tokens=2, calls=1)

    with Memory(
        "memory://", summarizer=FunctionSummarizer(slow), fold="manual", policy=MessageCount(2)
    ) as memory:
        sids = [f"s{i}" for i in range(20)] + ["bad", "quiet"]
        for sid in sids:
            memory.add(sid, *turns(1 if sid == "quiet" else 4))
        batch = memory.fold_many(sids, concurrency=4)
    assert peak <= 4
    assert batch.committed == 20 and batch.failed == ["bad"]
    assert batch.outcomes["quiet"].status == "skipped"
    assert batch.requests == 21 and batch.input_tokens == 100 and batch.output_tokens == 40


def test_bad_input_raises_before_any_write() -> None:
    with Memory("memory://", summarizer=ConcatSummarizer()) as memory:
        memory.add("s", {"role": "user", "content": "fine"})
        for bad in (
            {"role": "robot", "content": "x"},
            {"role": "user", "content": "a\x00b"},
            {"role": "user", "content": "\ud800"},
            {"role": "tool", "content": "x", "tool_call_id": "nope"},
            {"role": "user", "content": "x", "metadata": {"f": object()}},
        ):
            with pytest.raises(ValidationError):
                memory.add("s", {"role": "user", "content": "would be lost"}, bad)
        assert [m.text for m in memory.messages("s")] == ["fine"]
        with pytest.raises(ConfigError):
            memory.add("", {"role": "user", "content": "x"})


def test_memory_max_message_chars() -> None:
    with Memory("memory://", summarizer=ConcatSummarizer(), max_message_chars=10) as memory:
        with pytest.raises(ValidationError, match="over the cap"):
            memory.add("s", {"role": "user", "content": "x" * 11})
        assert memory.stats("s") is None


def test_delete_removes_session() -> None:
    with Memory("memory://", summarizer=ConcatSummarizer()) as memory:
        memory.add("s", *turns(3))
        assert memory.delete("s") and memory.stats("s") is None and not memory.delete("s")


class CountingCounter:
    """Chars/4, and how many texts it was asked about."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return -(-len(text) // 4)


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
def test_resending_a_history_by_id_counts_only_the_new_message(
    store: str, tmp_path: Path
) -> None:
    """A framework re-sends the whole history with client ids each turn: the stored ones
    are dropped before anything is counted, so a turn counts its new message only (not
    the whole history again), and the counts of what is stored are right."""
    counter = CountingCounter()
    url = store if store == "memory://" else f"sqlite:///{tmp_path / 'c.db'}"
    history = [dict(m, id=f"m{i}") for i, m in enumerate(turns(30))]
    with Memory(url, policy=TokenBudget(10**6), tokenizer=counter) as memory:
        memory.add("s", *history[:1])
        for i in range(2, len(history) + 1):
            before = counter.calls
            result = memory.add("s", *history[:i])
            assert result.duplicates == i - 1
            assert counter.calls - before == 1  # one text: the new message's content
        stored = memory.messages("s")
        assert [m.seq for m in stored] == list(range(1, 31))
        assert all(m.tokens == 3 + -(-len(m.text) // 4) for m in stored)
        stats = memory.stats("s")
        assert stats is not None and stats.live_tokens == sum(m.tokens for m in stored)
