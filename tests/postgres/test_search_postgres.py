"""PostgreSQL search beyond the conformance suite: the migration indexes a database made
before search existed, another text search configuration can be chosen, a bad one is a
ConfigError, and odd input never reaches the server as an error."""

from __future__ import annotations

import asyncio
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


def test_index_per_session_migrates_a_search_database(pg_url: str, monkeypatch: Any) -> None:
    """A database at migration 6 (one GIN index on ``search`` for every session) gets the
    index keyed by session, without a pending list; what it stored is found, by session."""
    schema = fresh_schema()

    async def main() -> None:
        monkeypatch.setattr(postgres_schema, "MIGRATIONS", postgres_schema.MIGRATIONS[:6])
        old = PostgresStore(pg_url, schema=schema)
        await old.setup()
        await old.append("a", [_p("ferry to Bodrum"), _p("dinner in Kas")], T0)
        await old.append("b", [_p("Bodrum castle")], T0)
        await old.close()
        assert "messages_search" in _indexes(pg_url, schema)
        monkeypatch.undo()
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        indexes = _indexes(pg_url, schema)
        assert "messages_search" not in indexes
        assert "(session_id, search)" in indexes["messages_search_session"]
        assert "fastupdate=off" in indexes["messages_search_session"]
        assert [h.seq for h in await store.search("a", ["bodrum"])] == [1]
        assert [h.seq for h in await store.search("b", ["bodrum"])] == [1]
        await store.append("b", [_p("Bodrum again")], T0)
        assert [h.seq for h in await store.search("b", ["bodrum"])] == [2, 1]
        assert [h.seq for h in await store.search("a", ["bodrum"])] == [1]
        await store.close()

    asyncio.run(main())


def test_index_per_session_without_the_extension_keeps_one_index(
    pg_url: str, monkeypatch: Any
) -> None:
    """When the server cannot create the extension, the migration still completes: the
    index on ``search`` alone stays, its pending list merged and turned off."""
    from contextfold.stores import postgres_search

    schema = fresh_schema()

    async def main() -> None:
        monkeypatch.setattr(postgres_schema, "MIGRATIONS", postgres_schema.MIGRATIONS[:6])
        old = PostgresStore(pg_url, schema=schema)
        await old.setup()
        await old.append("a", [_p("ferry to Bodrum")], T0)
        await old.close()
        monkeypatch.undo()
        monkeypatch.setattr(postgres_search, "SESSION_GIN", "no_such_extension")
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        indexes = _indexes(pg_url, schema)
        assert "messages_search_session" not in indexes
        assert "fastupdate=off" in indexes["messages_search"]
        await store.append("a", [_p("Bodrum again")], T0)
        assert [h.seq for h in await store.search("a", ["bodrum"])] == [2, 1]
        await store.close()

    asyncio.run(main())


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
    real = postgres_search.tsquery_text

    def recorded(*args: Any) -> str:
        queries.append(real(*args))
        return queries[-1]

    monkeypatch.setattr(postgres_search, "tsquery_text", recorded)
    texts = ["a photo of the great lake"] * 5 + ["a zebra photo", "a great zebra", "nothing"]

    def described(hits: list[Any]) -> list[tuple[int, float, int]]:
        return [(h.seq, h.score, h.matched) for h in hits]

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        await store.append("s", [_p(t) for t in texts], T0)
        terms = ["photo", "great", "zebra"]
        assert len(await store.search("s", terms, limit=2, min_matched=2)) == 2
        assert queries == ["('photo':* & 'great':*) | ('photo':* & 'zebra':*) | "
                           "('great':* & 'zebra':*)"]  # no statistics yet: one search
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"ANALYZE {schema}.messages")
        fresh = PostgresStore(pg_url, schema=schema)  # reads the statistics afresh
        queries.clear()
        two = await fresh.search("s", terms, limit=2, min_matched=2)
        assert sorted(h.seq for h in two) == [6, 7]
        assert queries == ["('photo':* & 'zebra':*) | ('great':* & 'zebra':*)"]
        queries.clear()
        five = await fresh.search("s", terms, limit=5, min_matched=2)
        assert len(five) == 5 and {6, 7} <= {h.seq for h in five}
        assert queries[1:] == ["('photo':* & 'great':*)"]  # then the group left out
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
