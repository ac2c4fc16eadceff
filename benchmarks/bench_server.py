"""HTTP service benchmark: 64 concurrent clients against a running ``contextfold serve``.

For each store (SQLite file, PostgreSQL; each with 1 and 2 server processes) it starts a
real ``contextfold serve`` on 127.0.0.1, creates an API key with ``contextfold keys
create``, and runs ``--clients`` concurrent clients (httpx, one connection each). Clients
share ``--sessions`` sessions (4 clients per session by default, so appends to one session
race). Each round a client appends one exchange (user + assistant, with message ids) and
then reads the session's context — what an app does every turn. Folds run inline
(``TokenBudget(4000)``, extractive summarizer).

Reported per store: requests/s, p50/p99 latency of appends and of context reads, errors
(any non-2xx or transport error; must be 0) and lost messages: after the run every id a
client got a 200 for is looked up in the session's stored messages (must all be there,
each once).

Usage: python benchmarks/bench_server.py [--quick] [--clients 64] [--rounds 20]
Writes benchmarks/results/server.md. The load generator runs on the same machine as the
server, so the numbers are the pair's, not the server's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

RESULTS = Path(__file__).parent / "results"
PG_ADMIN = os.environ.get("CONTEXTFOLD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@dataclass
class Run:
    label: str
    requests: int = 0
    seconds: float = 0.0
    append_ms: list[float] = field(default_factory=list)
    context_ms: list[float] = field(default_factory=list)
    errors: int = 0
    sent: int = 0
    lost: int = 0
    duplicated: int = 0
    folds: int = 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(store: str, home: Path, workers: int) -> tuple[subprocess.Popen[bytes], str, str]:
    env = {**os.environ, "CONTEXTFOLD_HOME": str(home)}
    config = home / "server.json"
    config.write_text(json.dumps({"limits": {"requests_per_second": 0,
                                             "max_messages_per_request": 1000}}))
    key = json.loads(subprocess.run(
        [sys.executable, "-m", "contextfold.cli", "keys", "create", "--tenant", "bench",
         "--db", store, "--json"], env=env, check=True, capture_output=True, text=True,
    ).stdout)["key"]
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextfold.cli", "serve", "--port", str(port), "--db", store,
         "--workers", str(workers), "--config", str(config), "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return proc, url, key
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("contextfold serve did not come up")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


async def drive(url: str, key: str, run: Run, clients: int, sessions: int, rounds: int) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    tag = uuid.uuid4().hex[:6]
    confirmed: dict[str, list[str]] = {f"bench-{tag}-{s}": [] for s in range(sessions)}
    names = list(confirmed)

    async def client(n: int) -> None:
        session = names[n % sessions]
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
            for r in range(rounds):
                ids = [f"c{n}-r{r}-u", f"c{n}-r{r}-a"]
                body = {"messages": [
                    {"role": "user", "id": ids[0],
                     "content": f"client {n} round {r}: please note item {r * 7 + n} "
                                + "and the plan for the quarterly review meeting " * 6},
                    {"role": "assistant", "id": ids[1],
                     "content": f"Noted item {r * 7 + n}; the review is on the {r % 28 + 1}th "
                                + "with the budget and the roadmap on the agenda " * 6},
                ]}
                run.sent += 2
                t0 = time.perf_counter()
                try:
                    resp = await http.post(f"/v1/sessions/{session}/messages", json=body)
                    ok = resp.status_code == 200
                    if ok and resp.json()["fold"] and resp.json()["fold"]["status"] == "committed":
                        run.folds += 1
                except httpx.HTTPError:
                    ok = False
                run.append_ms.append((time.perf_counter() - t0) * 1000)
                run.requests += 1
                if ok:
                    confirmed[session].extend(ids)
                else:
                    run.errors += 1
                t0 = time.perf_counter()
                try:
                    resp = await http.get(f"/v1/sessions/{session}/context")
                    ok = resp.status_code == 200 and resp.json()["tokens"] <= 4000
                except httpx.HTTPError:
                    ok = False
                run.context_ms.append((time.perf_counter() - t0) * 1000)
                run.requests += 1
                run.errors += not ok

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    run.seconds = time.perf_counter() - started

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        for session, ids in confirmed.items():
            stored: list[str] = []
            after = 0
            while True:
                page = (await http.get(f"/v1/sessions/{session}/messages",
                                       params={"after_seq": after, "limit": 1000})).json()
                stored += [m["message"]["id"] for m in page["messages"]]
                if page["next_after_seq"] is None:
                    break
                after = page["next_after_seq"]
            run.lost += len(set(ids) - set(stored))
            run.duplicated += len(stored) - len(set(stored))


async def drive_in_process(store: str, run: Run, clients: int, sessions: int,
                           rounds: int) -> None:
    """The same workload on ``AsyncMemory`` directly (no HTTP, no JSON): the library's cost
    on this machine at this moment, the baseline the HTTP rows compare with."""
    from contextfold import AsyncMemory, TokenBudget

    memory = AsyncMemory(store, policy=TokenBudget(4000))
    names = [f"inproc-{s}" for s in range(sessions)]

    async def client(n: int) -> None:
        session = names[n % sessions]
        for r in range(rounds):
            batch = [
                {"role": "user", "id": f"c{n}-r{r}-u",
                 "content": f"client {n} round {r}: please note item {r * 7 + n} "
                            + "and the plan for the quarterly review meeting " * 6},
                {"role": "assistant", "id": f"c{n}-r{r}-a",
                 "content": f"Noted item {r * 7 + n}; the review is on the {r % 28 + 1}th "
                            + "with the budget and the roadmap on the agenda " * 6},
            ]
            run.sent += 2
            t0 = time.perf_counter()
            result = await memory.add(session, *batch)
            run.folds += result.fold is not None and result.fold.status == "committed"
            run.append_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            await memory.context(session)
            run.context_ms.append((time.perf_counter() - t0) * 1000)
            run.requests += 2

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    run.seconds = time.perf_counter() - started
    for session in names:
        ids = [m.message.id for m in await memory.messages(session)]
        run.lost += sum(1 for n in range(clients) if names[n % sessions] == session
                        for r in range(rounds) for k in "ua"
                        if f"c{n}-r{r}-{k}" not in set(ids))
        run.duplicated += len(ids) - len(set(ids))
    await memory.close()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench(label: str, store: str, home: Path, workers: int, args: argparse.Namespace) -> Run:
    proc, url, key = start(store, home, workers)
    run = Run(label)
    try:
        asyncio.run(drive(url, key, run, args.clients, args.sessions, args.rounds))
    finally:
        stop(proc)
    return run


def pg_database() -> tuple[str, str]:
    import psycopg

    name = f"contextfold_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name, name


def drop_pg(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="8 rounds per client")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 8
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        baseline = Run("in-process AsyncMemory, SQLite (no HTTP; baseline)")
        asyncio.run(drive_in_process(f"sqlite:///{home / 'inproc.db'}", baseline, args.clients,
                                     args.sessions, args.rounds))
        runs.append(baseline)
        for workers in (1, 2):
            db = f"sqlite:///{home / f'bench{workers}.db'}"
            label = f"SQLite, {workers} process{'es' if workers > 1 else ''}"
            runs.append(bench(label, db, home, workers, args))
        if not args.no_postgres:
            for workers in (1, 2):
                url, name = pg_database()
                try:
                    runs.append(bench(f"PostgreSQL, {workers} process{'es' if workers > 1 else ''}",
                                      url, home, workers, args))
                finally:
                    drop_pg(name)
    header = ("| store | operations | ops/s | append p50 / p99 ms | context p50 / p99 ms "
              "| inline folds | errors | lost | duplicated |")
    lines = [header, "|" + "---|" * 9]
    for r in runs:
        lines.append(
            f"| {r.label} | {r.requests} | {r.requests / r.seconds:.0f} "
            f"| {pct(r.append_ms, .5):.1f} / {pct(r.append_ms, .99):.1f} "
            f"| {pct(r.context_ms, .5):.1f} / {pct(r.context_ms, .99):.1f} "
            f"| {r.folds} | {r.errors} | {r.lost} of {r.sent} | {r.duplicated} |"
        )
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    cpus = os.cpu_count()
    (RESULTS / "server.md").write_text(
        "# HTTP service under load\n\n"
        f"`python benchmarks/bench_server.py{' --quick' if args.quick else ''}`: {args.clients} "
        f"concurrent clients, {args.sessions} sessions ({args.clients // args.sessions} clients "
        f"per session), {args.rounds} rounds each of append (user + assistant, with ids) then "
        "context; inline folds with TokenBudget(4000) and the extractive summarizer. "
        "Lost = ids that got a 200 but are not stored; duplicated = ids stored twice.\n\n"
        f"Machine: {platform.platform()}, {cpus} cores shared with other work; the load "
        "generator (Python, httpx) runs on the same cores as the server, so the figures are "
        "the pair's.\n\n" + table + "\n"
    )
    if any(r.errors or r.lost or r.duplicated for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
