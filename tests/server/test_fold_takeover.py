"""A killed fold worker's replacement takes its leases over at once (real processes).

``lease_seconds`` is 30 everywhere here: a session folded within a few seconds of its
worker's death was taken over, not waited out. SQLite and PostgreSQL; the fold is held
open (a summarizer that waits on a file) so the kill lands mid-fold.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.stores.base import LedgerEntry

from ..pg_database import fresh_database
from .conftest import Served, start_server, user

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for pids")

CHILD = Path(__file__).with_name("lease_child.py")
LEASE = 30.0
TAKEN_OVER_WITHIN = 10.0  # seconds; a third of the lease (measured: see the report)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'leases.db'}"
    else:
        with fresh_database("leases") as url:
            yield url


def wait_for(check: Callable[[], Any], seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds}s: {check}")


def ledger(url: str, sid: str) -> list[LedgerEntry]:
    async def read() -> list[LedgerEntry]:
        memory = AsyncMemory(url, fold="deferred")
        try:
            return await memory.store.ledger(sid, limit=None)
        finally:
            await memory.close()

    return asyncio.run(read())


def spans_once(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The committed spans, checked to follow each other without overlap (one fold each)."""
    spans = sorted(spans)
    for (_, hi), (lo, _) in itertools.pairwise(spans):
        assert lo == hi + 1, spans
    return spans


# -- a worker paused mid-fold, taken over, then resumed: its commit is refused ---------------


def start_child(url: str, owner: str, takeover: str, folder: Path, tag: str) -> subprocess.Popen[
    bytes
]:
    log = (folder / f"log-{tag}").open("wb")
    return subprocess.Popen([sys.executable, str(CHILD), url, owner, takeover, str(folder), tag],
                            stdout=log, stderr=subprocess.STDOUT)


def test_a_paused_worker_taken_over_cannot_commit(store_url: str, tmp_path: Path) -> None:
    sid = "zombie"

    async def fill() -> int:
        from .lease_child import BUDGET

        memory = AsyncMemory(store_url, policy=TokenBudget(BUDGET), fold="deferred")
        try:
            for i in range(12):
                await memory.add(sid, {"role": "user", "content": f"turn {i}: " + "plans " * 30})
            stats = await memory.stats(sid)
            assert stats is not None
            return stats.last_seq
        finally:
            await memory.close()

    last_seq = asyncio.run(fill())
    for tag in ("a", "b"):
        (tmp_path / f"hold-{tag}").touch()
    children: list[subprocess.Popen[bytes]] = []
    try:
        old = start_child(store_url, "srv/fold-0/g1", "", tmp_path, "a")
        children.append(old)
        wait_for(lambda: (tmp_path / "folding-a").exists())  # mid-fold, lease held
        os.kill(old.pid, signal.SIGSTOP)  # a zombie: not dead, not running
        began = time.monotonic()
        new = start_child(store_url, "srv/fold-0/g2", "srv/fold-0/", tmp_path, "b")
        children.append(new)
        wait_for(lambda: (tmp_path / "folding-b").exists(), seconds=LEASE)
        took = time.monotonic() - began
        assert took < TAKEN_OVER_WITHIN, f"the session waited {took:.1f}s for its lease"
        # the old worker wakes up and finishes its fold first: fenced off
        (tmp_path / "hold-a").unlink()
        os.kill(old.pid, signal.SIGCONT)
        wait_for(lambda: any(e.owner == "srv/fold-0/g1" for e in ledger(store_url, sid)))
        (tmp_path / "hold-b").unlink()
        wait_for(lambda: any(e.outcome == "committed" for e in ledger(store_url, sid)))
        for child in children:
            child.send_signal(signal.SIGTERM)
            assert child.wait(timeout=30) == 0
    finally:
        for child in children:
            if child.poll() is None:
                os.kill(child.pid, signal.SIGCONT)
                child.kill()
                child.wait()
    entries = ledger(store_url, sid)
    by_old = [e.outcome for e in entries if e.owner == "srv/fold-0/g1"]
    assert by_old == ["conflict"], entries
    committed = [e for e in entries if e.outcome == "committed"]
    assert committed and {e.owner for e in committed} == {"srv/fold-0/g2"}
    spans_once([(e.lo, e.hi) for e in committed])
    old_stats = json.loads((tmp_path / "stats-a.json").read_text())
    new_stats = json.loads((tmp_path / "stats-b.json").read_text())
    assert (old_stats["committed"], old_stats["conflicts"]) == (0, 1)
    assert new_stats["taken_over"] == 1 and new_stats["committed"] >= 1

    async def check() -> None:
        memory = AsyncMemory(store_url, fold="deferred")
        try:
            stats = await memory.stats(sid)
            assert stats is not None and stats.last_seq == last_seq  # nothing lost
            summary = await memory.store.summary(sid)
            assert summary is not None and summary.through_seq == committed[0].hi
        finally:
            await memory.close()

    asyncio.run(check())


# -- contextfold serve: kill -9 of its fold worker mid-fold -------------------------------------

SLOW_SITE = '''
import asyncio, os, pathlib
_hold = os.environ.get("LEASES_TEST_HOLD")
if _hold:
    from contextfold import engine
    _summarize = engine.AsyncMemory._summarize

    async def _held(self, request):
        hold = pathlib.Path(_hold)
        if hold.exists():
            (hold.parent / f"folding-{os.getpid()}").touch()
            while hold.exists():
                await asyncio.sleep(0.02)
        return await _summarize(self, request)

    engine.AsyncMemory._summarize = _held
'''


