"""PostgreSQL search beyond the conformance suite: the migration indexes a database made
before search existed, another text search configuration can be chosen, a bad one is a
ConfigError, and odd input never reaches the server as an error."""

from __future__ import annotations

import asyncio
import hashlib
from datetime import datetime, timezone
from typing import Any

import psycopg
import pytest

from contextfold.errors import ConfigError
from contextfold.messages import Message
from contextfold.stores import postgres_schema
from contextfold.stores.base import PreparedMessage
from contextfold.stores.postgres import PostgresStore
from contextfold.stores.rows import encode_message

from .conftest import fresh_schema

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)


def _p(text: str) -> PreparedMessage:
    return PreparedMessage(Message(role="user", content=text), 4)


def test_migration_indexes_a_database_made_before_search(
    pg_url: str, monkeypatch: Any
) -> None:
    schema = fresh_schema()

    async def main() -> None:
        monkeypatch.setattr(postgres_schema, "MIGRATIONS", postgres_schema.MIGRATIONS[:5])
        old = PostgresStore(pg_url, schema=schema)
        await old.setup()
        await old.close()
        monkeypatch.undo()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"SET search_path = {schema}")
            conn.execute("INSERT INTO sessions (session_id, last_seq, through_seq) "
                         "VALUES ('s', 3, 1)")
            for seq, text in enumerate(["ferry to Bodrum", "Orhan in Bodrum", ""], 1):
                body = encode_message(Message(role="user", content=text)) if text else ""
                conn.execute("INSERT INTO messages (session_id, seq, role, body, tokens, "
                             "created_at) VALUES ('s', %s, 'user', %s, 4, now())", (seq, body))
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        hits = await store.search("s", ["bodrum"])
        assert {(h.seq, h.folded) for h in hits} == {(1, True), (2, False)}
        await store.append("s", [_p("Bodrum again")], T0)
        assert {h.seq for h in await store.search("s", ["bodrum"])} == {1, 2, 4}
        await store.close()

    asyncio.run(main())


def test_another_text_search_configuration_stems(pg_url: str) -> None:
    async def main() -> None:
        simple = PostgresStore(pg_url, schema=fresh_schema())
        german = PostgresStore(pg_url, schema=fresh_schema(), search_config="german")
        for store in (simple, german):
            await store.setup()
            await store.append("s", [_p("Wir haben die Häuser gekauft")], T0)
        assert await simple.search("s", ["Häusern"]) == []
        assert [h.seq for h in await german.search("s", ["Häusern"])] == [1]
        for store in (simple, german):
            await store.close()

    asyncio.run(main())


def test_bad_search_config_is_a_config_error(pg_url: str) -> None:
    for bad in ("simple; DROP TABLE x", "", "Simple", 3):
        with pytest.raises(ConfigError, match="search_config"):
            PostgresStore(pg_url, search_config=bad)  # type: ignore[arg-type]


def _indexes(url: str, schema: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s "
                            "AND tablename = 'messages'", (schema,)).fetchall()
    return {name: definition for name, definition in rows}


def _store_at(pg_url: str, monkeypatch: Any, version: int) -> str:
    """A fresh schema migrated to ``version`` only, holding messages of sessions a and b
    (``bodrum`` in both); its name."""
    schema = fresh_schema()

    async def main() -> None:
        monkeypatch.setattr(postgres_schema, "MIGRATIONS", postgres_schema.MIGRATIONS[:version])
        old = PostgresStore(pg_url, schema=schema)
        await old.setup()
        await old.append("a", [_p("ferry to Bodrum"), _p("dinner in Kas")], T0)
        await old.append("b", [_p("Bodrum castle")], T0)
        await old.close()
        monkeypatch.undo()

    asyncio.run(main())
    return schema


