"""Many appender and worker processes on one PostgreSQL database, workers SIGKILLed at
random moments: nothing acknowledged is lost, nothing is folded twice or by two workers
at once, and every due session ends up folded."""

from __future__ import annotations

import asyncio
from pathlib import Path

from contextfold.stores.postgres import PostgresStore

from ..fleet import check_fleet, run_fleet


def test_fleet_of_appenders_and_killed_workers(pg_url: str, tmp_path: Path) -> None:
    # The processes open the URL as users do: the default "contextfold" schema of this
    # run's own database (other tests use schemas of their own).
    run = run_fleet(pg_url, tmp_path, appenders=4, workers=3, sessions=20, seconds=20,
                    kill_every=(1.0, 3.0), stall_every=25, seed=6)

    async def audit() -> dict[str, int]:
        store = PostgresStore(pg_url)
        try:
            return await check_fleet(store, run)
        finally:
            await store.close()

    counts = asyncio.run(audit())
    print(counts)
    # the campaign did what it is for (under two busy cores fewer workers get a fold in:
    # a run here saw 2 of 3 owners; the correctness checks are in check_fleet)
    assert counts["kills"] >= 5 and counts["folds"] >= 20 and counts["owners"] >= 2
    assert counts["fenced"] >= 1  # stalled workers' folds were refused, and nothing broke
