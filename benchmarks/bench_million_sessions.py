"""A million sessions: does a request cost more when the store holds 10⁶ sessions than 10³?

Two PostgreSQL databases are seeded by a bulk path (``COPY … FROM STDIN`` of rows made from
one real session written through the library: its ``sessions`` and ``messages`` rows, and
its catalog row, copied under new ids), one with ``--small`` sessions and one with
``--large`` (default 10³ and 10⁶), all of one tenant (the worst case for its listing). Then,
alternating between the two (``--rounds`` times each, so machine load drifts over both
alike), ``contextfold serve`` with its default settings (2 processes, background folds)
serves ``--clients`` concurrent clients: each turn appends a user + assistant message to one
of the seeded sessions, reads its context, and every fourth turn lists the tenant's newest
50 sessions. Reported: p50/p99 of append, context and listing per size, and the ratio
(target: p99 at 10⁶ within 1.2× of 10³). The query plans of the per-request statements at
10⁶ sessions are written to the report (``EXPLAIN``), to show they are index lookups.

Usage: python benchmarks/bench_million_sessions.py [--quick] [--large 1000000]
    [--clients 16] [--turns 30] [--rounds 2]
Writes benchmarks/results/million_sessions.md. Creates and drops its own databases.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from bench_service_speed import (
    RESULTS,
    contextfold_server,
    drop_pg,
    pct,
    pg_database,
    turn,
)

TENANT = "bench"
TEMPLATE = "template-session"


@dataclass
class Timings:
    append: list[float] = field(default_factory=list)
    context: list[float] = field(default_factory=list)
    listing: list[float] = field(default_factory=list)
    errors: int = 0


def seed(url: str, sessions: int) -> float:
    """``sessions`` sessions of tenant ``bench`` (ids ``s0``…), two messages each, by COPY;
    returns the seconds it took."""
    import psycopg

    from contextfold import AsyncMemory
    from contextfold.server.catalog import open_catalog

    started = time.perf_counter()
    catalog = open_catalog(url)
    catalog.setup()
    catalog.close()

    async def template() -> None:
        async with AsyncMemory(url) as memory:
            await memory.add(f"{TENANT}/{TEMPLATE}", *turn(0, 0))

    asyncio.run(template())
    tid = f"{TENANT}/{TEMPLATE}".encode()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path TO contextfold, public")
        tables = {}
        for table in ("sessions", "messages"):
            cols = [r[0] for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                "AND table_schema = 'contextfold' AND column_name <> 'session_id' "
                "ORDER BY ordinal_position", (table,))]
            lines = bytearray()
            columns = ", ".join(["session_id", *cols])
            with conn.cursor().copy(
                f"COPY (SELECT {columns} FROM {table} WHERE session_id = %s ORDER BY 1) "
                "TO STDOUT", (tid.decode(),)) as copy:
                for block in copy:
                    lines += bytes(block)
            rest = [line[len(tid):] for line in bytes(lines).splitlines(keepends=True)]
            tables[table] = (columns, rest)
        now = time.time()
        for table, (columns, rest) in tables.items():
            with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                chunk = bytearray()
                for i in range(sessions):
                    sid = f"{TENANT}/s{i}".encode()
                    for line in rest:
                        chunk += sid + line
                    if len(chunk) > 1 << 20:
                        copy.write(bytes(chunk))
                        chunk.clear()
                copy.write(bytes(chunk))
        with conn.cursor().copy(
            "COPY cf_server_sessions (tenant, session_id, created_at, last_activity) "
            "FROM STDIN"
        ) as copy:
            chunk = bytearray()
            for i in range(sessions):
                when = now - 86400 + i * (86000 / sessions)
                chunk += f"{TENANT}\ts{i}\t{when}\t{when}\n".encode()
                if len(chunk) > 1 << 20:
                    copy.write(bytes(chunk))
                    chunk.clear()
            copy.write(bytes(chunk))
        conn.execute("DELETE FROM messages WHERE session_id = %s", (tid.decode(),))
        conn.execute("DELETE FROM sessions WHERE session_id = %s", (tid.decode(),))
        for table in ("sessions", "messages", "cf_server_sessions"):
            conn.execute(f"VACUUM ANALYZE {table}")
    return time.perf_counter() - started


def explain(url: str) -> str:
    """The plans of the statements a request runs, at this database's size."""
    import psycopg

    sid = f"{TENANT}/s7"
    statements = [
        ("append: lock the session", "SELECT last_seq FROM sessions WHERE session_id = %s "
         "FOR UPDATE", (sid,)),
        ("append: known ids", "SELECT client_id, seq FROM messages WHERE session_id = %s "
         "AND client_id = ANY(%s)", (sid, ["c0-r0-u"])),
        ("context: snapshot", "SELECT s.session_id, m.seq, m.body FROM sessions s LEFT JOIN "
         "messages m ON m.session_id = s.session_id AND m.seq > s.through_seq "
         "WHERE s.session_id = %s ORDER BY m.seq", (sid,)),
        ("catalog row", "SELECT settings FROM cf_server_sessions WHERE tenant = %s AND "
         "session_id = %s", (TENANT, "s7")),
        ("listing (newest 50)", "SELECT session_id FROM cf_server_sessions WHERE tenant = %s "
         "ORDER BY last_activity DESC, session_id DESC LIMIT 51", (TENANT,)),
        ("fold worker: claim due", "SELECT session_id FROM sessions WHERE due_at <= now() "
         "AND (lease_expires IS NULL OR lease_expires <= now()) ORDER BY due_at, session_id "
         "LIMIT 8 FOR UPDATE SKIP LOCKED", ()),
    ]
    out = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path TO contextfold, public")
        for label, query, params in statements:
            plan = conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {query}",
                                params).fetchall()
            out.append(f"-- {label}\n" + "\n".join(r[0] for r in plan))
    return "\n\n".join(out)


