"""``contextfold worker``: folds what a deferred app marked due."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from contextfold.cli import cli
from contextfold.memory import Memory
from contextfold.policy import TokenBudget


def test_worker_once_folds_due_sessions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    with Memory(url, fold="deferred", policy=TokenBudget(300)) as app:
        for sid in ("alice", "bob"):
            for i in range(30):
                app.add(sid, {"role": "user", "content": f"{sid} mentions item number {i} today"})
            assert app.stats(sid).through_seq == 0  # type: ignore[union-attr]  # add did not fold

    result = CliRunner().invoke(cli, ["worker", "--store", url, "--once", "--max-tokens", "300",
                                      "--owner", "cli-test", "--json"])
    assert result.exit_code == 0, result.output
    totals = json.loads(result.output[result.output.index("{"):])
    assert totals["committed"] == 2 and totals["failed"] == 0

    with Memory(url, policy=TokenBudget(300)) as app:
        for sid in ("alice", "bob"):
            (row,) = app.ledger(sid)
            assert (row.outcome, row.owner) == ("committed", "cli-test")
            assert app.context(sid).tokens <= 300
