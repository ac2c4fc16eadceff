"""Quick retention check of the shipped extractive summarizer: LoCoMo dev (answers kept in
the final context, in-sample: the shipped weights, no cross-validation) and the messy
synthetic chats (planted facts kept), each against plain truncation in the same run.

Use it to see what a change to the summarizer costs before running the full
``retention.py`` (which cross-validates every weight). Usage::

    python benchmarks/retention_quick.py [--quick] [--budgets 2000,4000,8000] [--no-write]

``--quick``: budgets 2,000 and 4,000 only. Prints a table and writes
``benchmarks/results/retention_quick.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retention import planted_scores
from retention_data import ROOT, default_data, load, replay, retention, truncate

from contextfold.policy import TokenBudget
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.testing.messy_chats import messy_chats
from contextfold.tokens import get_counter

RESULTS = ROOT / "benchmarks" / "results" / "retention_quick.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--quick", action="store_true", help="budgets 2,000 and 4,000 only")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    budgets = [2000, 4000] if args.quick else [int(b) for b in args.budgets.split(",")]
    counter = get_counter("o200k")
    convs = load(args.data)
    lines = [
        f"# Quick retention ({len(convs)} LoCoMo dev conversations, "
        f"{len(messy_chats())} messy chats)",
        "",
        "| B | LoCoMo truncation | LoCoMo extractive | messy truncation | messy extractive |",
        "|---:|---:|---:|---:|---:|",
    ]
    print("\n".join(lines), flush=True)
    for b in budgets:
        kept = trunc = present = 0
        for conv in convs:
            k, p = retention(conv, replay(conv, TokenBudget(b), ExtractiveSummarizer(), counter))
            t, _ = retention(conv, truncate(conv, b, counter))
            kept, trunc, present = kept + k, trunc + t, present + p
        ours, plain = planted_scores(messy_chats(), b, counter, ExtractiveSummarizer)
        lines.append(f"| {b:,} | {100 * trunc / present:.1f}% | {100 * kept / present:.1f}% | "
                     f"{100 * plain.share:.1f}% | {100 * ours.share:.1f}% |")
        print(lines[-1], flush=True)
    if not args.no_write:
        RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
