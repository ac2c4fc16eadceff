"""The PostgreSQL store reads only the live rows a process has not read before; whatever
another process does to the session in between (appends, folds, deleting it and starting it
again under the same id), the next snapshot is the session as stored."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timezone
from typing import Any

import psycopg

from contextfold import AsyncMemory, TokenBudget
from contextfold.messages import Message
from contextfold.stores import postgres_schema
from contextfold.stores.base import PreparedMessage
from contextfold.stores.postgres import PostgresStore

from .conftest import fresh_schema

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)


def msg(text: str, mid: str) -> dict[str, str]:
    return {"role": "user", "content": text + " and some more words" * 20, "id": mid}


def test_snapshots_follow_other_processes(pg_url: str) -> None:
    sid = f"live-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        policy = TokenBudget(1000, keep_last=2)
        async with AsyncMemory(pg_url, policy=policy, fold="manual") as here, \
                AsyncMemory(pg_url, policy=policy, fold="manual") as there:

            async def live_ids() -> list[str | None]:
                snap = await here.store.snapshot(sid)
                assert snap is not None
                fresh = await there.store.messages(sid, include_folded=False)
                assert [m.seq for m in snap.live] == [m.seq for m in fresh]
                return [m.message.id for m in snap.live]

            await here.add(sid, *(msg(f"a{i}", f"a{i}") for i in range(3)))
            assert await live_ids() == ["a0", "a1", "a2"]
            await there.add(sid, *(msg(f"b{i}", f"b{i}") for i in range(6)))  # elsewhere
            assert await live_ids() == ["a0", "a1", "a2"] + [f"b{i}" for i in range(6)]
            folded = await there.fold(sid, force=True)
            assert folded.status == "committed"
            left = await live_ids()  # what the fold left live: the newest, if any
            assert len(left) < 9 and left == [f"b{i}" for i in range(6)][6 - len(left):]
            await there.add(sid, msg("b6", "b6"))
            assert await live_ids() == [*left, "b6"]
            context = await here.context(sid)
            assert context.summary is not None and context.summary == await there.summary(sid)
            assert await there.delete(sid)
            assert await here.store.snapshot(sid) is None
            await there.add(sid, msg("c0", "c0"))  # the same id, a new session
            assert await live_ids() == ["c0"]
            assert await there.delete(sid)
            await there.add(sid, *(msg(f"d{i}", f"d{i}") for i in range(12)))
            assert await live_ids() == [f"d{i}" for i in range(12)]  # not the cached c0

    asyncio.run(main())


def _items(*ids: str) -> list[PreparedMessage]:
    return [PreparedMessage(Message(role="user", content=i, id=i), 3) for i in ids]


async def _live(store: PostgresStore, sid: str) -> list[str | None]:
    snap = await store.snapshot(sid)
    assert snap is not None
    return [m.message.id for m in snap.live]


def test_a_session_recreated_at_the_same_time_is_read_afresh(pg_url: str) -> None:
    """Deleted and created again by another store object at the same ``created_at`` (an
    injected clock), with fewer and then more messages than this one cached: the next
    snapshot is the new session, not the cached list or a prefix of it."""
    sid = f"again-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        here, there = PostgresStore(pg_url), PostgresStore(pg_url)
        await here.setup()
        try:
            await here.append(sid, _items("one", "two", "three"), T0)
            assert await _live(here, sid) == ["one", "two", "three"]
            assert await there.delete(sid)
            await there.append(sid, _items("uno", "dos"), T0)
            assert await _live(here, sid) == ["uno", "dos"]
            assert await there.delete(sid)
            await there.append(sid, _items("a", "b", "c", "d"), T0)
            assert await _live(here, sid) == ["a", "b", "c", "d"]
            await there.append(sid, _items("e"), T0)
            assert await _live(here, sid) == ["a", "b", "c", "d", "e"]
        finally:
            await here.close()
            await there.close()

    asyncio.run(main())


def test_sessions_made_before_generations_are_told_apart_from_their_successors(
    pg_url: str, monkeypatch: Any
) -> None:
    """The rows there before the migration keep no generation (adding it rewrites no
    row); a session created after it gets a number, so one deleted and created again is
    told apart from the old row; running the migration again changes nothing."""
    schema = fresh_schema()

    async def main() -> None:
        monkeypatch.setattr(postgres_schema, "MIGRATIONS", postgres_schema.MIGRATIONS[:8])
        old = PostgresStore(pg_url, schema=schema)
        await old.setup()
        for sid in ("a", "b", "s"):
            await old.append(sid, _items("one", "two", "three"), T0)
        await old.close()
        monkeypatch.undo()
        here, there = PostgresStore(pg_url, schema=schema), PostgresStore(pg_url, schema=schema)
        await here.setup()
        await there.setup()
        try:
            assert await _live(here, "s") == ["one", "two", "three"]
            assert await there.delete("s")
            await there.append("s", _items("uno", "dos"), T0)
            assert await _live(here, "s") == ["uno", "dos"]
        finally:
            await here.close()
            await there.close()

    asyncio.run(main())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"SET search_path = {schema}")
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations "
                                               "ORDER BY 1")]
        assert versions == [v for v, _, _ in postgres_schema.MIGRATIONS]
        generations = dict(conn.execute("SELECT session_id, generation FROM sessions"))
    assert generations["a"] is None and generations["b"] is None
    assert isinstance(generations["s"], int)
