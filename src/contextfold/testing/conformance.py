"""The store conformance suite: every store must pass it.

Subclass :class:`StoreConformance` in a test module and implement :meth:`make_store`;
pytest collects the ``test_*`` methods. Each test runs its own event loop, so the suite
needs no async plugin::

    class TestMyStore(StoreConformance):
        def make_store(self, retention="archive"):
            return MyStore(..., retention=retention)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from ..errors import ConflictError, ValidationError
from ..messages import MediaPart, Message, TextPart, ToolCall
from ..stores.base import FoldCommit, LedgerEntry, PreparedMessage, Retention, Store
from .due_marks import DueMarkConformance
from .leases import LeaseConformance
from .search import SearchConformance
from .summary_history import SummaryHistoryConformance
from .vault import VaultConformance

__all__ = ["StoreConformance", "check_invariant"]

T = TypeVar("T")
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _p(role: str, content: Any = "", **kw: Any) -> PreparedMessage:
    msg = Message(role=role, content=content, **kw)  # type: ignore[arg-type]
    return PreparedMessage(msg, 10)


async def check_invariant(store: Store, session_id: str) -> None:
    """Live messages plus those covered by the summary are exactly 1..last_seq, once each."""
    stats = await store.stats(session_id)
    snap = await store.snapshot(session_id)
    if stats is None:
        assert snap is None
        return
    assert snap is not None and snap.stats == stats
    assert snap.summary == await store.summary(session_id)
    assert snap.live == await store.live(session_id)
    live = [m.seq for m in await store.live(session_id)]
    assert live == list(range(stats.through_seq + 1, stats.last_seq + 1)), (live, stats)
    assert stats.live_count == len(live)
    assert stats.live_tokens == sum(m.tokens for m in await store.live(session_id))
    everything = await store.messages(session_id)
    if store.retention == "archive":
        assert [m.seq for m in everything] == list(range(1, stats.last_seq + 1))
        assert all(m.folded == (m.seq <= stats.through_seq) for m in everything)
    else:
        assert all(m.seq > stats.through_seq for m in everything)


class StoreConformance(
    LeaseConformance,
    DueMarkConformance,
    VaultConformance,
    SummaryHistoryConformance,
    SearchConformance,
):
    """The contract of :class:`~contextfold.stores.base.Store`, as tests."""

    def make_store(self, retention: Retention = "archive") -> Store:
        raise NotImplementedError(f"{type(self).__name__} must implement make_store()")

    def _run(self, body: Callable[[Store], Awaitable[T]], retention: Retention = "archive") -> T:
        async def main() -> T:
            store = self.make_store(retention)
            await store.setup()
            try:
                return await body(store)
            finally:
                await store.close()

        return asyncio.run(main())

    def test_setup_is_idempotent(self) -> None:
        async def body(store: Store) -> None:
            await store.setup()
            await store.setup()
            assert await store.stats("nobody") is None
            assert await store.live("nobody") == []

        self._run(body)

    def test_append_assigns_seqs_and_round_trips(self) -> None:
        msgs = [
            _p("system", "be brief"),
            _p(
                "user",
                "hi ‮ ​ 🙂",
                name="Ada Lovelace",
                timestamp=T0,
                metadata={"k": [1, 2.5, None, {"deep": True}]},
                id="c-1",
            ),
            _p("assistant", "", tool_calls=(ToolCall("call_1", "lookup", '{"q": "x"}'),)),
            _p("tool", "result", tool_call_id="call_1"),
            _p(
                "user",
                (
                    TextPart("look"),
                    MediaPart(
                        "image",
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    ),
                ),
            ),
        ]

        async def body(store: Store) -> None:
            res = await store.append("s", msgs, T0)
            assert res.seqs == (1, 2, 3, 4, 5)
            stats = await store.stats("s")
            assert stats is not None
            assert (stats.last_seq, stats.live_count, stats.live_tokens) == (5, 5, 50)
            assert stats.last_activity == T0 and stats.pending_calls == ()
            back = await store.live("s")
            assert [m.message for m in back] == [p.message for p in msgs]
            assert [m.tokens for m in back] == [10] * 5
            await check_invariant(store, "s")

        self._run(body)

    def test_invalid_sequence_writes_nothing(self) -> None:
        async def body(store: Store) -> None:
            for bad in (
                [_p("tool", "orphan", tool_call_id="nope")],
                [
                    _p("user", "a"),
                    _p("assistant", "", tool_calls=(ToolCall("c", "f"),)),
                    _p("user", "interrupts the pending call"),
                ],
            ):
                try:
                    await store.append("s", bad, T0)
                except ValidationError:
                    pass
                else:
                    raise AssertionError(f"accepted {bad!r}")
                assert await store.stats("s") is None
                assert await store.messages("s") == []

        self._run(body)

    def test_pending_calls_span_appends(self) -> None:
        async def body(store: Store) -> None:
            calls = (ToolCall("a", "f"), ToolCall("b", "g"))
            await store.append("s", [_p("user", "go"), _p("assistant", "", tool_calls=calls)], T0)
            assert (await store.stats("s")).pending_calls == ("a", "b")  # type: ignore[union-attr]
            await store.append("s", [_p("tool", "1", tool_call_id="b")], T0)
            assert (await store.stats("s")).pending_calls == ("a",)  # type: ignore[union-attr]
            try:
                await store.append("s", [_p("tool", "again", tool_call_id="b")], T0)
            except ValidationError:
                pass
            else:
                raise AssertionError("a call answered twice was accepted")
            await store.append("s", [_p("tool", "2", tool_call_id="a"), _p("user", "ok")], T0)
            stats = await store.stats("s")
            assert stats is not None and stats.pending_calls == () and stats.last_seq == 5

        self._run(body)

    def test_client_id_makes_append_idempotent(self) -> None:
        async def body(store: Store) -> None:
            first = await store.append(
                "s", [_p("user", "a", id="m1"), _p("user", "b", id="m2")], T0
            )
            again = await store.append(
                "s", [_p("user", "b", id="m2"), _p("user", "c", id="m3")], T0
            )
            assert first.seqs == (1, 2) and again.seqs == (2, 3) and again.duplicates == 1
            assert [m.message.id for m in await store.live("s")] == ["m1", "m2", "m3"]
            await check_invariant(store, "s")

        self._run(body)

    def _fold_entry(self, lo: int, hi: int) -> LedgerEntry:
        return LedgerEntry(
            session_id="s",
            outcome="committed",
            lo=lo,
            hi=hi,
            messages_folded=hi - lo + 1,
            started_at=T0,
            model="m",
        )

    def _check_fold(self, retention: Retention) -> None:
        async def body(store: Store) -> None:
            await store.append("s", [_p("user", str(i)) for i in range(6)], T0)
            await store.record_usage("s", 999)
            summary = await store.commit_fold(
                FoldCommit("s", 0, 1, 4, "sum", 7), self._fold_entry(1, 4)
            )
            assert (summary.version, summary.through_seq, summary.text) == (1, 4, "sum")
            assert await store.summary("s") == summary
            stats = await store.stats("s")
            assert stats is not None
            assert (stats.live_count, stats.live_tokens, stats.through_seq) == (2, 20, 4)
            assert stats.summary_tokens == 7 and stats.reported_input_tokens is None
            assert [m.seq for m in await store.live("s")] == [5, 6]
            await check_invariant(store, "s")
            kept = await store.messages("s")
            assert [m.seq for m in kept] == (
                [1, 2, 3, 4, 5, 6] if retention == "archive" else [5, 6]
            )

        self._run(body, retention)

    def test_fold_commit_archive(self) -> None:
        self._check_fold("archive")

    def test_fold_commit_delete(self) -> None:
        self._check_fold("delete")

    def test_stale_fold_conflicts_and_writes_nothing(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", [_p("user", str(i)) for i in range(6)], T0)
            await store.commit_fold(FoldCommit("s", 0, 1, 2, "first", 5), self._fold_entry(1, 2))
            before = (await store.stats("s"), await store.summary("s"), await store.messages("s"))
            ledger_before = await store.ledger("s")
            for commit in (
                FoldCommit("s", 0, 1, 3, "stale version", 5),
                FoldCommit("s", 1, 1, 3, "wrong start", 5),
                FoldCommit("s", 1, 3, 9, "past the end", 5),
            ):
                try:
                    await store.commit_fold(commit, self._fold_entry(commit.lo, commit.hi))
                except ConflictError:
                    pass
                else:
                    raise AssertionError(f"{commit!r} committed")
            assert (
                await store.stats("s"),
                await store.summary("s"),
                await store.messages("s"),
            ) == before
            assert await store.ledger("s") == ledger_before

        self._run(body)

    def test_appends_after_plan_survive_commit(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", [_p("user", str(i)) for i in range(4)], T0)
            stats = await store.stats("s")
            assert stats is not None
            await store.append("s", [_p("user", "late 1"), _p("user", "late 2")], T0)
            await store.commit_fold(
                FoldCommit("s", stats.summary_version, 1, 3, "x", 3), self._fold_entry(1, 3)
            )
            assert [m.text for m in await store.live("s")] == ["3", "late 1", "late 2"]
            await check_invariant(store, "s")

        self._run(body)

    def test_ledger_rows(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", [_p("user", "a"), _p("user", "b")], T0)
            await store.append("t", [_p("user", "c")], T0)
            failed = LedgerEntry(
                session_id="s",
                outcome="failed",
                error_class="Boom",
                error="Boom: no",
                started_at=T0,
                latency_ms=1.5,
                key="memory:s",
            )
            fid = await store.record_attempt(failed)
            await store.commit_fold(FoldCommit("s", 0, 1, 1, "x", 3), self._fold_entry(1, 1))
            await store.record_attempt(LedgerEntry(session_id="t", outcome="conflict"))
            rows = await store.ledger("s")
            assert [r.outcome for r in rows] == ["committed", "failed"]
            assert rows[1].id == fid and rows[1].error_class == "Boom" and rows[1].key == "memory:s"
            assert rows[1].started_at == T0 and rows[1].latency_ms == 1.5
            assert len(await store.ledger()) == 3 and len(await store.ledger(limit=1)) == 1

        self._run(body)

    def test_delete(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", [_p("user", "a")], T0)
            await store.append("t", [_p("user", "b")], T0)
            assert not await store.delete("s", if_last_seq=0)
            assert await store.delete("s", if_last_seq=1)
            assert await store.stats("s") is None and await store.messages("s") == []
            assert not await store.delete("s")
            assert (await store.stats("t")) is not None
            again = await store.append("s", [_p("user", "new life")], T0)
            assert again.seqs == (1,)

        self._run(body)

    def test_list_sessions_most_recent_first(self) -> None:
        async def body(store: Store) -> None:
            for i, sid in enumerate(["a", "b", "c"]):
                await store.append(sid, [_p("user", sid)], T0 + timedelta(seconds=i))
            assert [s.session_id for s in await store.list_sessions()] == ["c", "b", "a"]
            assert [s.session_id for s in await store.list_sessions(limit=1, offset=1)] == ["b"]

        self._run(body)
