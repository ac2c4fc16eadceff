"""The HTTP service at the speed of its framework: ``contextfold serve`` next to a bare app.

Each configuration runs a bare FastAPI + uvicorn app (``bare_app.py``: the same two calls
against the same database — insert two rows; select the newest 40) and ``contextfold
serve`` with its default settings (no ``--config``: background fold workers, the default
rate limit and budget), one after the other in the same run, with the same load:
``--clients`` concurrent clients (httpx, one connection each) over ``--sessions`` sessions;
each turn a client appends a user + assistant message with ids, then reads the context
(and parses it, from either server: the load generator shares the cores, so it does the
same work for both).
Every client has its own API key (tenant ``bench``), as apps of one tenant would.

Configurations: SQLite, 1 server process; PostgreSQL, 2 server processes (the bare app
gets the same number of processes). On Linux each row also has the CPU time a turn cost
(append + context, during the timed part): the server's processes, its fold workers and
the load generator; on a shared machine it moves less with the load than the rates do
(the database server's own CPU is not in it). Reported per row: operations/s, p50/p99 of appends and
of context reads, errors, lost and duplicated ids (every id that got a 200 is looked up
afterwards), and for contextfold the folds committed in the ledger (by the fold workers,
during and just after the run) and the largest live tokens of a session after the run
(bounded: a fold is due above the budget). The figures that mean something on a shared
machine are the ratios to the bare row of the same configuration: throughput (target
≥ 0.7×) and p99 of append and context (target ≤ 2×).

``--baseline SRC`` adds a third server to each configuration: ``contextfold serve`` run
from another checkout's ``src`` directory (e.g. the main branch), in the same rotation, so a
change is measured against the code before it under the same load, with ratios to the same
bare rows.

Usage: python benchmarks/bench_service_speed.py [--quick] [--clients 32] [--rounds 40] [--repeat 2]
    [--no-postgres] [--baseline PATH/TO/OTHER/src]
Writes benchmarks/results/service_speed.md. 127.0.0.1 only; every server started is
stopped; the PostgreSQL databases are created and dropped here.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).parent
RESULTS = HERE / "results"
PG_ADMIN = os.environ.get("CONTEXTFOLD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
BUDGET = 4000  # serve's default per-session budget


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
    folds: int | None = None
    max_live: int | None = None
    over_budget: int = 0
    cpu: dict[str, float] = field(default_factory=dict)  # seconds: server, folds, driver
    live: dict[str, int] = field(default_factory=dict)  # live tokens per session, after
    ledgers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def ops(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


@dataclass
class Target:
    """How the driver talks to one server: paths, headers per client, the id check."""

    url: str
    append: Callable[[str], str]
    context: Callable[[str], str]
    headers: Callable[[int], dict[str, str]]
    contextfold: bool
    pid: int = 0  # the server's process (its children: worker processes, fold workers)
    store: str = ""  # contextfold: its store URL (the state of sessions left over budget)
    log: Path | None = None  # contextfold: the server's and its fold workers' stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(proc: subprocess.Popen[bytes], url: str, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"{what} did not come up")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def bare_server(store: str, processes: int) -> Iterator[Target]:
    sys.path.insert(0, str(HERE))
    import bare_app

    bare_app.setup(store)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(HERE), "bare_app:create",
         "--factory", "--host", "127.0.0.1", "--port", str(port), "--workers", str(processes),
         "--log-level", "warning", "--no-access-log"],
        env={**os.environ, "BARE_STORE": store}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(proc, url, "the bare app")
        yield Target(url, lambda s: f"/sessions/{s}/messages", lambda s: f"/sessions/{s}/context",
                     lambda n: {}, contextfold=False, pid=proc.pid)
    finally:
        stop(proc)


@contextmanager
def contextfold_server(store: str, processes: int, home: Path, clients: int,
                       src: str | None = None, config: Path | None = None) -> Iterator[Target]:
    """``contextfold serve`` (``src``: run from that checkout's source directory;
    ``config``: a server config file, else serve's defaults)."""
    from contextfold.server.catalog import open_catalog
    from contextfold.server.keys import create_key

    catalog = open_catalog(store)
    try:
        catalog.setup()
        keys = [create_key(catalog, "bench")[0] for _ in range(clients)]
    finally:
        catalog.close()
    port = free_port()
    log = home / f"serve-{port}.log"  # warnings of the server and its fold workers
    with log.open("wb") as err:
        proc = subprocess.Popen(  # serve's defaults: no --config
            [sys.executable, "-m", "contextfold.cli", "serve", "--port", str(port), "--db",
             store, "--workers", str(processes), "--log-level", "warning",
             *(["--config", str(config)] if config else [])],
            env={**os.environ, "CONTEXTFOLD_HOME": str(home),
                 **({"PYTHONPATH": src} if src else {})},
            stdout=subprocess.DEVNULL, stderr=err,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(proc, url, "contextfold serve")
        yield Target(url, lambda s: f"/v1/sessions/{s}/messages",
                     lambda s: f"/v1/sessions/{s}/context",
                     lambda n: {"Authorization": f"Bearer {keys[n]}"}, contextfold=True,
                     pid=proc.pid, store=store, log=log)
    finally:
        stop(proc)


def turn(n: int, r: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "id": f"c{n}-r{r}-u",
         "content": f"client {n} round {r}: please note item {r * 7 + n} "
                    + "and the plan for the quarterly review meeting " * 6},
        {"role": "assistant", "id": f"c{n}-r{r}-a",
         "content": f"Noted item {r * 7 + n}; the review is on the {r % 28 + 1}th "
                    + "with the budget and the roadmap on the agenda " * 6},
    ]


async def drive(target: Target, run: Run, clients: int, sessions: int, rounds: int) -> None:
    tag = uuid.uuid4().hex[:6]
    names = [f"speed-{tag}-{s}" for s in range(sessions)]
    confirmed: dict[str, list[str]] = {s: [] for s in names}
    limits = httpx.Limits(max_connections=1)

    async def client(n: int) -> None:
        session = names[n % sessions]
        async with httpx.AsyncClient(base_url=target.url, headers=target.headers(n),
                                     timeout=60, limits=limits) as http:
            for r in range(rounds):
                body = {"messages": turn(n, r)}
                run.sent += 2
                t0 = time.perf_counter()
                try:
                    ok = (await http.post(target.append(session), json=body)).status_code == 200
                except httpx.HTTPError:
                    ok = False
                run.append_ms.append((time.perf_counter() - t0) * 1000)
                run.requests += 1
                if ok:
                    confirmed[session].extend(m["id"] for m in body["messages"])
                else:
                    run.errors += 1
                t0 = time.perf_counter()
                try:
                    resp = await http.get(target.context(session))
                    ok = resp.status_code == 200
                    if ok:  # a client reads the context it asked for: both servers' alike
                        context = resp.json()
                        if target.contextfold and context["tokens"] > BUDGET:
                            run.over_budget += 1
                except (httpx.HTTPError, ValueError):
                    ok = False
                run.context_ms.append((time.perf_counter() - t0) * 1000)
                run.requests += 1
                run.errors += not ok

    started, cpu = time.perf_counter(), cpu_seconds(target.pid)
    await asyncio.gather(*(client(n) for n in range(clients)))
    run.seconds = time.perf_counter() - started
    run.cpu = {k: v - cpu.get(k, 0.0) for k, v in cpu_seconds(target.pid).items()}
    async with httpx.AsyncClient(base_url=target.url, headers=target.headers(0),
                                 timeout=60) as http:
        for session, ids in confirmed.items():
            stored = await stored_ids(http, target, session)
            run.lost += len(set(ids) - set(stored))
            run.duplicated += len(stored) - len(set(stored))
        if target.contextfold:
            await fold_report(http, names, run)
            if run.max_live is not None and run.max_live > BUDGET:
                print(left_over_budget(target, names, run), file=sys.stderr, flush=True)
            elif target.log is not None and target.log.exists():  # restarts are news too
                for line in target.log.read_text(errors="replace").splitlines():
                    if "fold worker" in line and "exited with" in line:
                        print(f"{run.label}: {line}", file=sys.stderr, flush=True)


async def stored_ids(http: httpx.AsyncClient, target: Target, session: str) -> list[str]:
    if not target.contextfold:
        ids: list[str] = (await http.get(f"/sessions/{session}/ids")).json()
        return ids
    stored: list[str] = []
    after = 0
    while True:
        page = (await http.get(f"/v1/sessions/{session}/messages",
                               params={"after_seq": after, "limit": 1000})).json()
        stored += [m["message"]["id"] for m in page["messages"]]
        if page["next_after_seq"] is None:
            return stored
        after = page["next_after_seq"]


async def fold_report(http: httpx.AsyncClient, names: list[str], run: Run) -> None:
    """Folds committed in the ledger and the largest live tokens, once the fold workers
    have caught up (at most 20 s after the run)."""
    deadline = time.monotonic() + 20
    while True:
        live = []
        folds = 0
        run.ledgers = {}
        for session in names:
            ledger = (await http.get(f"/v1/sessions/{session}/ledger",
                                     params={"limit": 1000})).json()["entries"]
            folds += sum(e["outcome"] == "committed" for e in ledger)
            run.ledgers[session] = ledger
            page = (await http.get(f"/v1/sessions/{session}/messages",
                                   params={"include_folded": "false", "limit": 1000})).json()
            live.append(sum(m["tokens"] for m in page["messages"]))
        run.folds, run.max_live = folds, max(live)
        run.live = dict(zip(names, live, strict=True))
        if run.max_live <= BUDGET or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.5)