async def load(base: str, keys: list[str], sessions: int, args: argparse.Namespace,
               timings: Timings) -> None:
    hot = random.Random(sessions).sample(range(sessions), min(sessions, 64))
    tag = uuid.uuid4().hex[:6]

    async def client(n: int) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=60,
                                     headers={"Authorization": f"Bearer {keys[n]}"},
                                     limits=httpx.Limits(max_connections=1)) as http:
            for r in range(args.turns):
                session = f"s{hot[(n + r) % len(hot)]}"
                body = {"messages": [dict(m, id=f"{tag}-{m['id']}") for m in turn(n, r)]}
                for kind, call in (
                    ("append", http.post(f"/v1/sessions/{session}/messages", json=body)),
                    ("context", http.get(f"/v1/sessions/{session}/context")),
                    *([("listing", http.get("/v1/sessions", params={"limit": 50}))]
                      if r % 4 == 0 else []),
                ):
                    t0 = time.perf_counter()
                    try:
                        ok = (await call).status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    getattr(timings, kind).append((time.perf_counter() - t0) * 1000)
                    timings.errors += not ok

    await asyncio.gather(*(client(n) for n in range(args.clients)))


def keys_for(url: str, count: int) -> list[str]:
    from contextfold.server.catalog import open_catalog
    from contextfold.server.keys import create_key

    catalog = open_catalog(url)
    try:
        return [create_key(catalog, TENANT)[0] for _ in range(count)]
    finally:
        catalog.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="10⁵ sessions, 1 round")
    args = parser.parse_args()
    if args.quick:
        args.large, args.rounds, args.turns = 100_000, 1, 20
    sizes = (args.small, args.large)
    databases = {size: pg_database() for size in sizes}
    timings = {size: Timings() for size in sizes}
    seeded: dict[int, float] = {}
    load_avg = os.getloadavg()[0]
    try:
        for size, (url, _) in databases.items():
            seeded[size] = seed(url, size)
            print(f"seeded {size:,} sessions in {seeded[size]:.0f} s", flush=True)
        keys = {size: keys_for(url, args.clients) for size, (url, _) in databases.items()}
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for size in sizes if r % 2 == 0 else reversed(sizes):
                    url = databases[size][0]
                    with contextfold_server(url, 2, Path(tmp), 0) as target:
                        asyncio.run(load(target.url, keys[size], size, args, timings[size]))
                    print(f"round {r + 1}: {size:,} sessions done", flush=True)
        plans = explain(databases[args.large][0])
    finally:
        for _, name in databases.values():
            drop_pg(name)
    small, large = timings[args.small], timings[args.large]
    lines = ["| sessions | seeded in | append p50 / p99 ms | context p50 / p99 ms "
             "| listing p50 / p99 ms | errors |", "|---|---|---|---|---|---|"]
    for size in sizes:
        t = timings[size]
        lines.append(
            f"| {size:,} | {seeded[size]:.0f} s "
            f"| {pct(t.append, .5):.1f} / {pct(t.append, .99):.1f} "
            f"| {pct(t.context, .5):.1f} / {pct(t.context, .99):.1f} "
            f"| {pct(t.listing, .5):.1f} / {pct(t.listing, .99):.1f} | {t.errors} |")
    ratios = " / ".join(
        f"{kind} {pct(getattr(large, kind), .99) / pct(getattr(small, kind), .99):.2f}×"
        for kind in ("append", "context", "listing"))
    lines.append(f"\np99 at {args.large:,} vs {args.small:,} sessions: {ratios} (target ≤ 1.2×)")
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "million_sessions.md").write_text(
        "# A million sessions\n\n"
        f"`python benchmarks/bench_million_sessions.py{' --quick' if args.quick else ''}`: "
        f"PostgreSQL seeded by COPY with {args.small:,} and {args.large:,} sessions of one "
        f"tenant; `contextfold serve` (defaults, 2 processes); {args.clients} clients, "
        f"{args.turns} turns each (append + context, a listing of the newest 50 every fourth "
        f"turn) on 64 of the seeded sessions; {args.rounds} alternating rounds per size.\n\n"
        f"Machine: {platform.platform()}, {os.cpu_count()} cores shared with other work "
        f"(1-minute load {load_avg:.1f} at the start).\n\n" + table +
        f"\n\n## Query plans at {args.large:,} sessions\n\n```\n{plans}\n```\n"
    )
    if small.errors or large.errors:
        sys.exit(1)


if __name__ == "__main__":
    main()
