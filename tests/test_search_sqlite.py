"""SQLite search beyond the conformance suite: the migration indexes a database made
before search existed, the index is written in the same transaction as the append and the
fold commit (a failing index write leaves nothing behind), and the memory store ranks
exactly as the SQLite store does (same FTS5 tables)."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from contextfold.errors import StorageError
from contextfold.messages import Message
from contextfold.stores import MemoryStore, sqlite_commits, sqlite_search
from contextfold.stores import sqlite as sqlite_module
from contextfold.stores.base import FoldCommit, LedgerEntry, PreparedMessage
from contextfold.stores.rows import encode_message
from contextfold.stores.sqlite import MIGRATIONS, SQLiteStore
from contextfold.stores.sqlite_schema import statements

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)
TEXTS = ["the ferry to Bodrum leaves at noon", "we met Orhan in Bodrum", "the noon ferry",
         "nothing relevant", "Ferry tickets cost 40 lira"]


def _p(text: str) -> PreparedMessage:
    return PreparedMessage(Message(role="user", content=text), 4)


def _entry(lo: int, hi: int) -> LedgerEntry:
    return LedgerEntry(session_id="s", outcome="committed", lo=lo, hi=hi, started_at=T0)


def _old_database(path: Path) -> None:
    """A file as the store made it before search: migrations 1-4, two sessions (one with a
    folded range, one with a delete-retention tombstone)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                 "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for version, name, step in MIGRATIONS[:4]:
        assert isinstance(step, str)
        for statement in statements(step):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, '2026-01-01')", (version, name))
    for sid, texts, through in (("s", TEXTS, 2), ("t", ["Bodrum again", ""], 0)):
        conn.execute("INSERT INTO sessions (session_id, last_seq, through_seq, created_at) "
                     "VALUES (?, ?, ?, '2026-01-01')", (sid, len(texts), through))
        for seq, text in enumerate(texts, 1):
            body = encode_message(Message(role="user", content=text)) if text else ""
            conn.execute("INSERT INTO messages (session_id, seq, role, body, tokens, created_at)"
                         " VALUES (?, ?, 'user', ?, 4, '2026-01-01')", (sid, seq, body))
    conn.commit()
    conn.close()


def test_migration_indexes_a_database_made_before_search(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_database(path)

    async def main() -> None:
        store = SQLiteStore(path)
        await store.setup()
        hits = await store.search("s", ["bodrum", "ferry"])
        assert {h.seq for h in hits} == {1, 2, 3, 5} and hits[0].seq == 1
        assert {(h.seq, h.folded) for h in hits if h.seq < 3} == {(1, True), (2, True)}
        assert [h.seq for h in await store.search("t", ["bodrum"])] == [1]
        await store.append("t", [_p("Bodrum is lovely")], T0)  # a new row after migrating
        assert {h.seq for h in await store.search("t", ["bodrum"])} == {1, 3}
        await store.append("u", [_p("a new session about Bodrum")], T0)
        assert [h.seq for h in await store.search("u", ["bodrum"])] == [1]
        await store.close()

    asyncio.run(main())
    rows = sqlite3.connect(path).execute("SELECT version FROM schema_migrations")
    versions = [r[0] for r in rows]
    assert versions == [v for v, _, _ in MIGRATIONS]


def _failing_after(real: Any) -> Any:
    def index_then_fail(*args: Any) -> None:
        real(*args)
        raise sqlite3.OperationalError("disk I/O error (injected)")

    return index_then_fail


def test_failed_index_write_rolls_the_fold_commit_back(tmp_path: Path, monkeypatch: Any) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "s.db")
        await store.setup()
        await store.append("s", [_p(t) for t in TEXTS], T0)
        real = sqlite_search.catch_up_stored
        for module in (sqlite_commits, sqlite_module):  # the fold commit's, the search's
            monkeypatch.setattr(module, "catch_up_stored", _failing_after(real))
        with pytest.raises(StorageError, match="injected"):
            await store.commit_fold(FoldCommit("s", 0, 1, 3, "x", 3), _entry(1, 3))
        with pytest.raises(StorageError, match="injected"):  # a search's catch-up too
            await store.search("s", ["ferry"])
        monkeypatch.undo()
        assert (await store.stats("s")).through_seq == 0  # type: ignore[union-attr]
        await store.commit_fold(FoldCommit("s", 0, 1, 3, "x", 3), _entry(1, 3))
        assert [h.seq for h in await store.search("s", ["ferry"], folded=True)] in (
            [3, 1], [1, 3])
        assert {h.seq for h in await store.search("s", ["ferry"])} == {1, 3, 5}  # once each
        await store.close()

    asyncio.run(main())


def test_index_follows_the_fold_and_live_searches(tmp_path: Path) -> None:
    path = tmp_path / "s.db"

    def indexed() -> list[int]:
        rows = sqlite3.connect(path).execute("SELECT id FROM message_words ORDER BY id")
        return [r[0] & 0xFFFFFFFF for r in rows]

    async def main() -> None:
        store = SQLiteStore(path)
        await store.setup()
        await store.append("s", [_p(t) for t in TEXTS], T0)
        assert indexed() == []  # an append writes no index
        assert await store.search("s", ["ferry"], folded=True) == []
        assert indexed() == []  # nothing folded: nothing to index for recall
        await store.commit_fold(FoldCommit("s", 0, 1, 2, "x", 3), _entry(1, 2))
        assert indexed() == [1, 2]
        assert {h.seq for h in await store.search("s", ["ferry"])} == {1, 3, 5}
        assert indexed() == [1, 2, 3, 4, 5]
        await store.append("s", [_p("ferry six")], T0)
        assert [h.seq for h in await store.search("s", ["six"], folded=False)] == [6]
        await store.close()

    asyncio.run(main())


