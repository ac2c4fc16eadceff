"""SQLite specifics the conformance suite cannot see: many openers of one new file."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from contextfold.messages import Message
from contextfold.stores.base import PreparedMessage
from contextfold.stores.sqlite import SQLiteStore
from contextfold.testing.conformance import T0


def _open_and_append(
    path: Path, i: int, gate: threading.Barrier, errors: list[BaseException]
) -> None:
    async def main() -> None:
        store = SQLiteStore(path)
        gate.wait()
        try:
            await store.setup()
            item = PreparedMessage(Message(role="user", content=f"hello {i}"), 5)
            await store.append(f"s{i}", [item], T0)
        finally:
            await store.close()

    try:
        asyncio.run(main())
    except BaseException as exc:  # collected and asserted by the test
        errors.append(exc)


def test_many_stores_open_and_migrate_a_new_file_at_once(tmp_path: Path) -> None:
    """Switching a new file to WAL takes an exclusive lock SQLite does not wait for;
    concurrent openers must retry, not fail with 'database is locked'."""
    for round_ in range(5):
        path = tmp_path / f"race{round_}.db"
        errors: list[BaseException] = []
        gate = threading.Barrier(8)
        threads = [
            threading.Thread(target=_open_and_append, args=(path, i, gate, errors))
            for i in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []


def test_reads_see_the_writers_commits_at_once(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "rw.db")
        await store.setup()
        for i in range(50):
            await store.append("s", [PreparedMessage(Message(role="user", content=str(i)), 1)], T0)
            snap = await store.snapshot("s")
            assert snap is not None and [m.seq for m in snap.live][-1] == i + 1
        assert await store.delete("s")
        assert await store.snapshot("s") is None
        await store.append("s", [PreparedMessage(Message(role="user", content="again"), 1)], T0)
        snap = await store.snapshot("s")
        assert snap is not None and [m.text for m in snap.live] == ["again"]
        await store.close()

    asyncio.run(main())
