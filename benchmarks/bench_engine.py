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
    """A local stand-in for the extractive summarizer: keeps one short line per folded
    message under the previous lines, dropping the oldest lines to fit the cap. Records
    its own time and input tokens. Like the extractive summarizer it runs locally, so its
    input is not redacted (the summary still is, as by default)."""

    name = "fake"
    needs_redaction = False

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
        lines = request.previous.splitlines() if request.previous else []
        lines += [" ".join(m.text.split()[:12]) for m in request.messages]
        while len(lines) > 1 and request.counter.count("\n".join(lines)) > request.max_tokens:
            lines = lines[max(1, len(lines) // 8) :]
        self.seconds += time.perf_counter() - t0
        return SummaryResult("\n".join(lines) or "-", calls=1)


SPLITS = {
    # the shipped default: a large summary keeps the most facts (offline summarizer)
    "default": lambda b: TokenBudget(b),
    # fewer, larger folds and a smaller summary: what an LLM summarizer wants
    "lean": lambda b: TokenBudget(b, target=int(b * 0.7), summary_max_tokens=b // 3),
}


async def run_one(
    store_name: str, budget: int, turns: list[Message], split: str = "default"
) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="cf-bench-"))
    store = MemoryStore() if store_name == "memory" else SQLiteStore(tmp / "bench.db")
    summarizer = TimedFakeSummarizer()
    memory = AsyncMemory(store, summarizer=summarizer, policy=SPLITS[split](budget))
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
        "| store | split | budget | turns | folds | re-read ratio | mean context/budget | "
        "max context/budget | per-turn µs (add+context) |"
    )
    rule = "|---|---|---|---|---|---|---|---|---|"
    print(header)
    print(rule)
    lines = [header, rule]
    for store_name in ("memory", "sqlite"):
        for split in SPLITS:
            for budget in (2000, 4000, 8000):
                for n in sizes:
                    if split != "default" and n > 10_000:
                        continue  # the split changes folding, not per-turn cost
                    r = asyncio.run(run_one(store_name, budget, turns[:n], split))
                    rows.append(r)
                    line = (
                        f"| {store_name} | {split} | {budget} | {n:,} | {r['folds']:.0f} | "
                        f"{r['reread']:.3f} | {r['mean_use']:.2f} | {r['max_use']:.3f} | "
                        f"{r['per_turn_us']:.0f} |"
                    )
                    print(line, flush=True)
                    lines.append(line)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "engine.md"
    out.write_text(
        "# Engine benchmark\n\n"
        "Produced by `python benchmarks/bench_engine.py`. One session per row; every turn is "
        "`add` + `context()`; fake summarizer time excluded from per-turn time. Re-read ratio = "
        "summarizer input tokens / folded tokens (1.0 = each token read once). Splits: "
        "`default` = `TokenBudget(B)` (target 85%, summary cap 60%); `lean` = target 70%, "
        "summary cap 33%. The fake summarizer fills its cap, so the ratio is a worst case.\n\n"
        + "\n".join(lines)
        + "\n"
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