def left_over_budget(target: Target, names: list[str], run: Run) -> str:
    """What to look at when a session is still over the budget after the wait: its
    ledger, its due mark and lease in the store, and what the server and its fold
    workers logged."""
    lines = [f"{run.label}: sessions over the budget {BUDGET} after the run:"]
    marks = due_and_leases(target.store, [f"bench/{s}" for s in names])
    now = time.time()
    for session in names:
        if run.live.get(session, 0) <= BUDGET:
            continue
        ledger = run.ledgers.get(session, [])
        outcomes = {o: sum(e["outcome"] == o for e in ledger) for o in
                    sorted({e["outcome"] for e in ledger})}
        errors = [f"{e['outcome']}: {e.get('error')}" for e in ledger if e.get("error")][-3:]
        lines.append(f"  {session}: live tokens {run.live[session]}, ledger {outcomes} "
                     f"{errors}")
        mark = marks.get(f"bench/{session}")
        if mark is not None:
            due_at, due_seq, last_seq, through_seq, owner, expires = mark
            lines.append(
                f"    due {'never' if due_at is None else f'in {due_at - now:+.1f}s'} "
                f"(as of seq {due_seq}; last seq {last_seq}, folded through {through_seq}); "
                f"lease {owner or 'none'}"
                + ("" if expires is None else f", expires in {expires - now:+.1f}s"))
    if target.log is not None and target.log.exists():
        tail = target.log.read_text(errors="replace").splitlines()[-40:]
        lines += ["  server and fold worker log (last 40 lines):", *("    " + t for t in tail)]
    return "\n".join(lines)


