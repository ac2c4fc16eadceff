"""What a due mark costs an append: ``AsyncMemory.add`` with ``fold="deferred"`` on SQLite.

With deferred folds (the service's default) an add whose session the policy wants folded
marks it due for the fold workers; under load sessions stay due until a worker catches up,
so most adds are such adds. Two sessions are driven in the same run, each by ``--adds``
sequential adds of a user + assistant message: one whose policy never fires (the
baseline) and one whose policy fires on every add (``MessageCount(max_messages=2)``, never
folded here). The figure is the ratio of their adds/s: what the due mark adds to an
append (1.0: nothing). Each pair runs ``--repeat`` times, alternating; the median is
reported.

Usage: python benchmarks/bench_due_add.py [--quick] [--adds 2000] [--repeat 5]
Writes benchmarks/results/due_add.md.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import tempfile
import time
from pathlib import Path

from contextfold import AsyncMemory
from contextfold.policy import MessageCount

RESULTS = Path(__file__).parent / "results"


async def adds_per_second(due: bool, adds: int) -> float:
    folder = Path(tempfile.mkdtemp(prefix="cf-due-add-"))
    policy = MessageCount(max_messages=2 if due else 10**9)
    memory = AsyncMemory(str(folder / "bench.db"), fold="deferred", policy=policy)
    try:
        await memory.add("s", {"role": "user", "content": "warm up"})
        start = time.perf_counter()
        for i in range(adds):
            await memory.add("s", {"role": "user", "content": f"turn {i} of the chat"},
                             {"role": "assistant", "content": f"the answer to turn {i}"})
        seconds = time.perf_counter() - start
        listed = [sid for sid, _ in await memory.store.list_due()]
        assert listed == (["s"] if due else []), listed
    finally:
        await memory.close()
    return adds / seconds


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adds", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="500 adds, 3 repeats")
    args = parser.parse_args()
    if args.quick:
        args.adds, args.repeat = 500, 3
    never, always = [], []
    for _ in range(args.repeat):
        never.append(await adds_per_second(False, args.adds))
        always.append(await adds_per_second(True, args.adds))
    base, due = statistics.median(never), statistics.median(always)
    table = "\n".join([
        "| session | adds/s (median) | vs not due |",
        "|---|---|---|",
        f"| never due | {base:,.0f} | 1.00× |",
        f"| due on every add | {due:,.0f} | {due / base:.2f}× |",
    ])
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "due_add.md").write_text(
        "# A due mark's cost to an append (SQLite, fold deferred)\n\n"
        f"`python benchmarks/bench_due_add.py{' --quick' if args.quick else ''}`: "
        f"{args.adds} adds of two messages per session, {args.repeat} alternating runs; "
        f"Python {platform.python_version()} on {platform.machine()}.\n\n{table}\n"
    )


if __name__ == "__main__":
    asyncio.run(main())
