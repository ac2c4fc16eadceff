"""``ledger_totals(prefix)`` (what ``GET /v1/usage`` adds up for a tenant): the database's
sums over exactly the sessions whose id starts with the prefix — never a neighbouring
tenant's — equal to adding up those ledger rows one by one."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from contextfold.outcomes import Usage
from contextfold.stores.base import LedgerEntry
from contextfold.stores.rows import prefix_range
from contextfold.stores.sqlite import SQLiteStore

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)
# Tenants whose names sort right beside each other: "a/" must not take "a-b/", "a_b/",
# "ab/" or "a0/" rows.
TENANTS = ["a", "a-b", "a_b", "ab", "a0", "b", "z9"]
SESSIONS = ["s", "S.1", "x:y@z", "~tilde", "=eq", "+plus", "-", "long" * 20]
KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _entries(rng: random.Random) -> list[LedgerEntry]:
    out = []
    for _ in range(400):
        sid = f"{rng.choice(TENANTS)}/{rng.choice(SESSIONS)}"
        committed = rng.random() < 0.7
        out.append(LedgerEntry(
            sid, "committed" if committed else rng.choice(["failed", "conflict", "cancelled"]),
            lo=1, hi=3, messages_folded=rng.randint(1, 9), tokens_folded=rng.randint(10, 900),
            input_tokens=rng.randint(0, 500), output_tokens=rng.randint(0, 90),
            calls=rng.randint(0, 3), model=rng.choice(["m1", "m2", None]), started_at=T0,
        ))
    return out


def _store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "ledger.db")
    from contextfold.stores.postgres import PostgresStore

    return PostgresStore(request.getfixturevalue("pg_database"),
                         schema=f"l_{uuid.uuid4().hex[:10]}")


@pytest.mark.parametrize("kind", KINDS)
def test_totals_cover_exactly_the_prefix(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    entries = _entries(random.Random(7))

    async def main() -> None:
        store = _store(kind, tmp_path, request)
        await store.setup()
        try:
            for entry in entries:
                await store.record_attempt(entry)
            for tenant in TENANTS:
                mine = [e for e in entries if e.session_id.startswith(f"{tenant}/")]
                assert mine  # every tenant has rows, so a leak would show
                got = Usage.from_totals(await store.ledger_totals(prefix=f"{tenant}/"))
                assert got == Usage.from_ledger(mine), tenant
            assert await store.ledger_totals(prefix="nobody/") == []
            one = [e for e in entries if e.session_id == "ab/x:y@z"]
            got = Usage.from_totals(await store.ledger_totals(session_id="ab/x:y@z"))
            assert got == Usage.from_ledger(one)
            assert await store.ledger_totals(session_id="ab/x:y") == []  # not a prefix
        finally:
            await store.close()

    asyncio.run(main())


@pytest.mark.postgres
def test_postgres_totals_use_the_prefix_index(pg_database: str) -> None:
    """The prefix range is answered from the ledger's "C"-collation session index, so a
    tenant's usage costs its own rows, not the whole ledger."""
    import psycopg

    from contextfold.stores.postgres import PostgresStore
    from contextfold.stores.rows import ledger_totals_query

    schema = f"l_{uuid.uuid4().hex[:10]}"
    asyncio.run(_setup(PostgresStore(pg_database, schema=schema)))
    sql, params = ledger_totals_query(None, "a/", ordered='session_id COLLATE "C"')
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}")
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql.replace("?", "%s"), params))
    assert "ledger_session_prefix" in plan, plan


async def _setup(store: Any) -> None:
    await store.setup()
    await store.close()


def test_prefix_range_is_exactly_the_strings_with_the_prefix() -> None:
    lo, hi = prefix_range("t/")
    inside = ["t/", "t/a", "t/\U0010ffff", "t/" + "z" * 300]
    outside = ["t", "t.", "t0", "t-x/", "u/", "s/zz", "T/a"]
    assert all(lo <= s < hi for s in inside)
    assert not any(lo <= s < hi for s in outside)
    with pytest.raises(ValueError):
        prefix_range("")
