"""Scaling benchmark: batch folding and fold workers against a fake model of fixed latency.

1. ``fold_many`` over 10,000 sessions at concurrency 64, summarizer sleeping 100 ms per
   call. Ideal wall time = sessions / concurrency x latency (15.6 s); the target is at
   least 90 % of the ideal throughput. Run on MemoryStore (the engine alone), SQLite and
   PostgreSQL.
2. Fold workers on PostgreSQL: N due sessions, 1, 2 and 4 worker *processes* (each
   ``--concurrency`` folds in flight), sessions folded per second measured from the
   ledger (first fold start to last fold end), so process start-up is not counted.

Usage: python benchmarks/bench_scaling.py [--quick] [--pg URL] [--stores memory,sqlite,postgresql]
    [--no-workers]
(--pg: an admin URL; the benchmark creates and drops its own database.)
Writes benchmarks/results/scaling.md. Each fold_many row also gives the benchmark process's
CPU time per fold (the engine and the store client; PostgreSQL's own CPU is not in it) and
the 1-minute load average when the row started: on a shared machine the wall-clock
efficiency falls as the load rises, the CPU per fold much less.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from contextfold import AsyncMemory
from contextfold.policy import MessageCount
from contextfold.stores import MemoryStore
from contextfold.stores.base import PreparedMessage, Store
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.testing import FunctionSummarizer
from contextfold.worker import Worker

RESULTS = Path(__file__).parent / "results"
LATENCY = 0.100
POLICY = MessageCount(max_messages=8, keep_last=2)
MESSAGES_PER_SESSION = 10


def fake_model() -> FunctionSummarizer:
    async def summarize(request: SummaryRequest) -> SummaryResult:
        await asyncio.sleep(LATENCY)
        return SummaryResult(text=f"The user sent {len(request.messages)} short notes.",
                             input_tokens=50, output_tokens=8, calls=1)

    return FunctionSummarizer(summarize, name="fake-100ms")


async def populate(memory: AsyncMemory, sessions: int, *, due: bool) -> list[str]:
    """``sessions`` sessions of 10 messages each, written straight through the store."""
    store = await memory._ready()
    sids = [f"s{i:05d}" for i in range(sessions)]
    items: list[PreparedMessage] = memory.prepare(
        {"role": "user", "content": f"note {i}: buy milk and call Bob at 5"}
        for i in range(MESSAGES_PER_SESSION)
    )
    now = memory.clock()
    gate = asyncio.Semaphore(16)

    async def one(sid: str) -> None:
        async with gate:
            result = await store.append(sid, items, now)
            if due:
                await store.mark_due(sid, now, as_of_seq=result.stats.last_seq)

    await asyncio.gather(*(one(s) for s in sids))
    return sids


async def bench_fold_many(make_store: Callable[[], Store], sessions: int,
                          concurrency: int, redact: bool = True) -> dict[str, float]:
    """``redact``: the default for a model summarizer (its input is redacted first);
    False measures the engine without that per-message CPU cost."""
    memory = AsyncMemory(make_store(), policy=POLICY, summarizer=fake_model(), fold="manual",
                         redact_summarizer_input=redact)
    sids = await populate(memory, sessions, due=False)
    load = os.getloadavg()[0]
    cpu = time.process_time()
    batch = await memory.fold_many(sids, concurrency=concurrency)
    cpu = time.process_time() - cpu
    await memory.close()
    ideal = sessions / concurrency * LATENCY
    return {"sessions": sessions, "committed": batch.committed, "elapsed": batch.elapsed_s,
            "ideal": ideal, "efficiency": ideal / batch.elapsed_s,
            "per_s": batch.committed / batch.elapsed_s, "cpu_ms": cpu / sessions * 1000,
            "load": load}


@contextmanager
def pg_database(admin_url: str) -> Iterator[str]:
    import psycopg

    name = f"contextfold_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield admin_url.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def bench_workers(url: str, processes: int, sessions: int,
                        concurrency: int) -> dict[str, float]:
    from contextfold.stores.postgres import PostgresStore

    schema = f"w{processes}_{uuid.uuid4().hex[:6]}"
    store = PostgresStore(url, schema=schema, pool_size=16)
    memory = AsyncMemory(store, policy=POLICY, summarizer=fake_model())
    await populate(memory, sessions, due=True)
    env = {**os.environ, "CF_BENCH_SCHEMA": schema}
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, "_worker", url, str(concurrency)],
                              env=env) for _ in range(processes)]
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"worker process exited with {p.returncode}")
    wall = time.perf_counter() - started
    rows = [r for r in await store.ledger(limit=None) if r.outcome == "committed"]
    first = min(r.started_at.timestamp() for r in rows if r.started_at)
    last = max(r.started_at.timestamp() + r.latency_ms / 1000 for r in rows if r.started_at)
    await memory.close()
    ideal = processes * concurrency / LATENCY
    span = last - first
    return {"processes": processes, "folded": len(rows), "owners": len({r.owner for r in rows}),
            "span": span, "per_s": len(rows) / span, "ideal_per_s": ideal, "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller runs")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--stores", default="memory,sqlite,postgresql",
                        help="comma-separated fold_many stores (memory, sqlite, postgresql)")
    parser.add_argument("--no-workers", action="store_true", help="skip the workers table")
    args = parser.parse_args()
    chosen = args.stores.split(",")
    sessions = 2_000 if args.quick else 10_000
    concurrency = 64
    lines = ["# Scaling benchmark", "",
             f"Fake model: fixed {LATENCY * 1000:.0f} ms per call. Machine: "
             f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}.",
             "", f"## fold_many: {sessions:,} sessions, concurrency {concurrency}", "",
             "Ideal = sessions / concurrency x latency. Target: efficiency >= 90 %.", "",
             "Default configuration: the fake model counts as a remote model, so its input is "
             "redacted first (PII); the `no input redaction` rows switch that off.", "",
             "| store | configuration | committed | elapsed s | ideal s | efficiency | folds/s "
             "| CPU ms/fold | load |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    tmp = Path(tempfile.mkdtemp(prefix="cf-bench-"))
    stores: list[tuple[str, Callable[[], Store]]] = [
        ("memory", MemoryStore),
        ("sqlite", lambda: SQLiteStore(tmp / f"bench-{uuid.uuid4().hex[:8]}.db")),
    ]
    with pg_database(args.pg) as url:
        from contextfold.stores.postgres import PostgresStore

        stores.append(("postgresql", lambda: PostgresStore(
            url, pool_size=16, schema=f"fm_{uuid.uuid4().hex[:8]}")))
        for redact in (True, False):
            for name, make in stores:
                if name not in chosen:
                    continue
                r = asyncio.run(bench_fold_many(make, sessions, concurrency, redact))
                config = "default" if redact else "no input redaction"
                row = (f"| {name} | {config} | {r['committed']:,.0f} | {r['elapsed']:.1f} | "
                       f"{r['ideal']:.1f} | {r['efficiency']:.1%} | {r['per_s']:.0f} | "
                       f"{r['cpu_ms']:.2f} | {r['load']:.1f} |")
                print(row, flush=True)
                lines.append(row)
        if not args.no_workers:
            per_worker = 16
            due = 800 if args.quick else 2_000
            lines += ["", f"## Fold workers on PostgreSQL: {due:,} due sessions, "
                      f"{per_worker} folds in flight per worker process", "",
                      "Folds/s from the ledger (first fold start to last fold end); ideal = "
                      "processes x in-flight / latency.", "",
                      "| worker processes | folded | owners | span s | folds/s | ideal folds/s "
                      "| wall s (incl. start-up) |",
                      "|---:|---:|---:|---:|---:|---:|---:|"]
            for n in (1, 2, 4):
                r = asyncio.run(bench_workers(url, n, due, per_worker))
                row = (f"| {n} | {r['folded']:,.0f} | {r['owners']:.0f} | {r['span']:.1f} | "
                       f"{r['per_s']:.0f} | {r['ideal_per_s']:.0f} | {r['wall']:.1f} |")
                print(row, flush=True)
                lines.append(row)
    if args.no_workers or set(chosen) != {"memory", "sqlite", "postgresql"}:
        return  # a partial run: the rows were printed; the report keeps the full run
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scaling.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "_worker":
        from contextfold.stores.postgres import PostgresStore

        _url, _conc = sys.argv[2], int(sys.argv[3])

        async def _run() -> None:
            memory = AsyncMemory(PostgresStore(_url, schema=os.environ["CF_BENCH_SCHEMA"]),
                                 policy=POLICY, summarizer=fake_model())
            await Worker(memory, concurrency=_conc, poll_interval=0.05).run(once=True)
            await memory.close()

        asyncio.run(_run())
    else:
        main()
