"""The fold workers' diagnostic: a session left over its fold trigger without a fold for
``overdue_after_leases`` lease periods is logged once, and again when it is caught up."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from pathlib import Path

import pytest

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.server.fold_overdue import OverdueWatch
from contextfold.stores.memory import MemoryStore

from .conftest import start_server, user


def test_a_session_over_its_trigger_without_a_fold_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def body() -> None:
        store = MemoryStore()
        memory = AsyncMemory(store, policy=TokenBudget(300), fold="deferred")
        for sid in ("stuck", "folded", "small"):
            turns = 2 if sid == "small" else 12
            for i in range(turns):
                await memory.add(sid, {"role": "user", "content": f"turn {i}: " + "plans " * 30})

        async def memory_for(sid: str) -> AsyncMemory:
            return memory

        now = [0.0]
        watch = OverdueWatch(store, memory_for, after_seconds=90, clock=lambda: now[0])
        assert await watch.check() == []  # first seen over: the clock starts
        now[0] = 60
        assert await watch.check() == []
        assert (await memory.fold("folded")).status == "committed"
        now[0] = 100
        with caplog.at_level(logging.WARNING, "contextfold.server.folds"):
            assert await watch.check() == ["stuck"]  # not "folded" (it was), not "small"
            assert "session stuck has been over its fold trigger for 100s" in caplog.text
            now[0] = 300
            assert await watch.check() == []  # once
            assert watch.reported == 1
            assert (await memory.fold("stuck")).status == "committed"
            caplog.clear()
            now[0] = 330
            assert await watch.check() == []
            assert "session stuck is no longer left over its fold trigger" in caplog.text

    asyncio.run(body())


FAILING_SITE = '''
import os, pathlib
_fail = os.environ.get("LEASES_TEST_FAIL")
if _fail:
    from contextfold import engine
    from contextfold.errors import SummarizationError
    _summarize = engine.AsyncMemory._summarize

    async def _failing(self, request):
        if pathlib.Path(_fail).exists():
            raise SummarizationError("the summarizer is down (test)")
        return await _summarize(self, request)

    engine.AsyncMemory._summarize = _failing
'''


def test_serve_logs_a_session_its_folds_never_shrink(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(FAILING_SITE)
    fail = tmp_path / "fail"
    fail.touch()
    config = {"fold": "background", "defaults": {"budget": 1200, "keep_last": 2},
              "fold_workers": {"processes": 1, "lease_seconds": 1, "poll_interval": 0.05,
                               "overdue_after_leases": 2}}
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    served = start_server(tmp_path, config=config,
                          extra_env={"PYTHONPATH": path, "LEASES_TEST_FAIL": str(fail)})
    try:
        with served.client("overdue") as c:
            s = f"chat-{uuid.uuid4().hex[:6]}"
            for i in range(30):
                r = c.post(f"/v1/sessions/{s}/messages", json={"messages": [
                    user(f"turn {i}: " + "the plan for the quarterly review " * 12)]})
                assert r.status_code == 200, r.text
            wait = time.monotonic() + 30
            while "over its fold trigger" not in served.log() and time.monotonic() < wait:
                time.sleep(0.2)
            entries = c.get(f"/v1/sessions/{s}/ledger").json()["entries"]
        log = served.log()
        assert f"{s} has been over its fold trigger" in log, log[-3000:]
        assert entries and {e["outcome"] for e in entries} == {"failed"}
    finally:
        served.stop()
