"""The SQLite store's context read (one statement: the session row joined with its new
live rows) across processes that change the session under it."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from contextfold.messages import Message
from contextfold.stores import sqlite_schema
from contextfold.stores.base import PreparedMessage
from contextfold.stores.sqlite import SQLiteStore

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)


def _items(*texts: str) -> list[PreparedMessage]:
    return [PreparedMessage(Message(role="user", content=t, id=t), 3) for t in texts]


def test_a_snapshot_sees_a_session_recreated_by_another_process(tmp_path: Path) -> None:
    """The live cache is reused only for the same generation of the session: one deleted
    and created again elsewhere at the same ``created_at`` (same seqs, other messages;
    fewer, then more than were cached) is read afresh."""

    async def main() -> None:
        here, there = SQLiteStore(tmp_path / "s.db"), SQLiteStore(tmp_path / "s.db")
        await here.setup()
        await here.append("s", _items("one", "two", "three"), T0)
        assert [m.message.id for m in (await here.snapshot("s")).live] == ["one", "two", "three"]  # type: ignore[union-attr]
        await there.delete("s")
        await there.append("s", _items("uno", "dos"), T0)
        snap = await here.snapshot("s")
        assert snap is not None and [(m.seq, m.message.id) for m in snap.live] == [
            (1, "uno"), (2, "dos")]
        await there.delete("s")  # again, now with more messages than were cached
        await there.append("s", _items("a", "b", "c", "d"), T0)
        snap = await here.snapshot("s")
        assert snap is not None and [m.message.id for m in snap.live] == ["a", "b", "c", "d"]
        await there.append("s", _items("e"), T0)
        snap = await here.snapshot("s")
        assert snap is not None and [m.message.id for m in snap.live] == ["a", "b", "c", "d", "e"]
        await there.delete("s")
        assert await here.snapshot("s") is None
        await here.close()
        await there.close()

    asyncio.run(main())


def test_sessions_made_before_generations_get_one_each(tmp_path: Path, monkeypatch: Any) -> None:
    """The migration gives the rows there already a generation each, no two alike, and
    a session created after it one no row had; running it again changes nothing."""
    path = tmp_path / "old.db"

    async def main() -> None:
        monkeypatch.setattr(sqlite_schema, "MIGRATIONS", sqlite_schema.MIGRATIONS[:6])
        old = SQLiteStore(path)
        await old.setup()
        for sid in ("a", "b", "s"):
            await old.append(sid, _items("one", "two", "three"), T0)
        await old.close()
        monkeypatch.undo()
        here, there = SQLiteStore(path), SQLiteStore(path)
        await here.setup()
        await there.setup()
        assert [m.message.id for m in (await here.snapshot("s")).live] == ["one", "two", "three"]  # type: ignore[union-attr]
        await there.delete("s")
        await there.append("s", _items("uno", "dos"), T0)
        snap = await here.snapshot("s")
        assert snap is not None and [m.message.id for m in snap.live] == ["uno", "dos"]
        await here.close()
        await there.close()

    asyncio.run(main())
    conn = sqlite3.connect(path)
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert versions == [v for v, _, _ in sqlite_schema.MIGRATIONS]
    generations = dict(conn.execute("SELECT session_id, generation FROM sessions"))
    assert len(set(generations.values())) == 3 and 0 not in generations.values()
    assert generations["s"] > max(generations["a"], generations["b"])