def chat(c: httpx.Client, s: str, turns: int) -> list[str]:
    sent = []
    for i in range(turns):
        mid = f"{s}-{i}"
        r = c.post(f"/v1/sessions/{s}/messages", json={"messages": [
            user(f"turn {i}: " + "the plan for the quarterly review " * 12, mid)]})
        assert r.status_code == 200, r.text
        sent.append(mid)
    return sent


def http_ledger(c: httpx.Client, s: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = c.get(f"/v1/sessions/{s}/ledger").json()["entries"]
    return entries


@pytest.fixture()
def held_server(store_url: str, tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_SITE)
    hold = tmp_path / "hold"
    hold.touch()
    config = {"fold": "background", "defaults": {"budget": 1200, "keep_last": 2},
              "fold_workers": {"processes": 1, "lease_seconds": LEASE, "poll_interval": 0.05,
                               "restart_pause": 0.2}}
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    served = start_server(tmp_path, store=store_url, config=config,
                          extra_env={"PYTHONPATH": path, "LEASES_TEST_HOLD": str(hold)})
    try:
        yield served, hold
    finally:
        served.stop()


def test_kill_9_mid_fold_the_replacement_folds_at_once(
    held_server: tuple[Served, Path], tmp_path: Path
) -> None:
    served, hold = held_server
    with served.client("leases") as c:
        s = f"chat-{uuid.uuid4().hex[:6]}"
        sent = chat(c, s, 30)
        marker = wait_for(lambda: next(tmp_path.glob("folding-*"), None))
        pid = int(marker.name.split("-")[1])
        os.kill(pid, signal.SIGKILL)  # mid-fold, holding the session's lease
        began = time.monotonic()
        hold.unlink()  # the replacement folds at full speed
        wait_for(lambda: any(e["outcome"] == "committed" for e in http_ledger(c, s)),
                 seconds=LEASE)
        took = time.monotonic() - began
        assert took < TAKEN_OVER_WITHIN, f"folded {took:.1f}s after the kill"
        entries = http_ledger(c, s)
        spans = spans_once([(e["lo"], e["hi"]) for e in entries if e["outcome"] == "committed"])
        page = c.get(f"/v1/sessions/{s}/messages", params={"limit": 1000}).json()
        assert sorted(m["message"]["id"] for m in page["messages"]) == sorted(sent)
        summary = c.get(f"/v1/sessions/{s}/summary").json()["summary"]
        assert summary["through_seq"] == max(hi for _, hi in spans)
    log = served.log()
    assert "exited with SIGKILL" in log and "took over 1 lease(s)" in log
    print(f"folded {took:.2f}s after kill -9 (lease {LEASE:.0f}s)")


def test_a_replacement_never_takes_another_servers_leases(tmp_path: Path) -> None:
    """Two ``serve`` processes on one PostgreSQL: server A's fold worker is killed mid-fold
    while server B's holds another session mid-fold. A's replacement takes over A's
    session at once and leaves B's alone: B's worker commits its own fold afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_SITE)
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    config = {"fold": "background", "defaults": {"budget": 1200, "keep_last": 2},
              "fold_workers": {"processes": 1, "concurrency": 1, "lease_seconds": LEASE,
                               "poll_interval": 0.05, "restart_pause": 0.2}}
    servers: dict[str, Served] = {}
    with fresh_database("leases") as url:
        try:
            for name in ("a", "b"):
                (tmp_path / name).mkdir()
                hold = tmp_path / name / "hold"
                hold.touch()
                servers[name] = start_server(tmp_path / name, store=url, config=config,
                                             extra_env={"PYTHONPATH": path,
                                                        "LEASES_TEST_HOLD": str(hold)})
            a, b = servers["a"], servers["b"]
            b.keys["t"] = a.key("t")
            held: dict[str, tuple[str, int]] = {}  # server -> (session, worker pid)
            with a.client("t") as c:
                for n in range(2):
                    s = f"chat-{n}-{uuid.uuid4().hex[:6]}"
                    chat(c, s, 30)
                    marker = wait_for(lambda: [
                        (m.parent.name, int(m.name.split("-")[1]))
                        for name in ("a", "b") if name not in held
                        for m in (tmp_path / name).glob("folding-*")
                    ])
                    (server, pid), = marker
                    held[server] = (s, pid)
                os.kill(held["a"][1], signal.SIGKILL)
                began = time.monotonic()
                (tmp_path / "a" / "hold").unlink()
                wait_for(lambda: any(e["outcome"] == "committed"
                                     for e in http_ledger(c, held["a"][0])), seconds=LEASE)
                took = time.monotonic() - began
                assert took < TAKEN_OVER_WITHIN, f"folded {took:.1f}s after the kill"
                time.sleep(2.0)  # had B's lease been taken, B's session would fold now
                assert http_ledger(c, held["b"][0]) == []
                (tmp_path / "b" / "hold").unlink()
                wait_for(lambda: http_ledger(c, held["b"][0]))
                outcomes = [e["outcome"] for e in http_ledger(c, held["b"][0])]
                assert "committed" in outcomes and "conflict" not in outcomes
            assert "took over 1 lease(s)" in a.log() and "took over" not in b.log()
            assert held["b"][1] in fold_worker_pids(b)  # B's worker was never replaced
        finally:
            for served in servers.values():
                served.stop()


def fold_worker_pids(served: Served) -> list[int]:
    from .test_fold_workers import fold_workers_of

    return fold_workers_of(served.process.pid)