async def _found_by_session(store: PostgresStore) -> None:
    """What the store of :func:`_store_at` finds, by session, before and after an append."""
    assert [h.seq for h in await store.search("a", ["bodrum"])] == [1]
    assert [h.seq for h in await store.search("b", ["bodrum"])] == [1]
    assert await store.search("a", ["bod"]) == []  # a short term: the word only
    assert [h.seq for h in await store.search("a", ["bodr"])] == [1]  # a long one: a prefix
    await store.append("b", [_p("Bodrum again")], T0)
    assert [h.seq for h in await store.search("b", ["bodrum"])] == [2, 1]
    assert [h.seq for h in await store.search("a", ["bodrum"])] == [1]


@pytest.mark.parametrize("version", [6, 7])
def test_an_older_search_index_becomes_one_of_lexemes_per_session(
    pg_url: str, monkeypatch: Any, version: int
) -> None:
    """A database at migration 6 (one GIN index on ``search``) or 7 (``btree_gin`` on
    ``(session_id, search)``) ends with the index of each session's lexemes, without a
    pending list; what it stored is found, by session."""
    schema = _store_at(pg_url, monkeypatch, version)
    assert ("messages_search" in _indexes(pg_url, schema)) == (version == 6)

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        indexes = _indexes(pg_url, schema)
        assert "messages_search" not in indexes
        assert "session_lexemes(session_id, search)" in indexes["messages_search_session"]
        assert "fastupdate=off" in indexes["messages_search_session"]
        await _found_by_session(store)
        await store.close()

    asyncio.run(main())


def test_a_server_without_the_extension_gets_the_same_index(
    pg_url: str, monkeypatch: Any
) -> None:
    """When the server cannot create ``btree_gin`` (migration 7 then keeps the index on
    ``search`` alone), migration 8 still builds the index of each session's lexemes."""
    from contextfold.stores import postgres_search

    monkeypatch.setattr(postgres_search, "SESSION_GIN", "no_such_extension")
    schema = _store_at(pg_url, monkeypatch, 6)
    monkeypatch.setattr(postgres_search, "SESSION_GIN", "no_such_extension")

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        assert set(_indexes(pg_url, schema)) == {
            "messages_pkey", "messages_client_id", "messages_search_session"}
        await _found_by_session(store)
        await store.close()

    asyncio.run(main())


def _same_key(prefix: str) -> tuple[str, str]:
    """Two session ids whose keys (8 hex digits of their MD5) are the same."""
    seen: dict[str, str] = {}
    i = 0
    while True:
        sid = f"{prefix}{i}"
        key = hashlib.md5(sid.encode()).hexdigest()[:8]
        if key in seen:
            return seen[key], sid
        seen[key] = sid
        i += 1


def test_sessions_sharing_a_key_find_only_their_own_messages(pg_url: str) -> None:
    """Two sessions whose lexemes carry the same key share posting lists; a search still
    finds only its own session's messages, and a deleted session's none."""
    one, two = _same_key("tenant-")

    async def main() -> None:
        store = PostgresStore(pg_url, schema=fresh_schema())
        await store.setup()
        await store.append(one, [_p("ferry to Bodrum"), _p("a quiet harbour")], T0)
        await store.append(two, [_p("Bodrum castle"), _p("harbour lights of Bodrum")], T0)
        assert [h.seq for h in await store.search(one, ["bodrum"])] == [1]
        assert sorted(h.seq for h in await store.search(two, ["bodrum"])) == [1, 2]
        assert [h.seq for h in await store.search(one, ["harb"])] == [2]
        await store.delete(two)
        assert await store.search(two, ["bodrum"]) == []
        assert sorted(h.seq for h in await store.search(one, ["bodrum", "harbour"])) == [1, 2]
        await store.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("lexemes", "query"),
    [(["it's", "x"], "'it''s'"), (["a\\b"], "'a\\\\b':*"), (["ok", "o'k"], "'o''k' & 'ok'")],
)
def test_a_lexeme_with_a_quote_or_a_backslash_keeps_its_session(
    pg_url: str, lexemes: list[str], query: str
) -> None:
    """A dictionary may keep a quote or a backslash in a lexeme: the query's lexemes get
    the session's key inside their quotes, so they match that session's lexemes only."""
    schema = fresh_schema()

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        await store.close()

    asyncio.run(main())
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"SET search_path = {schema}")
        row = conn.execute(
            "SELECT session_lexemes(%(s)s, array_to_tsvector(%(l)s::text[])) "
            "@@ session_query(%(s)s, %(q)s::tsquery), "
            "session_lexemes(%(o)s, array_to_tsvector(%(l)s::text[])) "
            "@@ session_query(%(s)s, %(q)s::tsquery)",
            {"s": "one", "o": "two", "l": lexemes, "q": query},
        ).fetchone()
    assert row == (True, False)