def due_and_leases(store: str, ids: list[str]) -> dict[str, tuple[Any, ...]]:
    """Per store session id: due_at, due_seq, last_seq, through_seq, lease owner and
    expiry (unix seconds), read from the store's tables (SQLite or PostgreSQL)."""
    cols = "session_id, due_at, due_seq, last_seq, through_seq, lease_owner, lease_expires"
    try:
        if store.startswith("sqlite:///"):
            import sqlite3

            conn = sqlite3.connect(store.removeprefix("sqlite:///"), timeout=10)
            try:
                marks = ", ".join("?" for _ in ids)
                rows = conn.execute(
                    f"SELECT {cols} FROM sessions WHERE session_id IN ({marks})", ids
                ).fetchall()
            finally:
                conn.close()
        else:
            import psycopg

            with psycopg.connect(store) as pg:
                rows = pg.execute(
                    "SELECT session_id, extract(epoch FROM due_at), due_seq, last_seq, "
                    "through_seq, lease_owner, extract(epoch FROM lease_expires) "
                    "FROM sessions WHERE session_id = ANY(%s)", (ids,)).fetchall()
    except Exception as exc:  # a diagnostic: never fail the run over it
        return {"": (None, 0, 0, 0, f"unreadable: {exc}", None)}
    return {r[0]: (None if r[1] is None else float(r[1]), r[2], r[3], r[4], r[5],
                   None if r[6] is None else float(r[6])) for r in rows}


