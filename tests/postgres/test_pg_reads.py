"""PostgreSQL's read paths on a long session: the live rows are read by the primary key's
range whatever the table's statistics say, and a search hit's count of matched terms is
the engine's own, the count the other stores make in Python."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timezone
from itertools import combinations

import psycopg
import pytest

from contextfold.messages import Message
from contextfold.stores.base import PreparedMessage
from contextfold.stores.postgres import PostgresStore
from contextfold.stores.postgres_schema import SNAPSHOT_AFTER, SNAPSHOT_MANY
from contextfold.stores.postgres_search import (
    AVG_LEXEMES,
    BM25_B,
    BM25_K1,
    _length_norm,
    factored_tsquery,
    tsquery_text,
)
from contextfold.stores.search import clean_terms, index_text, matched_terms, term_matches

from .conftest import fresh_schema

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)
ROWS = 4000  # per session: two sessions, the table's statistics see each as half of it
LIVE = 5


def _long_sessions(url: str, schema: str) -> None:
    """Two sessions of ``ROWS`` messages each, all but the newest ``LIVE`` folded, the
    table analyzed (written in SQL: the read path is what is tested)."""
    body = '{"role":"user","content":"turn"}'
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}")
        for sid in ("a", "b"):
            conn.execute(
                "INSERT INTO sessions (session_id, last_seq, live_count, live_tokens, "
                "through_seq) VALUES (%s, %s, %s, %s, %s)",
                (sid, ROWS, LIVE, LIVE, ROWS - LIVE),
            )
            conn.execute(
                "INSERT INTO messages (session_id, seq, role, body, tokens, created_at) "
                "SELECT %s, g, 'user', %s, 1, now() FROM generate_series(1, %s) g",
                (sid, body, ROWS),
            )
        conn.execute("ANALYZE messages")
        conn.execute("ANALYZE sessions")


def _plan(url: str, schema: str, statement: str, params: tuple[object, ...]) -> str:
    """The generic plan of ``statement`` (the one a prepared statement ends up with) and
    the custom one, as text."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}")
        plans = []
        for mode in ("force_custom_plan", "force_generic_plan"):
            conn.execute(f"SET plan_cache_mode = {mode}")
            # the server plans a prepared statement: the same as the store's, prepared
            conn.execute(statement, params, prepare=True)
            cur = conn.execute(f"EXPLAIN {statement}", params, prepare=False)
            plans.append("\n".join(r[0] for r in cur.fetchall()))
        return "\n".join(plans)


def test_live_rows_are_read_by_the_primary_key_range(pg_url: str) -> None:
    schema = fresh_schema()

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        _long_sessions(pg_url, schema)
        snap = await store.snapshot("a")
        assert snap is not None
        assert [m.seq for m in snap.live] == list(range(ROWS - LIVE + 1, ROWS + 1))
        assert [m.seq for m in await store.live("b")] == [m.seq for m in snap.live]
        every = await store.messages("a")
        assert [m.seq for m in every] == list(range(1, ROWS + 1))
        assert [m.seq for m in await store.messages("a", after_seq=10, limit=3)] == [11, 12, 13]
        many = await store.snapshots(["a", "b", "missing"])
        assert sorted(many) == ["a", "b"]
        assert [m.seq for m in many["b"].live] == [m.seq for m in snap.live]
        await store.close()

    asyncio.run(main())
    for statement, params in ((SNAPSHOT_AFTER, (0, "a")), (SNAPSHOT_MANY, (["a", "b"],))):
        plan = _plan(pg_url, schema, statement, params)
        assert "Seq Scan on messages" not in plan, plan
        assert "messages_pkey" in plan, plan


TEXTS = [
    "Meeting with Orhan in Bodrum about the ferry schedule 2026",
    "Café au lait, crème brûlée and the Straße to the Stadtmitte",
    "IŞIK ışık isik — three spellings of one word",
    "x²y and H₂O in the lab notes, 3.14 and 1,000 units",
    "Versicherungen und Versicherungsvertrag, Donaudampfschiff",
    "नमस्ते दुनिया हिंदी में बातचीत",
    "東京で会議 and Σωκράτης φιλόσοφος",
]


