"""Choosing how the offline summarizer extends its summary: retention against the cache bill.

``ExtractiveSummarizer(extend=True)`` keeps the previous summary verbatim and appends to it
while it has room; a summary written whole (the first fold, a compaction) fills
``compact_to`` of the cap, and an extension adds at most ``extend_share`` × the span's fair
share of the cap (``contextfold.summarizers.extension``). Lower fills and smaller shares
mean fewer compactions (less of the prompt cache rewritten) and less room for facts.

For every grid point and budget, each LoCoMo dev conversation is replayed twice: once as
``retention.py`` does (answers present in the final context) and once as
``recall_bill.py`` does, with recall on (defaults), billing every user turn
(``recall_bill.Biller``). The choice is cross-validated: each conversation is scored with
the grid point chosen on the other four — the one with the most answers kept (pooled over
the budgets), among those whose rewritten share of input tokens stays within
``--max-rewrite`` at every budget (else the lowest rewrite). ``extend=False`` (every fold
rewrites the summary) is in the same run as the baseline. Usage::

    python benchmarks/summary_extension.py [--data PATH] [--budgets 2000,4000,8000]
        [--compact 0.5,0.6,0.7,0.8,0.9] [--shares 1,2,4] [--max-rewrite 0.06] [--jobs 2]
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
from retention_data import ROOT, Conversation, default_data, load, replay, retention

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.recall import Recall
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import TokenCounter, get_counter

RESULTS = ROOT / "benchmarks" / "results" / "summary_extension.md"
#: (compact_to, extend_share), or None for extend=False
Config = tuple[float, float] | None


def summarizer(config: Config) -> ExtractiveSummarizer:
    if config is None:
        return ExtractiveSummarizer(extend=False)
    return ExtractiveSummarizer(extend=True, compact_to=config[0], extend_share=config[1])


def label(config: Config) -> str:
    return "rewrite every fold" if config is None else f"compact_to={config[0]:g}, share={config[1]:g}"


async def _bill(conv: Conversation, budget: int, config: Config,
                counter: TokenCounter) -> Bill:
    biller = Biller(counter)
    async with AsyncMemory("memory://", policy=TokenBudget(budget), tokenizer=counter,
                           summarizer=summarizer(config), raise_errors=True,
                           recall=Recall()) as memory:
        for message in conv.messages:
            await memory.add(conv.sample_id, message)
            if message.role == "user":
                biller.request(await memory.context(conv.sample_id))
    return biller.bill


@dataclass
class Cell:
    kept: int
    present: int
    rewritten: int  # summary + rewritten turns, tokens
    total: int  # input tokens
    cost: float
    folds: int


def run_cell(task: tuple[Path, int, int, Config]) -> tuple[int, int, Config, Cell]:
    path, index, budget, config = task
    conv = load(path)[index]
    counter = get_counter("o200k")
    kept, present = retention(conv, replay(conv, TokenBudget(budget), summarizer(config),
                                           counter))
    b = asyncio.run(_bill(conv, budget, config, counter))
    return index, budget, config, Cell(kept, present, b.summary + b.rewrite,
                                       b.read + b.write + b.fresh, b.cost, b.folds)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--compact", default="0.5,0.6,0.7,0.8,0.9")
    parser.add_argument("--shares", default="1,2,4")
    parser.add_argument("--max-rewrite", type=float, default=0.06)
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

    def pooled(cfg: Config, convs_: Sequence[int], budget: int | None = None
               ) -> tuple[float, float, float]:
        """(answers kept share, rewritten share of input tokens, worst budget's rewrite)."""
        bs = budgets if budget is None else [budget]
        kept = sum(cells[i, b, cfg].kept for i in convs_ for b in bs)
        present = sum(cells[i, b, cfg].present for i in convs_ for b in bs)
        worst = max(sum(cells[i, b, cfg].rewritten for i in convs_)
                    / max(1, sum(cells[i, b, cfg].total for i in convs_)) for b in bs)
        rew = sum(cells[i, b, cfg].rewritten for i in convs_ for b in bs) / max(
            1, sum(cells[i, b, cfg].total for i in convs_ for b in bs))
        return kept / max(1, present), rew, worst

    def choose(train: Sequence[int]) -> Config:
        within = [c for c in configs if c is not None and pooled(c, train)[2] <= args.max_rewrite]
        if within:
            return max(within, key=lambda c: (pooled(c, train)[0], -pooled(c, train)[1]))
        return min(configs, key=lambda c: pooled(c, train)[2])

    everyone = range(len(convs))
    lines = [
        "# Extending the summary: retention against the cache rewrite",
        "",
        f"Generated by `python benchmarks/summary_extension.py`; LoCoMo dev, {len(convs)} "
        f"conversations, budgets {', '.join(f'{b:,}' for b in budgets)}, default "
        f"`TokenBudget(B)`, tokenizer o200k; {seconds:.0f} s with {args.jobs} jobs on a "
        "shared 2-core machine. *Kept*: answers present in the final context (as "
        "`retention.py`), pooled. *Rewritten*: the new summary and the turns written again "
        "after it, as a share of the input tokens, with recall on (defaults), billed as "
        "`recall_bill.py` does. Choice: the most answers kept among grid points whose "
        f"rewrite stays within {args.max_rewrite:.0%} at every budget.",
        "",
        "| | " + " | ".join(f"kept B={b:,}" for b in budgets) + " | "
        + " | ".join(f"rewritten B={b:,}" for b in budgets) + " | folds (B=4,000 or first) |",
        "|---|" + "---:|" * (2 * len(budgets) + 1),
    ]
    b0 = 4000 if 4000 in budgets else budgets[0]
    for cfg in configs:
        kept = [pooled(cfg, everyone, b)[0] for b in budgets]
        rew = [pooled(cfg, everyone, b)[1] for b in budgets]
        folds = sum(cells[i, b0, cfg].folds for i in everyone)
        lines.append(f"| {label(cfg)} | " + " | ".join(f"{k:.1%}" for k in kept) + " | "
                     + " | ".join(f"{r:.1%}" for r in rew) + f" | {folds} |")
    chosen_all = choose(list(everyone))
    lines += ["", f"Chosen on all conversations: **{label(chosen_all)}**.", "",
              "Held out (each conversation scored with the grid point chosen on the others):",
              "",
              "| held out | chosen on the others | "
              + " | ".join(f"kept B={b:,} (baseline)" for b in budgets) + " | "
              + " | ".join(f"rewritten B={b:,} (baseline)" for b in budgets) + " |",
              "|---|---|" + "---:|" * (2 * len(budgets))]
    held_kept = {b: [0, 0, 0] for b in budgets}  # kept, baseline kept, present
    for i, conv in enumerate(convs):
        cfg = choose([j for j in everyone if j != i])
        row = [conv.sample_id, label(cfg)]
        for b in budgets:
            c, base = cells[i, b, cfg], cells[i, b, None]
            row.append(f"{c.kept / max(1, c.present):.1%} ({base.kept / max(1, base.present):.1%})")
            held_kept[b][0] += c.kept
            held_kept[b][1] += base.kept
            held_kept[b][2] += c.present
        for b in budgets:
            c, base = cells[i, b, cfg], cells[i, b, None]
            row.append(f"{c.rewritten / max(1, c.total):.1%} "
                       f"({base.rewritten / max(1, base.total):.1%})")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("| **pooled** | | " + " | ".join(
        f"**{k / max(1, p):.1%}** ({bk / max(1, p):.1%})" for k, bk, p in held_kept.values())
        + " |" + " |" * len(budgets))
    report = "\n".join(lines) + "\n"
    print(report)
    if not args.no_write:
        RESULTS.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
