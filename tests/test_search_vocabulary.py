"""The SQLite search's use of its index's vocabulary: a long term that is the only word of
the index it begins is queried as that word (the same rows, scores and order as the
prefix query), and what the vocabulary said of a term is reused only while the index is
unchanged — whoever changed it (another store on the same file, a deleted session, an
uncommitted write of the same connection)."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.messages import Message
from contextfold.stores import sqlite_search
from contextfold.stores.base import FoldCommit, LedgerEntry, PreparedMessage
from contextfold.stores.search import term_groups
from contextfold.stores.sqlite import SQLiteStore
from contextfold.stores.sqlite_schema import statements
from contextfold.stores.sqlite_search import (
    FTS_SCHEMA,
    VOCAB_SCHEMA,
    VocabularyCache,
    index_messages,
    match_expression,
    search_ids,
    seq_range,
    vocabulary,
)

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)
# words sharing prefixes: "phot" begins several, "zebra" one or two, "go" is short
WORDS = ["photo", "photos", "photograph", "zebra", "zebras", "go", "goat", "great", "lake",
         "lakes", "tea", "teapot"]
TERMS = ["photo", "phot", "zebra", "zebr", "go", "goat", "great", "lake", "tea", "teapot",
         "nothing"]


def _index(docs: list[list[str]], key: int = 1) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for statement in statements(FTS_SCHEMA + VOCAB_SCHEMA):
        conn.execute(statement)
    conn.execute("BEGIN")
    index_messages(conn, key, ((seq, Message(role="user", content=" ".join(words)))
                               for seq, words in enumerate(docs, 1)))
    conn.execute("COMMIT")
    return conn


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=1,
                     max_size=30),
       terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=5, unique=True),
       min_matched=st.integers(1, 3), limit=st.integers(1, 12))
def test_a_term_queried_as_its_only_word_ranks_as_its_prefix_query(
    docs: list[list[str]], terms: list[str], min_matched: int, limit: int
) -> None:
    conn = _index(docs)
    vocab = vocabulary(conn, terms)
    present = {w for d in docs for w in d}
    for term, (_, single) in vocab.items():
        begun = {w for w in present if w.startswith(term)}
        assert single == (len(term) >= sqlite_search.PREFIX_MIN and begun == {term})
    exact = {t for t, (_, single) in vocab.items() if single}
    groups = term_groups(terms, min_matched)
    first, last = seq_range(1)
    ranked = sqlite_search._ranked
    assert ranked(conn, match_expression(groups, exact), first, last, limit) == ranked(
        conn, match_expression(groups), first, last, limit)
    # and the counts are term_counts' (what chooses the broad terms)
    assert {t: c for t, (c, _) in vocab.items()} == sqlite_search.term_counts(conn, terms)


def test_the_cache_follows_another_connections_commits_and_its_own_writes() -> None:
    conn = _index([["zebra", "lake"], ["photo", "lake"]])
    other = _index([])  # a second database: its own cache state
    cache = VocabularyCache()
    terms = ["zebra", "phot", "lake"]
    assert cache.get(conn, terms) == vocabulary(conn, terms)
    assert cache.get(conn, terms)["zebra"] == (1, True)
    conn.execute("BEGIN")  # an uncommitted write of the same connection
    index_messages(conn, 2, [(1, Message(role="user", content="zebras at the lake"))])
    assert cache.get(conn, terms) == vocabulary(conn, terms)
    assert cache.get(conn, terms)["zebra"] == (2, False)
    conn.execute("ROLLBACK")
    assert cache.get(conn, terms) == vocabulary(conn, terms)
    assert cache.get(conn, terms)["zebra"] == (1, True)
    assert VocabularyCache().get(other, terms) == {t: (0, False) for t in terms}


def _p(text: str) -> PreparedMessage:
    return PreparedMessage(Message(role="user", content=text), 4)


def test_a_store_searches_what_another_store_on_the_file_folded_or_deleted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"

    async def fold(store: SQLiteStore, sid: str, texts: list[str]) -> None:
        await store.append(sid, [_p(t) for t in texts], T0)
        stats = await store.stats(sid)
        assert stats is not None
        await store.commit_fold(
            FoldCommit(sid, stats.summary_version, stats.through_seq + 1, stats.last_seq,
                       "summary", 3),
            LedgerEntry(session_id=sid, outcome="committed", lo=stats.through_seq + 1,
                        hi=stats.last_seq, started_at=T0))

    async def main() -> None:
        reader, writer = SQLiteStore(path), SQLiteStore(path)
        await reader.setup()
        await writer.setup()
        await fold(writer, "s", ["a zebra at the lake", "tea by the lake"])
        hits = await reader.search("s", ["zebra", "lake"], folded=True, min_matched=2)
        assert [h.seq for h in hits] == [1]  # "zebra": the only word it begins
        await fold(writer, "s", ["zebras at the lake"])  # now it begins two
        hits = await reader.search("s", ["zebra", "lake"], folded=True, min_matched=2)
        assert sorted(h.seq for h in hits) == [1, 3]
        await fold(writer, "t", ["a teapot by the lake"])
        assert [h.seq for h in await reader.search("t", ["teapot"], folded=True)] == [1]
        assert await writer.delete("t")
        assert await reader.search("t", ["teapot"], folded=True) == []
        conn = sqlite3.connect(path)
        fresh = vocabulary(conn, ["teapot", "zebra", "lake"])
        assert fresh["teapot"] == (0, False)  # nothing of the deleted session is left
        assert reader._vocabulary.get(conn, ["teapot", "zebra", "lake"]) == fresh
        assert search_ids(conn, 1, [("teapot",)], 1, 10, 5) == []
        conn.close()
        await reader.close()
        await writer.close()

    asyncio.run(main())
