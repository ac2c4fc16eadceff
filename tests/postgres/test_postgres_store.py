"""PostgresStore passes the store conformance suite, plus what only a server can show."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import pytest

from contextfold import AsyncMemory
from contextfold.errors import StorageError
from contextfold.messages import Message
from contextfold.policy import MessageCount
from contextfold.stores import open_store
from contextfold.stores.base import PreparedMessage, Retention, Store
from contextfold.stores.postgres import PostgresStore
from contextfold.testing import StoreConformance, check_invariant

from .conftest import fresh_schema

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)


class TestPostgresStore(StoreConformance):
    @pytest.fixture(autouse=True)
    def _database(self, pg_url: str) -> None:
        self.url = pg_url

    def make_store(self, retention: Retention = "archive") -> Store:
        return PostgresStore(self.url, retention=retention, schema=fresh_schema())


def _msg(text: str) -> PreparedMessage:
    return PreparedMessage(Message(role="user", content=text), 3)


def test_open_store_knows_both_url_schemes(pg_url: str) -> None:
    for url in (pg_url, pg_url.replace("postgresql://", "postgres://", 1)):
        store = open_store(url)
        assert isinstance(store, PostgresStore) and store.schema == "contextfold"


def test_setup_from_many_connections_at_once(pg_url: str) -> None:
    schema = fresh_schema()

    async def main() -> None:
        stores = [PostgresStore(pg_url, schema=schema, pool_size=1) for _ in range(6)]
        try:
            await asyncio.gather(*(s.setup() for s in stores))
            await stores[0].append("s", [_msg("hi")], T0)
            assert (await stores[5].stats("s")) is not None
        finally:
            await asyncio.gather(*(s.close() for s in stores))

    asyncio.run(main())


def test_concurrent_appends_to_one_session_get_distinct_seqs(pg_url: str) -> None:
    async def main() -> None:
        store = PostgresStore(pg_url, schema=fresh_schema(), pool_size=8)
        await store.setup()
        try:
            results = await asyncio.gather(*(
                store.append("s", [_msg(f"{i}a"), _msg(f"{i}b")], T0) for i in range(40)
            ))
            seqs = sorted(s for r in results for s in r.seqs)
            assert seqs == list(range(1, 81))
            await check_invariant(store, "s")
        finally:
            await store.close()

    asyncio.run(main())


def test_unreachable_server_is_a_storage_error() -> None:
    async def main() -> None:
        store = PostgresStore("postgresql://postgres@127.0.0.1:1/nope", connect_timeout=1)
        with pytest.raises(StorageError, match="cannot connect") as info:
            await store.setup()
        assert info.value.__cause__ is not None
        await store.close()

    asyncio.run(main())


def test_password_is_redacted_from_repr() -> None:
    store = PostgresStore("postgresql://bob:s3cret@db.example/x")
    assert "s3cret" not in repr(store)


def test_sync_memory_in_deferred_mode_on_postgres(pg_url: str) -> None:
    from contextfold.memory import Memory
    from contextfold.policy import MessageCount

    schema = fresh_schema()
    store = PostgresStore(pg_url, schema=schema)
    with Memory(store, fold="deferred", policy=MessageCount(max_messages=3)) as app:
        for i in range(5):
            assert app.add("s", {"role": "user", "content": f"hello {i}"}).fold is None
        assert app.stats("s").through_seq == 0  # type: ignore[union-attr]

    async def due() -> list[str]:
        other = PostgresStore(pg_url, schema=schema)
        try:
            return [sid for sid, _ in await other.list_due()]
        finally:
            await other.close()

    assert asyncio.run(due()) == ["s"]


def test_append_does_not_wait_for_a_running_fold(pg_url: str) -> None:
    from contextfold.memory import AsyncMemory
    from contextfold.policy import MessageCount
    from contextfold.testing import ConcatSummarizer

    async def main() -> None:
        store = PostgresStore(pg_url, schema=fresh_schema())
        memory = AsyncMemory(store, fold="manual", policy=MessageCount(max_messages=3),
                             summarizer=ConcatSummarizer(delay=1.0))
        for i in range(5):
            await memory.add("s", {"role": "user", "content": f"m{i}"})
        fold = asyncio.create_task(memory.fold("s"))
        await asyncio.sleep(0.2)  # the fold is inside the summarizer call now
        for i in range(5):
            await memory.add("s", {"role": "user", "content": f"late {i}"})
        assert not fold.done()  # every append finished while the fold was still running
        outcome = await fold
        assert outcome.status == "committed" and outcome.hi == 5
        assert [m.text for m in await store.live("s")] == [f"late {i}" for i in range(5)]
        await check_invariant(store, "s")
        await memory.close()

    asyncio.run(main())


def test_lock_timeout_turns_a_stuck_lock_into_a_storage_error(pg_url: str) -> None:
    import psycopg

    schema = fresh_schema()

    async def main() -> None:
        store = PostgresStore(pg_url, schema=schema, lock_timeout=0.3)
        await store.setup()
        await store.append("s", [_msg("hi")], T0)
        async with await psycopg.AsyncConnection.connect(pg_url) as other:
            await other.execute(f'SELECT 1 FROM "{schema}".sessions WHERE session_id = %s '
                                "FOR UPDATE", ("s",))  # a transaction left open, holding the row
            with pytest.raises(StorageError, match="lock timeout") as info:
                await store.append("s", [_msg("blocked")], T0)
            assert isinstance(info.value.__cause__, psycopg.Error)
        assert [m.text for m in await store.live("s")] == ["hi"]
        await store.close()

    asyncio.run(main())


def test_a_due_deferred_add_is_one_transaction(pg_url: str) -> None:
    """The due mark is written in the append's transaction, as of its last seq."""
    class Counting(PostgresStore):
        transactions = 0

        async def _tx(self, fn: Any, *, single: bool = False) -> Any:
            self.transactions += 1
            return await super()._tx(fn, single=single)

    async def main() -> None:
        store = Counting(pg_url, schema=fresh_schema())
        memory = AsyncMemory(store, fold="deferred", policy=MessageCount(max_messages=3))
        await memory.add("s", {"role": "user", "content": "warm up"})
        try:
            for n in range(2, 7):
                before = store.transactions
                await memory.add("s", {"role": "user", "content": f"turn {n}"})
                assert store.transactions - before == 1
            await store.mark_due("s", None, as_of_seq=5)  # older than the last add's mark
            assert [s for s, _ in await store.list_due()] == ["s"]
            await store.mark_due("s", None, as_of_seq=6)
            assert await store.list_due() == []
        finally:
            await memory.close()

    asyncio.run(main())