def test_broad_terms_from_the_statistics_search_the_selective_matches_first(
    pg_url: str, monkeypatch: Any
) -> None:
    """With statistics (ANALYZE), terms in more than ``BROAD_MESSAGES`` rows are broad:
    the messages with a selective term are searched first, then, when they are fewer than
    ``limit``, the groups left out — the same hits, scores and order as ranking every
    match; without statistics every match is ranked in one search."""
    from contextfold.stores import postgres_search, search

    schema = fresh_schema()
    monkeypatch.setattr(search, "BROAD_MESSAGES", 3)
    queries: list[str] = []
    real = postgres_search.factored_tsquery

    def recorded(*args: Any) -> str:
        queries.append(real(*args))
        return queries[-1]

    monkeypatch.setattr(postgres_search, "factored_tsquery", recorded)
    texts = ["a photo of the great lake"] * 5 + ["a zebra photo", "a great zebra", "nothing"]

    def described(hits: list[Any]) -> list[tuple[int, float, int]]:
        return [(h.seq, h.score, h.matched) for h in hits]

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        await store.append("s", [_p(t) for t in texts], T0)
        terms = ["photo", "great", "zebra"]
        assert len(await store.search("s", terms, limit=2, min_matched=2)) == 2
        assert queries == ["'photo':* & ('great':* | 'zebra':*) | "
                           "'great':* & 'zebra':*"]  # no statistics yet: one search
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"ANALYZE {schema}.messages")
        fresh = PostgresStore(pg_url, schema=schema)  # reads the statistics afresh
        queries.clear()
        two = await fresh.search("s", terms, limit=2, min_matched=2)
        assert sorted(h.seq for h in two) == [6, 7]
        assert queries == ["'photo':* & 'zebra':* | 'great':* & 'zebra':*"]
        queries.clear()
        five = await fresh.search("s", terms, limit=5, min_matched=2)
        assert len(five) == 5 and {6, 7} <= {h.seq for h in five}
        assert queries[1:] == ["'photo':* & 'great':*"]  # then the group left out
        monkeypatch.setattr(search, "BROAD_MESSAGES", 10**9)  # every match ranked at once
        for limit in (5, 8):  # the selective matches too few: every match ranked
            every = await fresh.search("s", terms, limit=limit, min_matched=2)
            monkeypatch.setattr(search, "BROAD_MESSAGES", 3)
            first = await fresh.search("s", terms, limit=limit, min_matched=2)
            monkeypatch.setattr(search, "BROAD_MESSAGES", 10**9)
            assert described(first) == described(every), limit
        for s in (store, fresh):
            await s.close()

    asyncio.run(main())


def test_rarer_terms_and_shorter_messages_rank_first(pg_url: str) -> None:
    """BM25 over the terms a message holds: with statistics, a message with the rarer term
    ranks above one with the common term; of two with the same terms, the shorter first;
    more terms above fewer."""
    schema = fresh_schema()
    texts = ["a photo of the lake"] * 12 + [
        "zebra",
        "zebra seen at the lake with friends and family on a sunny day",
        "photo",
        "photo zebra",
    ]

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        await store.append("s", [_p(t) for t in texts], T0)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"ANALYZE {schema}.messages")
        fresh = PostgresStore(pg_url, schema=schema)
        hits = await fresh.search("s", ["photo", "zebra"], limit=5)
        assert [h.seq for h in hits[:3]] == [16, 13, 14]
        assert hits[0].score > hits[1].score > hits[2].score > hits[3].score
        for s in (store, fresh):
            await s.close()

    asyncio.run(main())
