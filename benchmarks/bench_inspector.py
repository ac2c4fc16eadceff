"""Inspector benchmark: the /ui/ page and its /v1 calls with 10,000 sessions and one
100,000-message session, against a real ``contextfold serve`` on a SQLite file.

Seeds one tenant with 10,000 small sessions (written through the store, indexed in the
service's catalog as appends would) and one session of 100,000 messages folded by the
engine on its way (a fast stand-in summarizer, token-budget policy). Then times, over
HTTP, every call the page makes for the list view and the session view (median and p95
of repeated calls), with the service's own ``GET /v1/sessions`` and ``/healthz`` in the
same run as baselines; and, if a chromium is on PATH, the page itself in a browser
(navigation until the list / the chart, folds and timeline are drawn).

Usage: python benchmarks/bench_inspector.py [--quick]
Writes benchmarks/results/inspector.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from contextfold.engine import AsyncMemory
from contextfold.server.catalog import open_catalog
from contextfold.server.keys import create_key
from contextfold.server.session_settings import SessionSettings, SettingsPatch
from contextfold.server.tenancy import scoped_id
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.testing import FunctionSummarizer

RESULTS = Path(__file__).parent / "results"
TENANT = "bench"
BIG = "big-session"
BIG_SETTINGS = {"policy": "token_budget", "budget": 4000, "keep_last": 4}


def rolling(request: SummaryRequest) -> SummaryResult:
    lines = request.previous.splitlines()[-20:]
    first, last = request.messages[0].seq, request.messages[-1].seq
    lines.append(f"- messages {first}-{last}: order {first * 7} shipped to Lisbon on day {last}")
    return SummaryResult("\n".join(lines), input_tokens=400, output_tokens=60, model="fake",
                         calls=1)


async def seed(db: Path, sessions: int, big_messages: int) -> None:
    url = f"sqlite:///{db}"
    catalog = open_catalog(url)
    catalog.setup()
    store = SQLiteStore(db)
    now = time.time()
    try:
        small = AsyncMemory(store, **SessionSettings().memory_options(None), fold="manual")
        rows = []
        for i in range(sessions):
            sid = f"user-{i:05d}"
            await small.add(scoped_id(TENANT, sid),
                            {"role": "user", "content": f"hello {i}, my order is {1000 + i}"},
                            {"role": "assistant", "content": "Thanks, I have noted the order."})
            rows.append((TENANT, sid, now - i, now - i))
        catalog._run(lambda c: c.executemany(
            "INSERT INTO cf_server_sessions (tenant, session_id, created_at, last_activity)"
            " VALUES (?, ?, ?, ?)", rows))
        settings = SessionSettings().overlay(SettingsPatch.model_validate(BIG_SETTINGS))
        big = AsyncMemory(store, summarizer=FunctionSummarizer(rolling, name="fake"),
                          **settings.memory_options(None))
        batch = 20
        for start in range(0, big_messages, batch):
            await big.add(scoped_id(TENANT, BIG), *(
                {"role": "user" if (start + j) % 2 == 0 else "assistant",
                 "content": f"message {start + j}: the parcel for order {start + j} left the "
                            "warehouse and should arrive on Tuesday"}
                for j in range(min(batch, big_messages - start))))
        await catalog.put_settings(TENANT, BIG, json.dumps(BIG_SETTINGS))
        await catalog.touch(TENANT, BIG, now + 1)
    finally:
        await store.close()
        catalog.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def timed(fn: Callable[[], Any], n: int) -> tuple[float, float]:
    """Median and p95 of ``n`` calls, in ms (one warm-up call first)."""
    fn()
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def api_rows(
    c: httpx.Client, n: int, total_messages: int, sessions: int
) -> list[tuple[str, str, float, float]]:
    mid = total_messages // 2
    def get(path: str, **params: Any) -> Callable[[], Any]:
        def call() -> Any:
            res = c.get(path, params=params)
            res.raise_for_status()
            return res

        return call

    cursor = None
    for _ in range(100):  # keyset-walk to page 100 of 50 (sessions 4,951-5,000)
        cursor = c.get("/v1/inspect/sessions", params={"limit": 50, **(
            {"cursor": cursor} if cursor else {})}).json()["next_cursor"]
    s = f"/v1/sessions/{BIG}"
    versions = c.get(s + "/inspect").json()["folds"]
    cases = [
        ("baseline", "GET /healthz", get("/healthz")),
        ("baseline", "GET /v1/sessions?limit=50 (the service's list)",
         get("/v1/sessions", limit=50)),
        ("page", "GET /ui/ (HTML)", get("/ui/")),
        ("page", "GET /ui/static/inspector.js", get("/ui/static/inspector.js")),
        ("list", "GET /v1/inspect/sessions?limit=50 (first page)",
         get("/v1/inspect/sessions", limit=50)),
        ("list", "… page 101 by keyset cursor", get("/v1/inspect/sessions", limit=50,
                                                    cursor=cursor)),
        ("list", "… sort=id", get("/v1/inspect/sessions", limit=50, sort="id")),
        ("list", f"… q=0042 (id filter over {sessions + 1:,} rows)",
         get("/v1/inspect/sessions", limit=50, q="0042")),
        ("session", "GET …/inspect (overview)", get(s + "/inspect")),
        ("session", "GET …/inspect/series?limit=1000 (latest window)",
         get(s + "/inspect/series", limit=1000)),
        ("session", f"GET …/inspect/series?before_seq={mid}&limit=1000",
         get(s + "/inspect/series", limit=1000, before_seq=mid)),
        ("session", "GET …/inspect/folds?limit=50", get(s + "/inspect/folds", limit=50)),
        ("session", f"GET …/inspect/folds/{versions} (diff + fact check)",
         get(s + f"/inspect/folds/{versions}")),
        ("session", "GET …/inspect/timeline?limit=100 (first page)",
         get(s + "/inspect/timeline", limit=100)),
        ("session", f"GET …/inspect/timeline?after_seq={mid}&limit=100",
         get(s + "/inspect/timeline", limit=100, after_seq=mid)),
        ("session", "GET …/inspect/context (what the model sees)", get(s + "/inspect/context")),
    ]
    return [(group, name, *timed(fn, n)) for group, name, fn in cases]


def browser_rows(
    base: str, key: str, n: int, messages: int
) -> list[tuple[str, str, float, float]]:
    chromium = os.environ.get("CONTEXTFOLD_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        return []
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(base + "/ui/")
        page.evaluate(f"sessionStorage.setItem('contextfold.key', {json.dumps(key)})")

        def list_view() -> None:
            page.goto(base + "/ui/#/")
            page.wait_for_selector("#sessions-table tbody tr:nth-child(50) a")

        def session_view() -> None:
            page.goto(base + f"/ui/#/s/{BIG}")
            page.wait_for_selector("#chart .fold")
            page.wait_for_selector("#timeline li.msg:nth-child(100)")
            page.wait_for_selector("#folds-table tbody tr:nth-child(50)")
            page.wait_for_selector("#now-table tbody tr")

        rows.append(("browser", "list view: navigate until 50 rows drawn",
                     *timed(list_view, n)))
        rows.append(("browser", f"session view ({messages:,} messages): chart + folds + "
                     "timeline + context drawn", *timed(session_view, n)))
        browser.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1,000 sessions, 10,000 messages")
    args = parser.parse_args()
    sessions, big = (1_000, 10_000) if args.quick else (10_000, 100_000)
    n = 5 if args.quick else 20
    folder = Path(tempfile.mkdtemp(prefix="cf-bench-inspector-"))
    db = folder / "bench.db"
    t = time.perf_counter()
    asyncio.run(seed(db, sessions, big))
    seed_s = time.perf_counter() - t
    catalog = open_catalog(f"sqlite:///{db}")
    key, _ = create_key(catalog, TENANT)
    catalog.close()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "contextfold.cli", "serve", "--db", str(db),
                             "--port", str(port), "--log-level", "warning"])
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"},
                          timeout=120) as c:
            info = c.get(f"/v1/sessions/{BIG}/inspect").json()
            rows = api_rows(c, n, big, sessions)
        rows += browser_rows(base, key, max(3, n // 4), big)
    finally:
        proc.terminate()
        proc.wait(10)
    header = (f"# Inspector benchmark\n\n{sessions + 1:,} sessions of one tenant; the big session: "
              f"{info['messages']:,} messages, {info['folds']:,} folds, {info['live']} live. "
              f"Seeded in {seed_s:.0f} s. Real `contextfold serve` (1 worker) on a SQLite file; "
              f"times over HTTP on 127.0.0.1, median and p95 of {n} calls after a warm-up "
              f"(browser rows: {max(3, n // 4)} navigations). Machine: {platform.platform()}, "
              f"{os.cpu_count()} CPUs shared with other jobs (numbers are noisy; compare with the "
              f"baseline rows of the same run), Python {platform.python_version()}.\n\n")
    table = "| group | request | median ms | p95 ms |\n|---|---|---:|---:|\n" + "".join(
        f"| {g} | {name} | {med:.1f} | {p95:.1f} |\n" for g, name, med, p95 in rows)
    text = header + table
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / ("inspector-quick.md" if args.quick else "inspector.md")).write_text(text)


if __name__ == "__main__":
    main()
