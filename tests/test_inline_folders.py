"""Several OS processes append to one session and fold it inline (no workers): the fold
lease lets one process fold at a time, the others skip, so almost no summarizer call is
thrown away on a conflict — and nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from contextfold import AsyncMemory
from contextfold.testing import check_invariant

ROOT = Path(__file__).resolve().parent.parent
PROCESSES, MESSAGES = 4, 40


def run_folders(url: str, tmp: Path) -> tuple[set[str], Counter[str]]:
    outs = [tmp / f"w{w}.out" for w in range(PROCESSES)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.inline_folders", url, "shared", str(w),
             str(MESSAGES), str(out)],
            cwd=ROOT,
        )
        for w, out in enumerate(outs)
    ]
    for p in procs:
        assert p.wait(timeout=300) == 0
    acked: set[str] = set()
    outcomes: Counter[str] = Counter()
    for out in outs:
        for line in out.read_text().splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "ack":
                acked.add(rest)
            else:
                outcomes.update(json.loads(rest))
    return acked, outcomes


def audit(url: str, acked: set[str], outcomes: Counter[str]) -> dict[str, int]:
    async def main() -> dict[str, int]:
        memory = AsyncMemory(url)
        try:
            stored = await memory.messages("shared")
            ids = [m.message.id for m in stored]
            assert len(ids) == len(set(ids)) == PROCESSES * MESSAGES  # each once
            assert set(ids) == acked  # nothing acknowledged is lost
            await check_invariant(memory.store, "shared")
            rows = await memory.ledger("shared", limit=None)
            ledger = Counter(r.outcome for r in rows)
            return {**{f"ledger_{k}": v for k, v in ledger.items()},
                    **{f"add_{k}": v for k, v in outcomes.items()}, "attempts": len(rows)}
        finally:
            await memory.close()

    counts = asyncio.run(main())
    print(counts)
    assert counts.get("ledger_committed", 0) >= 4  # folding did happen (how often is timing)
    assert counts.get("ledger_failed", 0) == 0
    # a conflict is a summarizer call thrown away: at most 5% of attempts
    assert counts.get("ledger_conflict", 0) <= 0.05 * counts["attempts"]
    assert counts.get("add_skipped", 0) >= 1  # the lease did turn folders away
    return counts


def test_inline_folders_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    acked, outcomes = run_folders(url, tmp_path)
    audit(url, acked, outcomes)


@pytest.mark.postgres
def test_inline_folders_on_postgres(pg_database: str, tmp_path: Path) -> None:
    acked, outcomes = run_folders(pg_database, tmp_path)
    audit(pg_database, acked, outcomes)
