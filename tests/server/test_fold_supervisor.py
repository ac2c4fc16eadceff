"""The fold supervisor's restarts: a worker that keeps failing at start is started again
after a pause that doubles up to ``restart_pause_max``, each exit logged with its status,
and the crash loop logged as an error (real worker processes)."""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

import pytest

from contextfold.server.fold_workers import FoldSupervisor


def test_a_crash_looping_worker_is_restarted_with_growing_pauses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "server.json"
    config.write_text(json.dumps({"fold_workers": {"restart_pause": 0.1,
                                                   "restart_pause_max": 0.4}}))
    # a log level the worker cannot set: it exits at once (status 1), every time
    store = f"sqlite:///{tmp_path / 'x.db'}"
    supervisor = FoldSupervisor(store, str(config), 1, grace_seconds=5, log_level="no-such")
    with caplog.at_level(logging.WARNING, "contextfold.server.folds"):
        supervisor.start()
        try:
            deadline = time.monotonic() + 90
            while supervisor.started < 5 and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            supervisor.stop()
    assert supervisor.started >= 5
    exits = [r.getMessage() for r in caplog.records if "exited with" in r.getMessage()]
    assert len(exits) >= 4, caplog.text
    pauses = [float(m) for e in exits for m in re.findall(r"again in ([\d.]+)s", e)]
    assert pauses[:4] == [0.1, 0.2, 0.4, 0.4]
    owners = [re.search(r"/fold-0/g(\d+)\)", e) for e in exits]
    assert [int(m.group(1)) for m in owners if m][:4] == [1, 2, 3, 4]  # a new owner each time
    assert not any("SIG" in e for e in exits)  # it exited (status 1), nobody killed it
    assert any(r.levelno == logging.ERROR and "keeps failing" in r.getMessage()
               for r in caplog.records)
