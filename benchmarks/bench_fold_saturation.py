"""Folds on saturated cores: what ``fold_workers.idle`` trades.

``python benchmarks/bench_fold_saturation.py`` starts ``contextfold serve`` (SQLite) with
its defaults, once with ``fold_workers.idle: true`` (Linux's SCHED_IDLE, the default) and
once with ``idle: false`` (only ``nice`` ranks the fold worker), and in each run keeps every
core busy with one CPU-bound process per core at normal priority for ``--seconds``, while
``--sessions`` clients each append a turn every ``--pause`` seconds and read the context.
Then the busy processes stop. Per run: the appends' and context reads' latency while the
cores are busy, the folds committed meanwhile, the largest live (unfolded) token count of a
session when the busy processes stop, and how long after that until every session's live
messages are back within the budget. Writes ``results/fold_saturation.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from bench_service_speed import BUDGET, Target, contextfold_server, pct, turn  # noqa: E402

BUSY = "while True: pass"


async def live_and_folds(http: httpx.AsyncClient, names: list[str]) -> tuple[int, int]:
    """The largest live token count of a session, and the folds committed in all."""
    live, folds = [], 0
    for s in names:
        ledger = (await http.get(f"/v1/sessions/{s}/ledger", params={"limit": 1000})).json()
        folds += sum(e["outcome"] == "committed" for e in ledger["entries"])
        page = (await http.get(f"/v1/sessions/{s}/messages",
                               params={"include_folded": "false", "limit": 1000})).json()
        live.append(sum(m["tokens"] for m in page["messages"]))
    return max(live), folds


async def saturated(target: Target, args: argparse.Namespace) -> dict[str, float]:
    tag = uuid.uuid4().hex[:6]
    names = [f"sat-{tag}-{n}" for n in range(args.sessions)]
    append_ms: list[float] = []
    context_ms: list[float] = []
    errors = 0
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(os.cpu_count() or 1)]
    until = time.monotonic() + args.seconds

    async def client(n: int) -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=target.url, headers=target.headers(n),
                                     timeout=60) as http:
            r = 0
            while time.monotonic() < until:
                t0 = time.perf_counter()
                resp = await http.post(target.append(names[n]), json={"messages": turn(n, r)})
                append_ms.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                view = await http.get(target.context(names[n]))
                context_ms.append((time.perf_counter() - t0) * 1000)
                errors += resp.status_code != 200 or view.status_code != 200
                errors += view.status_code == 200 and view.json()["tokens"] > BUDGET
                r += 1
                await asyncio.sleep(args.pause)

    try:
        await asyncio.gather(*(client(n) for n in range(args.sessions)))
        async with httpx.AsyncClient(base_url=target.url, headers=target.headers(0),
                                     timeout=60) as http:
            live_busy, folds_busy = await live_and_folds(http, names)
            for p in busy:
                p.kill()
            stopped = time.monotonic()
            live, _ = live_busy, folds_busy
            while live > BUDGET and time.monotonic() - stopped < 120:
                await asyncio.sleep(0.25)
                live, _ = await live_and_folds(http, names)
            caught_up = time.monotonic() - stopped if live <= BUDGET else float("inf")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    return {"turns": len(append_ms), "append_p50": pct(append_ms, 0.5),
            "append_p99": pct(append_ms, 0.99), "context_p50": pct(context_ms, 0.5),
            "context_p99": pct(context_ms, 0.99), "errors": errors, "folds": folds_busy,
            "live": live_busy, "caught_up": caught_up}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--pause", type=float, default=0.2,
                        help="seconds a client waits between turns")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for idle in (True, False):
            config = home / f"idle-{idle}.json"
            config.write_text(json.dumps({"fold_workers": {"idle": idle}}))
            store = f"sqlite:///{home / f'sat-{idle}.db'}"
            with contextfold_server(store, 1, home, args.sessions, config=config) as target:
                result = asyncio.run(saturated(target, args))
            rows.append((idle, result))
            print(f"idle={idle}: {result}", flush=True)
    load = os.getloadavg()[0]
    lines = [
        "# Folds on saturated cores: `fold_workers.idle`", "",
        f"`python benchmarks/bench_fold_saturation.py --seconds {args.seconds:g} "
        f"--sessions {args.sessions} --pause {args.pause:g}`: `contextfold serve` (SQLite, "
        f"budget {BUDGET}) while one CPU-bound process per core ({os.cpu_count()}) runs at "
        f"normal priority; {args.sessions} clients each append a turn and read the context "
        f"every {args.pause:g} s. Machine: {platform.platform()}, 1-minute load average "
        f"{load:.1f} at the end.", "",
        "| fold worker | turns | append p50 / p99 ms | context p50 / p99 ms | errors or "
        "contexts over budget | folds committed while busy | largest live tokens when the "
        "busy processes stop | seconds until all within budget after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for idle, r in rows:
        lines.append(
            f"| {'idle: true (SCHED_IDLE, nice 10)' if idle else 'idle: false (nice 10)'} "
            f"| {r['turns']} | {r['append_p50']:.1f} / {r['append_p99']:.1f} "
            f"| {r['context_p50']:.1f} / {r['context_p99']:.1f} | {r['errors']} "
            f"| {r['folds']} | {r['live']} | {r['caught_up']:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    (HERE / "results" / "fold_saturation.md").write_text(text)


if __name__ == "__main__":
    main()
