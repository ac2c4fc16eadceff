"""``fold: background`` (the default): appends answer without folding, the fold worker
processes ``contextfold serve`` supervises fold in the background; a killed fold worker is
started again and loses nothing, and no fold worker outlives its server (even kill -9)."""

from __future__ import annotations

import logging
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from contextfold.server.fold_workers import lower_priority

from .conftest import Served, start_server, user

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for pids")

BACKGROUND = {"fold": "background", "defaults": {"budget": 1200, "keep_last": 2},
              "fold_workers": {"processes": 1, "lease_seconds": 2, "poll_interval": 0.1}}


def fold_workers_of(pid: int) -> list[int]:
    """The live fold worker processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[1]) == pid and b"contextfold.server.fold_workers" \
                in cmdline:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(check: Callable[[], object], seconds: float = 30.0) -> object:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds}s: {check}")


def chat(c: httpx.Client, s: str, turns: int, tag: str) -> list[str]:
    sent = []
    for i in range(turns):
        ids = [f"{tag}-{i}-u", f"{tag}-{i}-a"]
        r = c.post(f"/v1/sessions/{s}/messages", json={"messages": [
            user(f"turn {i}: " + "the plan for the quarterly review " * 12, ids[0]),
            {"role": "assistant", "id": ids[1], "content": f"noted {i} " + "sure thing " * 20},
        ]})
        assert r.status_code == 200, r.text
        assert r.json()["fold"] is None  # never folded on the request path
        sent += ids
    return sent


def committed_folds(c: httpx.Client, s: str) -> int:
    entries = c.get(f"/v1/sessions/{s}/ledger").json()["entries"]
    return sum(e["outcome"] == "committed" for e in entries)


def stored_ids(c: httpx.Client, s: str) -> list[str]:
    page = c.get(f"/v1/sessions/{s}/messages", params={"limit": 1000}).json()
    return [m["message"]["id"] for m in page["messages"]]


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[Served]:
    served = start_server(tmp_path, config=BACKGROUND)
    yield served
    served.stop()


def test_appends_answer_at_once_and_the_fold_workers_fold(served: Served) -> None:
    with served.client("bg") as c:
        s = f"chat-{uuid.uuid4().hex[:6]}"
        sent = chat(c, s, 12, "a")
        view = c.get(f"/v1/sessions/{s}/context").json()
        assert view["tokens"] <= 1200  # within budget whether or not the fold has run yet
        wait_for(lambda: committed_folds(c, s) >= 1)
        summary = c.get(f"/v1/sessions/{s}/summary").json()["summary"]
        assert summary is not None and summary["through_seq"] >= 1
        view = c.get(f"/v1/sessions/{s}/context").json()
        assert view["summary"] is not None and view["tokens"] <= 1200
        assert sorted(stored_ids(c, s)) == sorted(sent)


def test_fold_workers_run_below_the_servers_cpu_priority(served: Served) -> None:
    """Folds are background work: on busy cores the server's requests come first
    (``fold_workers.nice``, 10 by default)."""
    workers = wait_for(lambda: fold_workers_of(served.process.pid))
    assert isinstance(workers, list)
    server = os.getpriority(os.PRIO_PROCESS, served.process.pid)
    for pid in workers:
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, server + 10)


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux scheduling classes")
def test_fold_workers_and_all_their_threads_run_in_the_idle_class(served: Served) -> None:
    """On busy cores a fold waits for CPU time nothing else wants (``fold_workers.idle``,
    on by default): the worker and every thread it started (summarizer, store)."""
    workers = wait_for(lambda: fold_workers_of(served.process.pid))
    assert isinstance(workers, list)
    assert os.sched_getscheduler(served.process.pid) == os.SCHED_OTHER
    for pid in workers:
        # once it is at work: the store's and the summarizer's threads have started
        threads = wait_for(lambda p=pid: [int(t) for t in os.listdir(f"/proc/{p}/task")][1:])
        assert isinstance(threads, list)
        threads.append(pid)
        assert {os.sched_getscheduler(t) for t in threads} == {os.SCHED_IDLE}


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux scheduling classes")
def test_idle_false_leaves_the_fold_workers_in_the_normal_class(tmp_path: Path) -> None:
    config = {**BACKGROUND, "fold_workers": {**BACKGROUND["fold_workers"], "idle": False}}
    served = start_server(tmp_path, config=config)
    try:
        workers = wait_for(lambda: fold_workers_of(served.process.pid))
        assert isinstance(workers, list)
        for pid in workers:
            assert os.sched_getscheduler(pid) == os.SCHED_OTHER
            assert os.getpriority(os.PRIO_PROCESS, pid) == min(
                19, os.getpriority(os.PRIO_PROCESS, served.process.pid) + 10)
    finally:
        served.stop()


def test_a_platform_refusing_the_idle_class_keeps_nice_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    niced: list[int] = []
    monkeypatch.setattr(os, "nice", lambda n: niced.append(n) or n, raising=False)
    monkeypatch.setattr(os, "SCHED_IDLE", 5, raising=False)
    monkeypatch.setattr(os, "sched_param", lambda p: p, raising=False)

    def refuse(pid: int, policy: int, param: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse, raising=False)
    with caplog.at_level(logging.WARNING, logger="contextfold.server.folds"):
        lower_priority(10, idle=True)
    assert niced == [10]
    assert "SCHED_IDLE not available" in caplog.text and "nice 10" in caplog.text
    niced.clear()
    lower_priority(0, idle=False)  # neither: nothing is touched
    assert niced == []


def test_fold_workers_share_the_servers_session_in_a_group_of_their_own(
    served: Served,
) -> None:
    """In a session of its own a worker's nice would rank it only against itself (Linux
    autogroup scheduling gives each session an equal share): it shares the server's
    session, and a terminal's Ctrl-C (to the server's process group) does not reach it."""
    workers = wait_for(lambda: fold_workers_of(served.process.pid))
    assert isinstance(workers, list)
    for pid in workers:
        assert os.getsid(pid) == os.getsid(served.process.pid)
        assert os.getpgid(pid) == pid != os.getpgid(served.process.pid)


def test_a_killed_fold_worker_is_restarted_and_loses_nothing(served: Served) -> None:
    first = wait_for(lambda: fold_workers_of(served.process.pid))
    assert isinstance(first, list) and len(first) == 1
    with served.client("bg") as c:
        s = f"chat-{uuid.uuid4().hex[:6]}"
        sent = chat(c, s, 8, "before")
        os.kill(first[0], signal.SIGKILL)  # whatever it was doing
        sent += chat(c, s, 8, "during")  # appends do not need the fold worker
        again = wait_for(lambda: [p for p in fold_workers_of(served.process.pid)
                                  if p != first[0]])
        assert isinstance(again, list) and len(again) == 1
        # a new session is folded by the new worker, and the old one (its lease taken over)
        other = f"chat-{uuid.uuid4().hex[:6]}"
        other_sent = chat(c, other, 12, "after")
        wait_for(lambda: committed_folds(c, other) >= 1)
        wait_for(lambda: committed_folds(c, s) >= 1)
        assert sorted(stored_ids(c, s)) == sorted(sent)
        assert sorted(stored_ids(c, other)) == sorted(other_sent)
    assert "exited with" in served.log()  # the supervisor said what happened


def test_kill_9_of_the_server_leaves_no_fold_worker_and_loses_nothing(
    served: Served, tmp_path: Path
) -> None:
    workers = wait_for(lambda: fold_workers_of(served.process.pid))
    assert isinstance(workers, list) and workers
    key = served.key("bg")
    s = f"chat-{uuid.uuid4().hex[:6]}"
    with served.client("bg") as c:
        sent = chat(c, s, 12, "acked")  # due for a fold, acknowledged
    served.process.kill()
    served.process.wait()
    wait_for(lambda: not any(alive(p) for p in workers), seconds=15)
    again = start_server(tmp_path, config=BACKGROUND)  # same database
    try:
        again.keys["bg"] = key
        with again.client("bg") as c:
            assert sorted(stored_ids(c, s)) == sorted(sent)
            wait_for(lambda: committed_folds(c, s) >= 1)  # its fold still happens
    finally:
        again.stop()


def test_stopping_the_server_stops_its_fold_workers(served: Served) -> None:
    workers = wait_for(lambda: fold_workers_of(served.process.pid))
    assert isinstance(workers, list) and workers
    served.stop()
    assert served.process.returncode is not None
    wait_for(lambda: not any(alive(p) for p in workers), seconds=15)


def test_fold_deferred_starts_no_fold_worker(tmp_path: Path) -> None:
    served = start_server(tmp_path, config={**BACKGROUND, "fold": "deferred"})
    try:
        time.sleep(1.0)
        assert fold_workers_of(served.process.pid) == []
    finally:
        served.stop()
