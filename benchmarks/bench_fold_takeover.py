"""How long a session waits for its fold after ``kill -9`` of the fold worker folding it.

``contextfold serve`` (one fold worker, ``fold_workers.lease_seconds`` = ``--lease``) gets a
session over its budget; its fold worker's summarizer is held open (a ``sitecustomize`` on
the worker's path waits while a file exists), and the benchmark kills the worker with
SIGKILL in the middle of that fold, removes the file and times, from the kill, until the
session's first committed fold shows in its ledger over HTTP (polled every 20 ms). It also
checks that no message was lost and each span was folded once.

``--baseline SRC`` runs the same with ``contextfold serve`` from another checkout's ``src``
(e.g. the main branch, where the replacement worker waits for the dead one's lease to
expire), alternating with this checkout in the same run, on SQLite and PostgreSQL.

Usage: python benchmarks/bench_fold_takeover.py [--repeat 3] [--lease 10]
    [--baseline /work/main/src] [--no-postgres]
Writes benchmarks/results/fold_takeover.md. 127.0.0.1 only; every server is stopped and
every PostgreSQL database (``leases_bench_*``) dropped.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).parent
SRC = HERE.parent / "src"
RESULTS = HERE / "results"
PG_ADMIN = os.environ.get("CONTEXTFOLD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

HOLD_SITE = '''
import asyncio, os, pathlib
_hold = os.environ.get("BENCH_HOLD")
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def database(kind: str, tmp: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'bench.db'}"
        return
    import psycopg

    name = f"leases_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_key(url: str, src: Path) -> str:
    code = ("import sys; from contextfold.server.catalog import open_catalog; "
            "from contextfold.server.keys import create_key; c = open_catalog(sys.argv[1]); "
            "print(create_key(c, 'bench')[0]); c.close()")
    out = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(src)}, check=True, timeout=60)
    return out.stdout.strip().splitlines()[-1]


def one_run(kind: str, src: Path, lease: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-takeover-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "site").mkdir()
        (tmp / "site" / "sitecustomize.py").write_text(HOLD_SITE)
        hold = tmp / "hold"
        hold.touch()
        config = {"fold": "background", "defaults": {"budget": 1200, "keep_last": 2},
                  "fold_workers": {"processes": 1, "lease_seconds": lease,
                                   "poll_interval": 0.05}}
        (tmp / "server.json").write_text(json.dumps(config))
        with database(kind, tmp) as url:
            env = {**os.environ, "CONTEXTFOLD_HOME": str(tmp / "home"), "BENCH_HOLD": str(hold),
                   "PYTHONPATH": os.pathsep.join([str(tmp / "site"), str(src)])}
            env.pop("PROMETHEUS_MULTIPROC_DIR", None)
            port = free_port()
            log = (tmp / "serve.log").open("wb")
            server = subprocess.Popen(
                [sys.executable, "-m", "contextfold.cli", "serve", "--port", str(port), "--db",
                 url, "--config", str(tmp / "server.json"), "--log-level", "warning"],
                env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                base = f"http://127.0.0.1:{port}"
                wait(lambda: _healthy(base), 60)
                key = make_key(url, src)
                with httpx.Client(base_url=base, timeout=30,
                                  headers={"Authorization": f"Bearer {key}"}) as c:
                    return _kill_mid_fold(c, tmp, hold)
            finally:
                server.send_signal(signal.SIGTERM)
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()


def _kill_mid_fold(c: httpx.Client, tmp: Path, hold: Path) -> dict[str, Any]:
    s = f"chat-{uuid.uuid4().hex[:6]}"
    sent = []
    for i in range(30):
        mid = f"{s}-{i}"
        r = c.post(f"/v1/sessions/{s}/messages", json={"messages": [
            {"role": "user", "id": mid,
             "content": f"turn {i}: " + "the plan for the quarterly review " * 12}]})
        r.raise_for_status()
        sent.append(mid)
    marker = wait(lambda: next(tmp.glob("folding-*"), None), 60)
    os.kill(int(marker.name.split("-")[1]), signal.SIGKILL)
    began = time.monotonic()
    hold.unlink()

    def committed() -> list[tuple[int, int]]:
        entries = c.get(f"/v1/sessions/{s}/ledger").json()["entries"]
        return [(e["lo"], e["hi"]) for e in entries if e["outcome"] == "committed"]

    wait(committed, 300, step=0.02)
    took = time.monotonic() - began
    spans = sorted(committed())
    page = c.get(f"/v1/sessions/{s}/messages", params={"limit": 1000}).json()
    ids = sorted(m["message"]["id"] for m in page["messages"])
    once = all(lo == hi0 + 1 for (_, hi0), (lo, _) in itertools.pairwise(spans))
    return {"seconds": took, "lost": len(set(sent) - set(ids)), "spans_once": once}


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def wait(check: Any, seconds: float, step: float = 0.1) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(step)
    raise RuntimeError(f"not within {seconds}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lease", type=float, default=10.0)
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    kinds = ["sqlite"] if args.no_postgres else ["sqlite", "postgres"]
    variants = [("this checkout", SRC)]
    if args.baseline is not None:
        variants.insert(0, ("baseline", args.baseline.resolve()))
    load_before = os.getloadavg()[0]
    times: dict[tuple[str, str], list[float]] = {}
    problems = []
    for _ in range(args.repeat):
        for kind in kinds:
            for name, src in variants:
                got = one_run(kind, src, args.lease)
                times.setdefault((kind, name), []).append(got["seconds"])
                if got["lost"] or not got["spans_once"]:
                    problems.append((kind, name, got))
                print(f"{kind:8} {name:14} folded {got['seconds']:.2f}s after kill -9", flush=True)
    load_after = os.getloadavg()[0]
    lines = [
        "# A session's fold after `kill -9` of the fold worker folding it",
        "",
        f"`python benchmarks/bench_fold_takeover.py --repeat {args.repeat} --lease {args.lease:g}"
        + (f" --baseline {args.baseline}" if args.baseline else "")
        + ("" if not args.no_postgres else " --no-postgres") + "`; "
        f"load average {load_before:.1f} before, {load_after:.1f} after (shared 2-core machine).",
        "",
        f"Seconds from the kill until the session's first committed fold is in its ledger "
        f"(`lease_seconds` = {args.lease:g}); runs alternate between the variants.",
        "",
        "| store | serve from | runs | median s | min s | max s |",
        "|---|---|---|---|---|---|",
    ]
    for (kind, name), values in times.items():
        lines.append(f"| {kind} | {name} | {len(values)} | {statistics.median(values):.2f} | "
                     f"{min(values):.2f} | {max(values):.2f} |")
    lines += [
        "",
        "The baseline's replacement worker waits for the dead worker's lease to expire (so its "
        "time follows `lease_seconds`: 30 s by default); this checkout's replacement revokes "
        "its dead predecessor's leases before its first claim, so its time is the restart "
        "pause (`restart_pause`, 0.5 s) plus the start of a new worker process (Python and "
        "imports; most of the rest on a loaded machine) plus the fold, whatever the lease.",
    ]
    lines += ["", "Messages lost, or a span folded twice: "
              + (", ".join(f"{k}/{n}: {g}" for k, n, g in problems) if problems else "none.")]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fold_takeover.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