def describe(src: str) -> str:
    """``src`` with the commit of its checkout, when it is one."""
    try:
        commit = subprocess.run(["git", "-C", src, "log", "-1", "--format=%h %s"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"`{src}`" + (f" (commit {commit[:80]})" if commit else "")


def cpu_seconds(pid: int) -> dict[str, float]:
    """CPU seconds so far (Linux ``/proc``; empty elsewhere) of the server process ``pid``
    and its descendants ("server"), its fold workers among them ("folds"), and of this
    load generator ("driver")."""
    out = {"driver": time.process_time()}
    if not pid or not os.path.exists(f"/proc/{pid}/stat"):
        return out
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with suppress(OSError, IndexError, ValueError):
                parents[int(entry)] = int(_stat(int(entry))[1])
    tick = os.sysconf("SC_CLK_TCK")
    tree: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += [c for c, parent in parents.items() if parent == p]
    out["server"] = out["folds"] = 0.0
    for p in tree:
        try:
            fields = _stat(p)
            cmdline = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        seconds = (int(fields[11]) + int(fields[12])) / tick
        out["folds" if b"fold_workers" in cmdline else "server"] += seconds
    return out


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (state is field 0)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def pg_database() -> tuple[str, str]:
    import psycopg

    name = f"contextfold_speed_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return PG_ADMIN.rsplit("/", 1)[0] + "/" + name, name


def drop_pg(name: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def group(store: str, label: str, processes: int, home: Path,
         args: argparse.Namespace) -> list[Run]:
    """``args.repeat`` runs of each server, the order reversed every other time (bare,
    served[, baseline], [baseline,] served, bare, …), pooled: load that drifts during the
    run falls on all alike. The bare row first."""
    bare = Run(f"bare FastAPI, {label}")
    served = Run(f"contextfold serve, {label}")
    runs = [bare, served]
    if args.baseline:
        runs.append(Run(f"contextfold serve (baseline), {label}"))
    for r in range(args.repeat):
        for which in (runs if r % 2 == 0 else runs[::-1]):
            one = Run(which.label)
            if which is bare:
                with bare_server(store, processes) as target:
                    warm_then_drive(target, one, args)
            else:
                src = args.baseline if which is not served else None
                with contextfold_server(store, processes, home, args.clients, src) as target:
                    warm_then_drive(target, one, args)
            pool(which, one)
    return runs


def pool(total: Run, one: Run) -> None:
    """Add ``one`` run's counts and latencies to ``total`` (fold figures: the last run's)."""
    total.requests += one.requests
    total.seconds += one.seconds
    total.append_ms += one.append_ms
    total.context_ms += one.context_ms
    total.errors += one.errors
    total.sent += one.sent
    total.lost += one.lost
    total.duplicated += one.duplicated
    total.over_budget += one.over_budget
    for key, seconds in one.cpu.items():
        total.cpu[key] = total.cpu.get(key, 0.0) + seconds
    if one.folds is not None:
        total.folds = (total.folds or 0) + one.folds
        total.max_live = max(total.max_live or 0, one.max_live or 0)


def warm_then_drive(target: Target, run: Run, args: argparse.Namespace) -> None:
    """A few untimed turns first (connections, caches, the first queries), then the run."""
    warm = Run("warm-up")
    asyncio.run(drive(target, warm, args.clients, args.sessions, 3))
    if warm.errors or warm.lost or warm.duplicated:
        raise RuntimeError(f"the warm-up failed: {warm}")
    asyncio.run(drive(target, run, args.clients, args.sessions, args.rounds))


def row(r: Run, bare: Run | None) -> str:
    ratio = ""
    if bare is not None:
        append = pct(r.append_ms, .99) / pct(bare.append_ms, .99)
        context = pct(r.context_ms, .99) / pct(bare.context_ms, .99)
        ratio = f" ({r.ops / bare.ops:.2f}×; p99 {append:.2f}× / {context:.2f}×)"
    folds = "–" if r.folds is None else str(r.folds)
    live = "–" if r.max_live is None else str(r.max_live)
    turns = r.requests / 2
    cpu = " / ".join("–" if k not in r.cpu or (k == "folds" and r.folds is None)
                     else f"{r.cpu[k] / turns * 1000:.2f}" for k in ("server", "folds", "driver"))
    return (f"| {r.label} | {r.requests} | {r.ops:.0f}{ratio} "
            f"| {pct(r.append_ms, .5):.1f} / {pct(r.append_ms, .99):.1f} "
            f"| {pct(r.context_ms, .5):.1f} / {pct(r.context_ms, .99):.1f} "
            f"| {cpu} "
            f"| {r.errors} | {r.lost} of {r.sent} | {r.duplicated} | {folds} | {live} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs of each server per configuration, alternating the order")
    parser.add_argument("--quick", action="store_true", help="15 rounds per client, 1 run")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--baseline", metavar="SRC",
                        help="also run contextfold serve from this source directory")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.repeat = 15, 1
    groups: list[list[Run]] = []
    load = os.getloadavg()[0]
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        if not args.no_sqlite:
            groups.append(group(f"sqlite:///{home / 'speed.db'}", "SQLite, 1 process", 1, home,
                              args))
        if not args.no_postgres:
            url, name = pg_database()
            try:
                groups.append(group(url, "PostgreSQL, 2 processes", 2, home, args))
            finally:
                drop_pg(name)
    header = ("| server | requests | ops/s (vs bare; p99 append / context vs bare) "
              "| append p50 / p99 ms | context p50 / p99 ms "
              "| CPU ms per turn: server / fold workers / load generator "
              "| errors | lost | duplicated | folds committed | max live tokens after |")
    lines = [header, "|" + "---|" * 11]
    for bare, *served in groups:
        lines += [row(bare, None), *(row(s, bare) for s in served)]
    table = "\n".join(lines)
    print(table)
    over = sum(s.over_budget for _, *served in groups for s in served)
    end_load = os.getloadavg()[0]
    minutes = (time.monotonic() - started) / 60
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "service_speed.md").write_text(
        "# The HTTP service next to a bare FastAPI app\n\n"
        f"`python benchmarks/bench_service_speed.py{' --quick' if args.quick else ''}`: "
        f"{args.clients} concurrent clients over {args.sessions} sessions, {args.rounds} turns "
        "each (append user + assistant with ids, then read the context); "
        f"{args.repeat} runs of each server, the order reversed every other time, pooled. "
        "`contextfold serve` "
        "with its default settings (folds by its background fold worker; budget 4,000); "
        "the bare app inserts two rows and selects the newest 40 on the same database. "
        "Targets: ops/s ≥ 0.7× bare, p99 ≤ 2× bare. Lost = ids that got a 200 but are "
        f"not stored. Contexts over the budget: {over}.\n\n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores shared with other work "
        f"(1-minute load average {load:.1f} at the start, {end_load:.1f} at the end of "
        f"the {minutes:.0f}-minute run); the load generator runs on the same cores, so only "
        "the ratios of the same run mean anything."
        + (f" Baseline: `contextfold serve` from {describe(args.baseline)}." if args.baseline
           else "")
        + "\n\n" + table + "\n"
    )
    if any(r.errors or r.lost or r.duplicated or r.over_budget for p in groups for r in p):
        sys.exit(1)


if __name__ == "__main__":
    main()
