"""The fleet test on one machine: appender processes and one worker on a SQLite file,
the worker SIGKILLed at random moments and restarted (see tests/postgres/test_fleet.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from contextfold.stores.sqlite import SQLiteStore

from .fleet import check_fleet, run_fleet


def test_fleet_on_sqlite_with_one_killed_worker(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    run = run_fleet(f"sqlite:///{db}", tmp_path, appenders=2, workers=1, sessions=10,
                    seconds=8, kill_every=(1.5, 3.0), seed=1)

    async def audit() -> dict[str, int]:
        store = SQLiteStore(db)
        try:
            return await check_fleet(store, run)
        finally:
            await store.close()

    counts = asyncio.run(audit())
    print(counts)
    assert counts["kills"] >= 2 and counts["folds"] >= 10 and counts["owners"] >= 2