@pytest.mark.parametrize("text", TEXTS)
def test_matched_terms_are_the_engines_count(pg_url: str, text: str) -> None:
    schema = fresh_schema()
    words = index_text(Message(role="user", content=text)).split()
    queries = [words[:3], words[1:], [w[:4] for w in words if len(w) >= 6] + ["nowhere"]]

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        await store.append("s", [PreparedMessage(Message(role="user", content=text), 4)], T0)
        indexed = index_text(Message(role="user", content=text))
        for terms in queries:
            terms = clean_terms(terms)
            for need in (1, 2):
                hits = await store.search("s", terms, min_matched=need, snippets=False)
                python = matched_terms(indexed, terms)
                if python >= need:
                    assert [h.matched for h in hits] == [python], (terms, need)
        await store.close()

    asyncio.run(main())


def test_fetch_reads_runs_and_scattered_seqs(pg_url: str) -> None:
    schema = fresh_schema()

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema)
        await store.setup()
        await store.append("s", [PreparedMessage(Message(role="user", content=f"turn {i}"), 2)
                                 for i in range(1, 31)], T0)
        await store.append("t", [PreparedMessage(Message(role="user", content="other"), 2)], T0)
        asked = [9, 3, 4, 5, 5, 20, 30, 31, 0, -2, 2**70, 12, 11, 10]
        got = await store.fetch("s", asked)
        assert [(m.seq, m.text) for m in got] == [
            (s, f"turn {s}") for s in (3, 4, 5, 9, 10, 11, 12, 20, 30)]
        assert await store.fetch("s", []) == []
        assert await store.fetch("missing", [1, 2]) == []
        assert [m.text for m in await store.fetch("t", [1, 2])] == ["other"]
        await store.close()

    asyncio.run(main())


def test_the_length_norm_in_float8_is_numerics_to_the_last_bit(pg_url: str) -> None:
    """The score's length normalization is computed without ``numeric``; every length
    scales a score exactly as the decimal arithmetic did (so hits rank the same)."""
    k1, b = BM25_K1, BM25_B
    decimal = f"({1 + k1 * (1 - b)} + {k1 * b / AVG_LEXEMES} * length(m.search))"
    statement = (
        f"SELECT length(m.search), (1.0::float8 * {k1 + 1} / {decimal})::text, "
        f"(1.0::float8 * {k1 + 1} / ({_length_norm()}))::text "
        "FROM (SELECT array_to_tsvector(array_agg('w' || i)) AS search "
        "FROM generate_series(0, 3000) n, generate_series(1, n) i GROUP BY n) m"
    )
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET extra_float_digits = 3")
        rows = conn.execute(statement).fetchall()
    assert len(rows) == 3000
    assert [(n, a) for n, a, _ in rows] == [(n, c) for n, _, c in rows]


def test_the_factored_query_matches_what_its_groups_match(pg_url: str) -> None:
    """Groups of terms (any group, all its terms) written factored match exactly the
    messages the groups do, prefixes included, whatever the groups share."""
    rng = random.Random(7)
    vocab = ["go", "up", "ab", "abcd", "abcdef", "zebra", "zebras", "lake", "photo"]
    cases = []
    for _ in range(300):
        terms = rng.sample(vocab, rng.randint(1, 6))
        size = rng.randint(1, min(3, len(terms)))
        groups = [g for g in combinations(terms, size) if rng.random() < 0.8] or [tuple(terms)]
        words = rng.sample(vocab, rng.randint(0, 5))
        cases.append((groups, " ".join(words)))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for groups, text in cases:
            plain, factored = tsquery_text(groups), factored_tsquery(groups)
            got = conn.execute(
                "SELECT to_tsvector('simple', %s) @@ to_tsquery('simple', %s), "
                "to_tsvector('simple', %s) @@ to_tsquery('simple', %s)",
                (text, plain, text, factored),
            ).fetchone()
            held = set(text.split())
            expected = any(
                all(any(term_matches(t, w) for w in held) for t in g) for g in groups
            )
            assert got == (expected, expected), (groups, text, factored)
