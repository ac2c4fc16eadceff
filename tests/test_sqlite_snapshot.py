"""The SQLite store's context read (one statement: the session row joined with its new
live rows) across processes that change the session under it."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path

from contextfold.messages import Message
from contextfold.stores.base import PreparedMessage
from contextfold.stores.sqlite import SQLiteStore

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)


def _items(*texts: str) -> list[PreparedMessage]:
    return [PreparedMessage(Message(role="user", content=t, id=t), 3) for t in texts]


def test_a_snapshot_sees_a_session_recreated_by_another_process(tmp_path: Path) -> None:
    """The live cache is reused only for the same session row: one deleted and created
    again elsewhere (same seqs, other messages) is read afresh, and a fold elsewhere
    drops what it folded."""

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
        later = T0.replace(second=1)
        await there.append("s", _items("a", "b", "c", "d"), later)
        snap = await here.snapshot("s")
        assert snap is not None and [m.message.id for m in snap.live] == ["a", "b", "c", "d"]
        await there.append("s", _items("e"), later)
        snap = await here.snapshot("s")
        assert snap is not None and [m.message.id for m in snap.live] == ["a", "b", "c", "d", "e"]
        await there.delete("s")
        assert await here.snapshot("s") is None
        await here.close()
        await there.close()

    asyncio.run(main())
