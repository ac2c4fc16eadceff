"""Choosing how the offline summarizer extends its summary: retention against the cache bill.

``ExtractiveSummarizer(extend=True)`` keeps the previous summary verbatim and appends to it
while it has room; a summary written whole (the first fold, a compaction) fills
``compact_to`` of the cap, and an extension adds at most ``extend_share`` × the span's fair
share of the cap (``contextfold.summarizers.extension``). Lower fills and smaller shares
mean fewer compactions (less of the prompt cache rewritten) and less room for facts.

For every grid point and budget, each LoCoMo dev conversation is replayed three times: as
``retention.py`` does (answers present in the final context), and twice as
``recall_bill.py`` does, billing every user turn (``recall_bill.Biller``), with recall on
(defaults) and without — the latter also checks, every few user turns, which answers the
plain context holds (a steadier measure than one final snapshot). The choice is
cross-validated: each conversation is scored with the grid point chosen on the other four
— the most answers kept through the conversation (pooled over the budgets), among those
whose rewritten share of input tokens with recall stays within ``--max-rewrite`` at every
budget. ``extend=False`` (every fold rewrites the summary) is the baseline, in the same
run. Usage::

    python benchmarks/summary_extension.py [--data PATH] [--budgets 2000,4000,8000]
        [--compact 0.7,0.8,0.9,0.95] [--shares 1,2] [--max-rewrite 0.10] [--jobs 2]
        [--no-write]

Prints the tables and writes ``benchmarks/results/summary_extension.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_bill import Bill, Biller
from retention_data import (
    ROOT,
    Conversation,
    context_text,
    default_data,
    load,
    normalize,
    replay,
    retention,
)

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.recall import Recall
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import TokenCounter, get_counter

RESULTS = ROOT / "benchmarks" / "results" / "summary_extension.md"
#: Answers are checked in the context every this many user turns (mid-conversation).
EVERY = 10
#: (compact_to, extend_share), or None for extend=False
Config = tuple[float, float] | None


def summarizer(config: Config) -> ExtractiveSummarizer:
    if config is None:
        return ExtractiveSummarizer(extend=False)
    return ExtractiveSummarizer(extend=True, compact_to=config[0], extend_share=config[1])


def label(config: Config) -> str:
    if config is None:
        return "rewrite every fold"
    return f"compact_to={config[0]:g}, extend_share={config[1]:g}"


async def _bill(conv: Conversation, budget: int, config: Config, counter: TokenCounter,
                recall: Recall | None) -> tuple[Bill, int, int]:
    """The bill of every user turn; without recall also the answers present in the
    context at every :data:`EVERY`-th user turn, over the questions whose evidence turns
    were all said by then and whose answer occurs in the conversation so far."""
    biller = Biller(counter)
    kept = present = turns = 0
    async with AsyncMemory("memory://", policy=TokenBudget(budget), tokenizer=counter,
                           summarizer=summarizer(config), raise_errors=True,
                           recall=recall) as memory:
        for n, message in enumerate(conv.messages, 1):
            await memory.add(conv.sample_id, message)
            if message.role != "user":
                continue
            ctx = await memory.context(conv.sample_id)
            biller.request(ctx)
            turns += 1
            if recall is not None or turns % EVERY:
                continue
            said = normalize(context_text(conv.messages[:n]) + "\n" + "\n".join(conv.dates))
            shown = normalize(context_text(ctx.messages))
            for answer, evidence in zip(conv.answers, conv.evidence, strict=True):
                needle = normalize(answer)
                if evidence and max(evidence) < n and needle.strip() and needle in said:
                    present += 1
                    kept += needle in shown
    return biller.bill, kept, present


@dataclass
class Cell:
    kept: int
    present: int
    mid_kept: int  # answers present in the context at checkpoints through the conversation
    mid_present: int
    rewritten: int  # with recall: summary + rewritten turns, tokens
    total: int  # with recall: input tokens
    plain_rewritten: int  # the same without recall
    plain_total: int
    folds: int


def run_cell(task: tuple[Path, int, int, Config]) -> tuple[int, int, Config, Cell]:
    path, index, budget, config = task
    conv = load(path)[index]
    counter = get_counter("o200k")
    kept, present = retention(conv, replay(conv, TokenBudget(budget), summarizer(config),
                                           counter))
    b, _, _ = asyncio.run(_bill(conv, budget, config, counter, Recall()))
    p, mid_kept, mid_present = asyncio.run(_bill(conv, budget, config, counter, None))
    return index, budget, config, Cell(kept, present, mid_kept, mid_present,
                                       b.summary + b.rewrite, b.read + b.write + b.fresh,
                                       p.summary + p.rewrite, p.read + p.write + p.fresh,
                                       b.folds)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--compact", default="0.7,0.8,0.9,0.95")
    parser.add_argument("--shares", default="1,2")
    parser.add_argument("--max-rewrite", type=float, default=0.10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"data set not found: {args.data}", file=sys.stderr)
        return 2
    convs = load(args.data)
    budgets = [int(b) for b in args.budgets.split(",")]
    configs: list[Config] = [None] + [
        (float(c), float(s)) for c in args.compact.split(",") for s in args.shares.split(",")]
    tasks = [(args.data, i, b, cfg) for cfg in configs for b in budgets
             for i in range(len(convs))]
    cells: dict[tuple[int, int, Config], Cell] = {}
    started = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        for i, b, cfg, cell in pool.map(run_cell, tasks):
            cells[i, b, cfg] = cell
    seconds = time.perf_counter() - started

    def share(cfg: Config, convs_: Sequence[int], bs: Sequence[int], num: str, den: str
              ) -> float:
        top: int = sum(getattr(cells[i, b, cfg], num) for i in convs_ for b in bs)
        bottom: int = sum(getattr(cells[i, b, cfg], den) for i in convs_ for b in bs)
        return top / max(1, bottom)

    def choose(train: Sequence[int]) -> Config:
        """The most answers kept through the conversation (pooled over the budgets), among
        grid points within the rewrite bound at every budget (else the lowest rewrite)."""
        def worst(c: Config) -> float:
            return max(share(c, train, [b], "rewritten", "total") for b in budgets)
        within = [c for c in configs if c is not None and worst(c) <= args.max_rewrite]
        if not within:
            return min(configs, key=worst)
        return max(within, key=lambda c: (share(c, train, budgets, "mid_kept", "mid_present"),
                                          -worst(c)))

    everyone = list(range(len(convs)))
    heads = [f"B={b:,}" for b in budgets]
    lines = [
        "# Extending the summary: retention against the cache rewrite",
        "",
        f"Generated by `python benchmarks/summary_extension.py`; LoCoMo dev, {len(convs)} "
        f"conversations, default `TokenBudget(B)`, tokenizer o200k; {seconds:.0f} s with "
        f"{args.jobs} jobs on a shared 2-core machine. *Through the conversation*: answers "
        f"present in the plain context (no recall) every {EVERY} user turns, over the "
        "questions whose evidence was said by then (pooled over all checks). *Final*: "
        "answers present in the final context, as `retention.py` counts them (one "
        "snapshot per conversation: noisy). *Rewritten*: the new summary and the turns "
        "written again after it, as a share of the input tokens, billed as "
        "`recall_bill.py` does, with recall on (defaults) and without. Choice: the most "
        "answers kept through the conversation among grid points whose rewrite with "
        f"recall stays within {args.max_rewrite:.0%} at every budget.",
        "",
        "| | kept through the conversation " + " / ".join(heads)
        + " | kept, final context | rewritten, with recall | rewritten, without recall "
        "| folds (all budgets) |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    def row(cfg: Config, convs_: Sequence[int]) -> list[str]:
        return [" / ".join(f"{share(cfg, convs_, [b], 'mid_kept', 'mid_present'):.1%}"
                           for b in budgets),
                " / ".join(f"{share(cfg, convs_, [b], 'kept', 'present'):.1%}"
                           for b in budgets),
                " / ".join(f"{share(cfg, convs_, [b], 'rewritten', 'total'):.1%}"
                           for b in budgets),
                " / ".join(f"{share(cfg, convs_, [b], 'plain_rewritten', 'plain_total'):.1%}"
                           for b in budgets)]

    for cfg in configs:
        folds = sum(cells[i, b, cfg].folds for i in everyone for b in budgets)
        lines.append(f"| {label(cfg)} | " + " | ".join(row(cfg, everyone)) + f" | {folds} |")
    lines += ["", f"Chosen on all conversations: **{label(choose(everyone))}**.", "",
              "Held out: each conversation with the grid point chosen on the other four, and "
              "the baseline (rewrite every fold) on the same conversation:", "",
              "| held out | chosen on the others | kept through the conversation "
              + " / ".join(heads) + " | final | rewritten, with recall "
              "| rewritten, without recall |",
              "|---|---|---:|---:|---:|---:|"]
    for i, conv in enumerate(convs):
        cfg = choose([j for j in everyone if j != i])
        mine, base = row(cfg, [i]), row(None, [i])
        lines.append(f"| {conv.sample_id} | {label(cfg)} | "
                     + " | ".join(f"{m} ({b})" for m, b in zip(mine, base, strict=True)) + " |")
    report = "\n".join(lines) + "\n"
    print(report)
    if not args.no_write:
        RESULTS.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
