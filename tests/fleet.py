"""A fleet of appender and worker processes against one store, for the multi-process tests.

Run as ``python -m tests.fleet_proc append|work URL …`` (the tests start these as real
processes, SIGKILL workers at random moments and restart them), and :func:`run_fleet` /
:func:`check_fleet` drive and audit a whole run from the test.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from contextfold.memory import AsyncMemory
from contextfold.policy import MessageCount
from contextfold.stores.base import Store
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.testing import ConcatSummarizer, FunctionSummarizer, check_invariant
from contextfold.worker import Worker, run_worker

ROOT = Path(__file__).resolve().parent.parent
POLICY = MessageCount(max_messages=8, keep_last=2)
LEASE_SECONDS = 1.5


def _summarizer(delay: float, slow_every: int) -> FunctionSummarizer:
    """Concat summaries after a latency; about one call in ``slow_every`` stalls the whole
    process (blocking sleep: no lease renewal) past its lease, so fencing gets exercised."""
    inner = ConcatSummarizer()

    async def summarize(request: SummaryRequest) -> SummaryResult:
        if slow_every and random.randrange(slow_every) == 0:
            time.sleep(LEASE_SECONDS + 0.5)
        await asyncio.sleep(random.uniform(0, 2 * delay))
        return await inner.summarize(request)

    return FunctionSummarizer(summarize, name="fleet")


async def _append(url: str, writer: int, sessions: int, seconds: float, ack: Path) -> None:
    memory = AsyncMemory(url, fold="deferred", policy=POLICY)
    deadline = time.monotonic() + seconds
    i = 0
    with ack.open("a", buffering=1) as out:
        while time.monotonic() < deadline:
            sid = f"s{random.randrange(sessions):02d}"
            mid = f"w{writer}-{i}"
            await memory.add(sid, {"role": "user", "content": f"message {mid}", "id": mid})
            out.write(f"{sid} {mid}\n")  # acknowledged: add returned
            i += 1
            await asyncio.sleep(random.uniform(0.005, 0.03))
    await memory.close()


async def _work(url: str, owner: str, delay: float, slow_every: int, concurrency: int,
                once: bool, early_stop: list[int]) -> None:
    memory = AsyncMemory(url, policy=POLICY, summarizer=_summarizer(delay, slow_every))
    worker = Worker(memory, owner=owner, concurrency=concurrency, lease_seconds=LEASE_SECONDS,
                    poll_interval=0.05, retry_after=0.2, grace_seconds=5)
    if early_stop:
        worker.stop()
    await run_worker(worker, once=once)
    await memory.close()


def main(early_stop: list[int]) -> None:
    """``early_stop`` is non-empty if SIGTERM arrived while the process was starting."""
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["append", "work"])
    parser.add_argument("url")
    parser.add_argument("--writer", type=int, default=0)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--ack", type=Path)
    parser.add_argument("--owner", default="")
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--slow-every", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--once", action="store_true")
    a = parser.parse_args()
    if a.role == "append":
        asyncio.run(_append(a.url, a.writer, a.sessions, a.seconds, a.ack))
    else:
        asyncio.run(_work(a.url, a.owner, a.delay, a.slow_every, a.concurrency, a.once,
                          early_stop))


# -- driving a run from a test ------------------------------------------------------------


@dataclass
class FleetRun:
    ack_files: list[Path]
    kills: int = 0
    worker_exit_codes: list[int] = field(default_factory=list)


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "tests.fleet_proc", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def run_fleet(url: str, tmp: Path, *, appenders: int, workers: int, sessions: int,
              seconds: float, kill_every: tuple[float, float], stall_every: int = 0,
              seed: int = 0) -> FleetRun:
    """Appenders write for ``seconds``; meanwhile workers are SIGKILLed at random moments
    (every ``kill_every`` seconds) and restarted, and about one fold in ``stall_every``
    stalls its worker past the lease; then the workers are stopped with SIGTERM and one
    last ``--once`` worker folds whatever is still due."""
    rng = random.Random(seed)
    acks = [tmp / f"ack{w}.txt" for w in range(appenders)]
    writers = [_spawn("append", url, "--writer", str(w), "--sessions", str(sessions),
                      "--seconds", str(seconds), "--ack", str(acks[w]))
               for w in range(appenders)]
    generation = [0] * workers

    def start(n: int) -> subprocess.Popen[bytes]:
        generation[n] += 1
        return _spawn("work", url, "--owner", f"worker{n}.{generation[n]}",
                      "--slow-every", str(stall_every))

    fleet = [start(n) for n in range(workers)]
    run = FleetRun(acks)
    next_kill = time.monotonic() + rng.uniform(*kill_every)
    try:
        while any(w.poll() is None for w in writers):
            if time.monotonic() >= next_kill:
                n = rng.randrange(workers)
                fleet[n].send_signal(signal.SIGKILL)
                fleet[n].wait()
                run.kills += 1
                fleet[n] = start(n)
                next_kill = time.monotonic() + rng.uniform(*kill_every)
            time.sleep(0.05)
        for w in writers:
            _, err = w.communicate()
            assert w.returncode == 0, err.decode()
    finally:
        for proc in fleet:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in fleet:
            _, err = proc.communicate(timeout=30)
            run.worker_exit_codes.append(proc.returncode)
            assert proc.returncode == 0, (proc.returncode, err.decode())
        for w in writers:
            if w.poll() is None:
                w.kill()
                w.wait()
    time.sleep(LEASE_SECONDS)  # leases of the last SIGKILLed worker run out
    last = _spawn("work", url, "--owner", "final", "--once", "--slow-every", "0")
    _, err = last.communicate(timeout=60)
    assert last.returncode == 0, err.decode()
    return run


async def check_fleet(store: Store, run: FleetRun) -> dict[str, int]:
    """Audit a finished run; returns counts for the test to report."""
    acked: dict[str, set[str]] = defaultdict(set)
    for path in run.ack_files:
        for line in path.read_text().splitlines():
            sid, mid = line.split()
            acked[sid].add(mid)
    await store.setup()
    ledger = await store.ledger(limit=None)
    committed = sorted((e for e in ledger if e.outcome == "committed"), key=lambda e: e.id or 0)
    by_session = defaultdict(list)
    for e in committed:
        by_session[e.session_id].append(e)
    for sid, ids in acked.items():
        stats = await store.stats(sid)
        assert stats is not None, sid
        await check_invariant(store, sid)
        stored = {m.message.id for m in await store.messages(sid)}
        assert ids <= stored, f"{sid}: acknowledged but lost: {sorted(ids - stored)[:5]}"
        assert len(stored) == stats.last_seq  # each message stored once
        # Committed folds partition 1..through_seq: every message covered exactly once.
        folds = by_session[sid]
        spans = sorted((e.lo, e.hi) for e in folds)
        expected_lo = 1
        for lo, hi in spans:
            assert lo == expected_lo, f"{sid}: folds {spans} overlap or leave a gap"
            expected_lo = hi + 1
        assert expected_lo - 1 == stats.through_seq, (sid, spans, stats)
        # One worker at a time: lease tokens rise, and each fold started after the
        # previous committed one had finished.
        for a, b in itertools.pairwise(folds):
            assert a.owner and b.owner and a.lease_token and b.lease_token, (a, b)
            assert b.lease_token > a.lease_token, (a, b)
            assert a.started_at and b.started_at
            finished = a.started_at.timestamp() + a.latency_ms / 1000
            assert b.started_at.timestamp() >= finished - 0.01, (a, b)
        # Every due session was folded: the policy no longer fires and nothing is due.
        assert stats.live_count <= POLICY.max_messages, stats
    assert await store.list_due() == []
    fenced = sum(e.outcome == "conflict" and "fenced" in (e.error or "") for e in ledger)
    return {"messages": sum(len(v) for v in acked.values()), "folds": len(committed),
            "fenced": fenced, "kills": run.kills,
            "owners": len({e.owner for e in committed})}
