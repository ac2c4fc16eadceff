"""Engine benchmark: per-turn cost, context use, and how much the summarizer re-reads.

For each store (MemoryStore, SQLiteStore), budget (2,000 / 4,000 / 8,000 tokens) and
session length (10^2, 10^4, 10^5 turns) one session is replayed turn by turn: ``add`` one
message, then ``context()`` — what an application does every turn. The summarizer is a
fast fake (it keeps the newest sentences that fit its cap) whose own time is measured and
subtracted, so the per-turn figure is the memory layer's cost alone.

Reported:
* re-read ratio: summarizer input tokens (previous summary + folded messages) divided by
  the tokens of the folded messages. 1.0 would mean every token is read exactly once.
* context use: mean and max context tokens relative to the budget, over every turn.
* per-turn time: (wall time - summarizer time) / turns, mean, in microseconds.

Usage: python benchmarks/bench_engine.py [--quick]
Writes benchmarks/results/engine.md.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from contextfold import AsyncMemory, Message, TokenBudget
from contextfold.stores import MemoryStore
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.base import SummaryRequest, SummaryResult

RESULTS = Path(__file__).parent / "results"
WORDS = [
    "the",
    "plan",
    "meeting",
    "Paris",
    "budget",
    "42",
    "Tuesday",
    "Alice",
    "flight",
    "hotel",
    "review",
    "error",
    "deploy",
    "invoice",
    "garden",
    "piano",
    "recipe",
    "marathon",
]


def make_turns(n: int, seed: int = 7) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 90)))
        out.append(Message(role="user" if i % 2 == 0 else "assistant", content=f"{i}: {words}"))
    return out


class TimedFakeSummarizer:
    """Keeps the newest words that fit the cap; records its own time and input tokens."""

    name = "fake"

    def __init__(self) -> None:
        self.seconds = 0.0
        self.input_tokens = 0
        self.folded_tokens = 0

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        t0 = time.perf_counter()
        prev_tokens = request.counter.count(request.previous)
        folded = sum(m.tokens for m in request.messages)
        self.input_tokens += prev_tokens + folded
        self.folded_tokens += folded
        words = (request.previous + " " + " ".join(m.text for m in request.messages)).split()
        keep = words[-max(1, request.max_tokens // 2) :]
        while request.counter.count(" ".join(keep)) > request.max_tokens:
            keep = keep[len(keep) // 4 + 1 :]
        self.seconds += time.perf_counter() - t0
        return SummaryResult(" ".join(keep) or "-", calls=1)


async def run_one(store_name: str, budget: int, turns: list[Message]) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="cf-bench-"))
    store = MemoryStore() if store_name == "memory" else SQLiteStore(tmp / "bench.db")
    summarizer = TimedFakeSummarizer()
    memory = AsyncMemory(store, summarizer=summarizer, policy=TokenBudget(budget))
    uses: list[float] = []
    t0 = time.perf_counter()
    for msg in turns:
        await memory.add("s", msg)
        ctx = await memory.context("s")
        uses.append(ctx.tokens / budget)
    wall = time.perf_counter() - t0
    usage = await memory.usage("s")
    await memory.close()
    layer = wall - summarizer.seconds
    return {
        "folds": usage.folds,
        "reread": summarizer.input_tokens / summarizer.folded_tokens
        if summarizer.folded_tokens
        else 0.0,
        "mean_use": statistics.fmean(uses),
        "max_use": max(uses),
        "per_turn_us": layer / len(turns) * 1e6,
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10^2 and 10^3 turns only")
    args = parser.parse_args()
    sizes = [100, 1_000] if args.quick else [100, 10_000, 100_000]
    turns = make_turns(max(sizes))
    rows = []
    header = (
        "| store | budget | turns | folds | re-read ratio | mean context/budget | "
        "max context/budget | per-turn µs (add+context) |"
    )
    print(header)
    print("|---|---|---|---|---|---|---|---|")
    lines = [header, "|---|---|---|---|---|---|---|---|"]
    for store_name in ("memory", "sqlite"):
        for budget in (2000, 4000, 8000):
            for n in sizes:
                r = asyncio.run(run_one(store_name, budget, turns[:n]))
                rows.append(r)
                line = (
                    f"| {store_name} | {budget} | {n:,} | {r['folds']:.0f} | {r['reread']:.3f} | "
                    f"{r['mean_use']:.2f} | {r['max_use']:.3f} | {r['per_turn_us']:.0f} |"
                )
                print(line, flush=True)
                lines.append(line)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "engine.md"
    out.write_text(
        "# Engine benchmark\n\n"
        "Produced by `python benchmarks/bench_engine.py`. One session per row; every turn is "
        "`add` + `context()`; fake summarizer time excluded from per-turn time. Re-read ratio = "
        "summarizer input tokens / folded tokens (1.0 = each token read once).\n\n"
        + "\n".join(lines)
        + "\n"
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