def test_failed_unindex_rolls_the_fold_commit_back(tmp_path: Path, monkeypatch: Any) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "s.db", retention="delete")
        await store.setup()
        await store.append("s", [_p(t) for t in TEXTS], T0)
        monkeypatch.setattr(sqlite_commits, "unindex", _failing_after(sqlite_search.unindex))
        with pytest.raises(StorageError, match="injected"):
            await store.commit_fold(FoldCommit("s", 0, 1, 2, "x", 3), _entry(1, 2))
        monkeypatch.undo()
        assert (await store.stats("s")).through_seq == 0  # type: ignore[union-attr]
        assert {h.seq for h in await store.search("s", ["bodrum"])} == {1, 2}
        await store.commit_fold(FoldCommit("s", 0, 1, 2, "x", 3), _entry(1, 2))
        assert await store.search("s", ["bodrum"]) == []
        await store.close()

    asyncio.run(main())


def test_memory_store_ranks_exactly_as_sqlite(tmp_path: Path) -> None:
    async def main() -> None:
        results = []
        for store in (MemoryStore(), SQLiteStore(tmp_path / "s.db")):
            await store.setup()
            await store.append("s", [_p(t) for t in TEXTS], T0)
            await store.append("other", [_p("ferry ferry ferry noon")], T0)
            results.append(await store.search("s", ["ferry", "noon", "lira"]))
            await store.close()
        assert results[0] == results[1]
        assert [h.seq for h in results[0]] == [5, 3, 1]

    asyncio.run(main())


def test_deleting_a_session_removes_its_index_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.db"

    async def main() -> None:
        store = SQLiteStore(path)
        await store.setup()
        await store.append("s", [_p(t) for t in TEXTS], T0)
        await store.append("t", [_p("Bodrum")], T0)
        assert await store.search("s", ["ferry"]) and await store.search("t", ["bodrum"])
        assert await store.delete("s")
        await store.close()

    asyncio.run(main())
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT words FROM message_words").fetchall() == [("bodrum",)]
    assert conn.execute("SELECT rowid FROM message_search WHERE message_search MATCH 'ferry'"
                        ).fetchall() == []


def test_memory_store_indexes_when_a_search_needs_it() -> None:
    """The memory store writes no index on append or fold; a search indexes what it may
    return first (folded messages, and live ones when it searches those), and a delete
    retention fold or a session delete takes what was indexed out again."""

    def indexed(store: MemoryStore) -> list[int]:
        if store._fts is None:
            return []
        rows = store._fts.execute("SELECT id FROM message_words ORDER BY id")
        return [r[0] & 0xFFFFFFFF for r in rows]

    async def main() -> None:
        store = MemoryStore()
        await store.append("s", [_p(t) for t in TEXTS], T0)
        await store.commit_fold(FoldCommit("s", 0, 1, 2, "x", 3), _entry(1, 2))
        assert indexed(store) == []
        assert [h.seq for h in await store.search("s", ["bodrum"], folded=True)] == [2, 1]
        assert indexed(store) == [1, 2]
        assert {h.seq for h in await store.search("s", ["ferry"])} == {1, 3, 5}
        assert indexed(store) == [1, 2, 3, 4, 5]
        await store.commit_fold(FoldCommit("s", 1, 3, 4, "x", 3), _entry(3, 4))
        assert [h.seq for h in await store.search("s", ["noon"], folded=True)] == [3, 1]
        assert await store.delete("s")
        assert indexed(store) == []

        deleting = MemoryStore(retention="delete")
        await deleting.append("s", [_p(t) for t in TEXTS], T0)
        assert {h.seq for h in await deleting.search("s", ["ferry"])} == {1, 3, 5}
        await deleting.commit_fold(FoldCommit("s", 0, 1, 3, "x", 3), _entry(1, 3))
        assert indexed(deleting) == [4, 5]
        assert [h.seq for h in await deleting.search("s", ["ferry"])] == [5]

    asyncio.run(main())


def test_terms_no_message_holds_leave_the_hits_and_scores_as_they_are(
        tmp_path: Path, monkeypatch: Any) -> None:
    """A term no indexed message holds is left out of the FTS5 query when it is a group of
    its own (it matches nothing, and adds exactly 0 to any row's BM25): the same hits with
    the same scores, bit for bit, as the query with it; in an AND group it stays (its other
    terms weigh in the rank of rows other groups match)."""
    sent: list[str] = []
    ranked = sqlite_search._ranked

    def spy(conn: sqlite3.Connection, expression: str, *args: Any) -> Any:
        sent.append(expression)
        return ranked(conn, expression, *args)

    def every_group(groups: Any, exact: Any, absent: Any) -> str:
        return sqlite_search.match_expression(groups, exact)

    monkeypatch.setattr(sqlite_search, "_ranked", spy)

    async def run() -> None:
        store = SQLiteStore(tmp_path / "absent.db")
        await store.setup()
        await store.append("s", [_p(t) for t in TEXTS], T0)
        terms = ["ferry", "zzyzx", "noon", "bodrum", "qqqq"]
        for min_matched in (1, 2):
            sent.clear()
            got = await store.search("s", terms, limit=10, min_matched=min_matched)
            assert sent and all(("zzyzx" in e) == (min_matched > 1) for e in sent)
            with monkeypatch.context() as m:
                m.setattr(sqlite_search, "_expression", every_group)
                every = await store.search("s", terms, limit=10, min_matched=min_matched)
            assert [(h.seq, h.score, h.matched) for h in got] == \
                [(h.seq, h.score, h.matched) for h in every] != []
        assert await store.search("s", ["zzyzx", "qqqq"], limit=10) == []
        await store.close()

    asyncio.run(run())
