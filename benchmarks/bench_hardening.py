"""Service hardening benchmark: what a client without a key, or one heavy tenant, can do
to a running ``contextfold serve`` (SQLite store; 1 and 2 server processes).

For each worker count it starts a real ``contextfold serve`` on 127.0.0.1 and measures:

- **metrics flood**: ``--flood`` keyless requests with made-up HTTP methods, then the size
  of ``/metrics``, the time to scrape it, and ``/healthz`` latency during the scrape;
- **stalled uploads**: ``--stalled`` connections that stop mid-request (half in the
  headers, half in a keyed 400 KB body of a declared 1 MB): server RSS and open sockets
  before, while held and after, and how long until the server closed them all (headers
  deadline 2 s, body deadline 3 s for the run);
- **cross-tenant latency**: a quiet tenant's context reads (p50/p90) alone, while another
  tenant sends 1,000-message appends (2 at a time, default limits), and while a keyless
  flood of 401s runs (4 connections, well-formed made-up keys) — the loads run in their
  own process, and the phases alternate (alone, appends, alone, flood, ...) so the
  machine's drift falls on every phase; with ``serve``'s default (``--fold background``:
  folds by the fold worker processes it supervises, off the request path), ``--fold inline``
  (folds inside the append) or ``--fold deferred`` (folds left to ``contextfold worker``);
- **kept-alive requests**: ms per request on one kept-alive connection (Nagle).

Usage: python benchmarks/bench_hardening.py [--quick]
Writes benchmarks/results/hardening.md. Load generator and server share the machine: only
ratios within one run mean anything.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import platform
import resource
import secrets
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.server.conftest import Served, start_server  # noqa: E402
from tests.server.slow_clients import (  # noqa: E402
    open_sockets,
    read_until_closed,
    rss_mb,
    stalled,
    upload_head,
)

RESULTS = ROOT / "benchmarks" / "results"
PARTS = ("nagle", "tenants", "stalled", "metrics")


@dataclass
class Row:
    workers: int
    values: dict[str, str] = field(default_factory=dict)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- metrics flood ----------------------------------------------------------------------


async def _flood_methods(url: str, total: int, clients: int = 8) -> None:
    async def one(n: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            for i in range(n, total, clients):
                await http.request(f"M{i:06d}", "/v1/sessions")

    await asyncio.gather(*(one(n) for n in range(clients)))


def metrics_flood(served: Served, total: int, row: Row, tmp: Path) -> None:
    before = len(httpx.get(f"{served.url}/metrics").content)
    asyncio.run(_flood_methods(served.url, total))

    async def scrape_and_probe() -> tuple[int, float, float]:
        async with httpx.AsyncClient(base_url=served.url, timeout=60) as http:
            started = time.perf_counter()
            scrape = asyncio.create_task(http.get("/metrics"))
            await asyncio.sleep(0.002)
            probe_started = time.perf_counter()
            await http.get("/healthz")
            probe = time.perf_counter() - probe_started
            body = (await scrape).content
            return len(body), time.perf_counter() - started, probe

    size, scrape_s, probe_s = asyncio.run(scrape_and_probe())
    dirs = [p for p in tmp.glob("contextfold-metrics-*")]
    multiproc = sum(f.stat().st_size for d in dirs for f in d.iterdir()) if dirs else 0
    row.values.update({
        "metrics before": f"{before / 1024:.1f} KB",
        f"metrics after {total} made-up methods": f"{size / 1024:.1f} KB",
        "scrape": f"{scrape_s * 1000:.0f} ms",
        "/healthz during scrape": f"{probe_s * 1000:.1f} ms",
        "multiprocess files": f"{multiproc / 1024:.0f} KB" if dirs else "-",
    })


# -- stalled uploads ---------------------------------------------------------------------


def stalled_uploads(served: Served, count: int, row: Row) -> None:
    pid = served.process.pid
    key = served.key("uploader")
    httpx.get(f"{served.url}/v1/sessions", headers={"Authorization": f"Bearer {key}"})
    rss0, sockets0 = rss_mb(pid), open_sockets(pid)
    half = count // 2
    socks = [stalled(served.url, b"POST /v1/sessions/s/messages HTTP/1.1\r\nHost: 1")
             for _ in range(half)]
    socks += [stalled(served.url, upload_head("/v1/sessions/s/messages", 1_000_000, key),
                      b'{"messages": [{"role": "user", "content": "' + b"x" * 400_000)
              for _ in range(count - half)]
    time.sleep(0.5)
    rss_held, sockets_held = rss_mb(pid), open_sockets(pid)
    started = time.perf_counter()
    closed = read_until_closed(socks, within=20)
    close_s = time.perf_counter() - started
    for s in socks:
        s.close()
    time.sleep(2.5)
    row.values.update({
        f"RSS idle / {count} stalled / after": f"{rss0:.0f} / {rss_held:.0f} / "
        f"{rss_mb(pid):.0f} MB",
        "server sockets idle / stalled / after": f"{sockets0} / {sockets_held} / "
        f"{open_sockets(pid)}",
        "stalled closed by server": f"{len(closed)}/{count} in {close_s:.1f} s",
    })


# -- cross-tenant latency ----------------------------------------------------------------


def _heavy_tenant(url: str, key: str, seconds: float) -> None:
    body = httpx.Request("POST", url, json={"messages": [
        {"role": "user" if j % 2 == 0 else "assistant",
         "content": f"message {j} " + "lorem ipsum dolor sit amet " * 18}
        for j in range(1000)]}).read()

    async def one() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120, headers={
                "Authorization": f"Bearer {key}", "Content-Type": "application/json"}) as http:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                r = await http.post(f"/v1/sessions/heavy-{secrets.token_hex(2)}/messages",
                                    content=body)
                if r.status_code == 429:
                    await asyncio.sleep(float(r.headers.get("retry-after", "1")))

    async def main() -> None:
        await asyncio.gather(one(), one())

    asyncio.run(main())


def _keyless_flood(url: str, key: str, seconds: float) -> None:
    async def one() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                fake = f"cfk_{secrets.token_hex(4)}_{secrets.token_urlsafe(32)}"
                await http.get("/v1/sessions", headers={"Authorization": f"Bearer {fake}"})

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(4)))

    asyncio.run(main())


def _quiet(served: Served, key: str, seconds: float) -> list[float]:
    times: list[float] = []
    with httpx.Client(base_url=served.url, timeout=60,
                      headers={"Authorization": f"Bearer {key}"}) as http:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.perf_counter()
            r = http.get("/v1/sessions/quiet/context")
            times.append((time.perf_counter() - started) * 1000)
            assert r.status_code == 200, r.text
            time.sleep(0.02)
    return times


def cross_tenant(served: Served, seconds: float, rounds: int, row: Row) -> None:
    quiet_key = served.key("quiet")
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {quiet_key}"}) as h:
        h.post("/v1/sessions/quiet/messages", json={"messages": [
            {"role": "user", "content": f"question {i} about the weather"} for i in range(20)]})
    # alone, under one load, alone, under the other, ... so the machine's own drift (other
    # jobs on it) falls on the baseline as much as on the loaded phases
    results: dict[str, list[float]] = {"alone": [], "large appends": [], "keyless flood": []}
    for _ in range(rounds):
        for name, target in (("large appends", _heavy_tenant), ("keyless flood", _keyless_flood)):
            results["alone"] += _quiet(served, quiet_key, seconds)
            load = multiprocessing.get_context("spawn").Process(
                target=target, args=(served.url, served.key("heavy"), seconds + 1.5))
            load.start()
            time.sleep(1.0)
            results[name] += _quiet(served, quiet_key, seconds)
            load.join(60)
            if load.is_alive():
                load.kill()
            time.sleep(1.0)
    base = statistics.median(results["alone"])
    for name, times in results.items():
        row.values[f"quiet p50/p90, {name}"] = (
            f"{pct(times, 0.5):.1f} / {pct(times, 0.9):.1f} ms"
            + ("" if name == "alone" else f" ({pct(times, 0.5) / base:.1f}x)")
        )


def kept_alive(served: Served, row: Row, n: int = 50) -> None:
    key = served.key("quiet")
    with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as h:
        h.get("/v1/sessions")
        started = time.perf_counter()
        for _ in range(n):
            h.get("/v1/sessions")
        row.values["kept-alive request"] = f"{(time.perf_counter() - started) / n * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, shorter runs")
    parser.add_argument("--fold", default="background",
                        choices=["background", "inline", "deferred"],
                        help="the server's fold mode for the cross-tenant rows")
    parser.add_argument("--workers", default="1,2", help="comma-separated process counts")
    parser.add_argument("--only", default=",".join(PARTS),
                        help="comma-separated parts to run")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    flood = 2000 if args.quick else 20000
    count = 300 if args.quick else 600
    seconds = 4.0 if args.quick else 10.0
    rounds = 2 if args.quick else 3
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    rows = []
    for workers in [int(w) for w in args.workers.split(",")]:
        row = Row(workers)
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            (tmp / "t").mkdir()
            # default limits: what a quiet tenant sees next to a heavy one or a flood
            served = start_server(tmp / "a", workers=workers, config={"fold": args.fold})
            try:
                if "nagle" in parts:
                    kept_alive(served, row)
                if "tenants" in parts:
                    cross_tenant(served, seconds, rounds, row)
            finally:
                served.stop()
            # no rate limit (so every stalled upload is let in), short deadlines
            served = start_server(tmp / "b", workers=workers, extra_env={"TMPDIR": str(tmp / "t")},
                                  config={"limits": {"header_timeout_seconds": 2,
                                                     "body_timeout_seconds": 3,
                                                     "requests_per_second": 0}})
            try:
                if "stalled" in parts:
                    stalled_uploads(served, count, row)
                if "metrics" in parts:
                    metrics_flood(served, flood, row, tmp / "t")
            finally:
                served.stop()
        rows.append(row)
        print(f"workers={workers} done", file=sys.stderr)
    names = list(rows[0].values)
    heads = " | ".join(f"{r.workers} worker{'s' if r.workers > 1 else ''}" for r in rows)
    lines = [f"| measure | {heads} |", "|---|" + "---|" * len(rows)]
    lines += [f"| {n} | {' | '.join(r.values.get(n, '-') for r in rows)} |" for n in names]
    table = "\n".join(lines)
    print(table)
    if parts != set(PARTS) or args.workers != "1,2" or args.fold != "background":
        return  # a partial run: no report
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hardening.md").write_text(
        "# Service hardening benchmark\n\n"
        f"`python benchmarks/bench_hardening.py{' --quick' if args.quick else ''}` on "
        f"{platform.machine()}, {multiprocessing.cpu_count()} cores, Python "
        f"{platform.python_version()}; SQLite store; default limits for the kept-alive and "
        "cross-tenant rows, no rate limit and 2 s / 3 s header / body deadlines for the "
        "stalled and metrics rows; load generator on the same machine (ratios within the run "
        "only).\n\n" + table + "\n"
    )


if __name__ == "__main__":
    main()
