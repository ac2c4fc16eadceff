"""How often to fold with recall on: cache rewrites against answer presence, per setting.

With recall on, a ``TokenBudget`` folds within a smaller budget so the recalled block has
its room (:meth:`contextfold.recall.Recall.fold_policy`). Where it folds to (the target),
and when (the trigger), set how often a fold rewrites the provider's prompt cache, and
what stays in the context: the summary (its cap), the newest turns, the block's room.
This replays the LoCoMo dev conversations for each setting — the fold rule recall ships
with, and settings given as (trigger, target, summary cap) shares of the budget — and
reports, per budget:

- **rewrite share**: input tokens spent re-writing the prompt cache, with recall on
  (defaults, gate on, every user message as the implicit query), as
  ``recall_bill.py`` bills it (Anthropic pricing, two breakpoints, 20-block look-back);
  and the bill over the bill without recall (``× without``, same run);
- **answer presence, held-out**: each QA question as the query, the answer in the
  context; the query options (neighbours, framed, frame_after; share 0.5 — it sets the
  block's room) chosen by leave-one-conversation-out cross-validation as in
  ``retention_recall.py`` (each conversation scored with the options chosen on the other
  four).

Last, the fold setting itself chosen by cross-validation: for each held-out
conversation, among the settings whose rewrite share on the other four conversations is
at most :data:`REWRITE_GOAL` at every budget, the one with the best mean answer presence
on them; the held-out conversation is scored with it.

Usage::

    python benchmarks/recall_fold_frontier.py [--data PATH] [--settings shipped,0.5:0.425:0.3]
        [--jobs 2] [--no-write]

Prints the table and writes ``benchmarks/results/recall_fold_frontier.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_bill import replay as bill_replay
from retention_data import ROOT, context_text, default_data, load, normalize, publish
from retention_recall import present

from contextfold.engine import AsyncMemory
from contextfold.policy import Policy, TokenBudget
from contextfold.recall import Recall
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import get_counter

RESULTS = ROOT / "benchmarks" / "results" / "recall_fold_frontier.md"
BUDGETS = (2000, 4000, 8000)
#: The most of the input tokens that may go to re-writing the cache, with recall on.
REWRITE_GOAL = 0.10
#: Answer presence wanted (held-out) at each budget of :data:`BUDGETS`.
PRESENCE_GOAL = (90.0, 94.0, 97.0)
#: The settings studied by default: the rule shipped, the rule before it (fold within
#: ``1 - share`` of the budget at 85% of it), lower targets, later triggers (the block
#: then takes what room the newest turns leave), smaller summaries, no room kept.
DEFAULT_SETTINGS = (
    "shipped", "0.5:0.425:0.3", "0.5:0.4:0.3", "0.5:0.375:0.3", "0.5:0.35:0.3",
    "0.5:0.32:0.3", "0.5:0.3:0.2", "0.6:0.425:0.3", "0.6:0.4:0.3", "0.65:0.45:0.35",
    "0.7:0.5:0.35", "1.0:0.85:0.6",
)
#: Query options searched (neighbours, framed, frame_after), as retention_recall.py does.
QUERY_GRID = tuple((nb, fr, af) for nb in (2, 4) for fr in (0, 3, 5) for af in (1, 2)
                   if fr or af == 1)


@dataclass(frozen=True)
class FoldAt(Recall):
    """``Recall`` whose fold policy is ``TokenBudget(trigger·B, target·B, cap·B)``."""

    trigger: float = 0.5
    target: float = 0.425
    cap: float = 0.3

    def fold_policy(self, policy: Policy) -> Policy:
        if not isinstance(policy, TokenBudget):
            return policy
        b = policy.max_tokens
        return TokenBudget(int(b * self.trigger), target=int(b * self.target),
                           keep_last=policy.keep_last, summary_max_tokens=int(b * self.cap),
                           min_fold_ratio=policy.min_fold_ratio)


def recall_for(setting: str) -> Recall:
    if setting == "shipped":
        return Recall()
    trigger, target, cap = (float(x) for x in setting.split(":"))
    return FoldAt(trigger=trigger, target=target, cap=cap)


_data = ""


def _init(data: str) -> None:
    global _data
    _data = data


def run(job: tuple[str, str, int, int]) -> tuple[str, str, int, int, Any]:
    """One conversation at one budget: ``bill`` (rewritten, input tokens, cost) with the
    setting (``"off"``: recall off), or ``presence`` (config → kept flags)."""
    kind, setting, c, budget = job
    conv = load(Path(_data))[c]
    counter = get_counter("o200k")
    if kind == "bill":
        recall = None if setting == "off" else recall_for(setting)
        b = asyncio.run(bill_replay(conv, budget, recall, counter))
        return kind, setting, c, budget, (b.summary + b.rewrite, b.read + b.write + b.fresh,
                                          b.cost, b.folds, b.turns)
    return kind, setting, c, budget, asyncio.run(_presence(conv, budget, setting))


async def _presence(conv: Any, budget: int, setting: str) -> dict[str, list[int]]:
    keep = present(conv)
    out: dict[str, list[int]] = {}
    async with AsyncMemory("memory://", summarizer=ExtractiveSummarizer(),
                           policy=TokenBudget(budget), tokenizer=get_counter("o200k"),
                           raise_errors=True, recall=recall_for(setting)) as memory:
        for message in conv.messages:
            await memory.add(conv.sample_id, message)
        for nb, fr, af in QUERY_GRID:
            memory.recall = Recall(neighbours=nb, framed=fr, frame_after=af)
            flags = []
            for i in keep:
                ctx = await memory.context(conv.sample_id, query=conv.questions[i])
                if ctx.tokens > budget:
                    raise AssertionError(f"{ctx.tokens} tokens over the budget {budget}")
                text = normalize(context_text(ctx.messages))
                flags.append(int(normalize(conv.answers[i]) in text))
            out[repr((nb, fr, af))] = flags
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--settings", default=",".join(DEFAULT_SETTINGS),
                        help="'shipped' or trigger:target:cap shares of the budget")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"data set not found: {args.data}", file=sys.stderr)
        return 2
    settings = args.settings.split(",")
    n = len(load(args.data))
    jobs = [("bill", "off", c, b) for c in range(n) for b in BUDGETS]
    jobs += [(kind, s, c, b) for s in settings for kind in ("bill", "presence")
             for c in range(n) for b in BUDGETS]
    t0 = time.perf_counter()
    got: dict[tuple[str, str, int, int], Any] = {}
    with ProcessPoolExecutor(args.jobs, initializer=_init, initargs=(str(args.data),)) as pool:
        for kind, s, c, b, value in pool.map(run, jobs):
            got[(kind, s, c, b)] = value
            print(f"  {kind} {s} conv {c} B={b}", flush=True)
    elapsed = time.perf_counter() - t0
    convs = range(n)

    def rewrite(s: str, b: int, among: Sequence[int]) -> float:
        rows = [got[("bill", s, c, b)] for c in among]
        return sum(r[0] for r in rows) / max(1, sum(r[1] for r in rows))

    def ratio(s: str, b: int) -> float:
        cost = sum(got[("bill", s, c, b)][2] for c in convs)
        return cost / sum(got[("bill", "off", c, b)][2] for c in convs)

    def folds(s: str, b: int) -> float:
        rows = [got[("bill", s, c, b)] for c in convs]
        return 1000 * sum(r[3] for r in rows) / sum(r[4] for r in rows)

    def flags(s: str, c: int, b: int, cfg: str) -> list[int]:
        return list(got[("presence", s, c, b)][cfg])

    def pct(fl: Sequence[int]) -> float:
        return 100 * sum(fl) / len(fl) if fl else 0.0

    def choose_cfg(s: str, train: Sequence[int]) -> str:
        cfgs = [repr(q) for q in QUERY_GRID]
        shipped = repr((Recall().neighbours, Recall().framed, Recall().frame_after))
        return max(cfgs, key=lambda cfg: (statistics.fmean(
            pct(flags(s, c, b, cfg)) for c in train for b in BUDGETS), cfg == shipped))

    def held_out(s: str, c: int, b: int) -> list[int]:
        """Conversation ``c`` at ``b`` with the query options chosen on the others."""
        return flags(s, c, b, choose_cfg(s, [o for o in convs if o != c]))

    def held_out_pooled(s: str, b: int) -> tuple[int, int]:
        fl = [f for c in convs for f in held_out(s, c, b)]
        return sum(fl), len(fl)

    lines = [
        "# Folding with recall on: prompt-cache rewrites against answer presence",
        "",
        f"Generated by `python benchmarks/recall_fold_frontier.py`; LoCoMo dev, {n} "
        f"conversations, tokenizer o200k_base, {elapsed:.0f} s on a shared 2-core machine. "
        "A setting `T:t:s` folds with `TokenBudget(T·B, target=t·B, summary_max_tokens="
        "s·B)` while recall is on (B the budget; the block may take half of B and never "
        "more than the plain context leaves); *shipped* is `Recall().fold_policy`. "
        "Rewrite: share of input tokens re-writing the prompt cache (recall defaults, gate "
        "on, every user message the implicit query; billed as `recall_bill.py` bills). "
        "Presence: answers in the context, each question the query, query options chosen "
        "by leave-one-conversation-out cross-validation (held-out, pooled over the "
        f"conversations). Goals: rewrite ≤ {REWRITE_GOAL:.0%}, presence ≥ "
        + " / ".join(f"{g:.0f}%" for g in PRESENCE_GOAL) + " at B = "
        + " / ".join(f"{b:,}" for b in BUDGETS) + "; a cell that misses its goal is "
        "marked ✗.",
        "",
        "| setting | " + " | ".join(
            f"B={b:,}: rewrite | × without | folds / 1,000 turns | presence"
            for b in BUDGETS) + " |",
        "|---|" + "---:|---:|---:|---:|" * len(BUDGETS),
    ]
    for s in settings:
        cells = []
        for b, goal in zip(BUDGETS, PRESENCE_GOAL, strict=True):
            rw = rewrite(s, b, convs)
            k, t = held_out_pooled(s, b)
            cells += [f"{rw:.1%}{' ✗' if rw > REWRITE_GOAL else ''}", f"{ratio(s, b):.2f}",
                      f"{folds(s, b):.0f}",
                      f"{100 * k / t:.1f}% ({k}/{t}){' ✗' if 100 * k / t < goal else ''}"]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")

    # the fold setting chosen by cross-validation, under the rewrite goal
    picks: dict[int, str] = {}
    for c in convs:
        train = [o for o in convs if o != c]
        ok = [s for s in settings
              if all(rewrite(s, b, train) <= REWRITE_GOAL for b in BUDGETS)] or settings
        picks[c] = max(ok, key=lambda s: (statistics.fmean(
            pct(held_out(s, o, b)) for o in train for b in BUDGETS), s == "shipped"))
    cells = []
    for b, goal in zip(BUDGETS, PRESENCE_GOAL, strict=True):
        fl = [f for c in convs for f in held_out(picks[c], c, b)]
        rw = sum(got[("bill", picks[c], c, b)][0] for c in convs) / sum(
            got[("bill", picks[c], c, b)][1] for c in convs)
        cells.append(f"rewrite {rw:.1%}, presence {pct(fl):.1f}% ({sum(fl)}/{len(fl)})"
                     f"{' ✗' if pct(fl) < goal else ''}")
    conv_ids = [c.sample_id for c in load(args.data)]
    lines += [
        "",
        "The fold setting chosen by cross-validation (for each held-out conversation, the "
        f"best mean presence on the other four among the settings with rewrite ≤ "
        f"{REWRITE_GOAL:.0%} on them at every budget): "
        + ", ".join(f"{conv_ids[c]} `{picks[c]}`" for c in convs) + ". Held-out: "
        + "; ".join(f"B={b:,}: {cell}" for b, cell in zip(BUDGETS, cells, strict=True))
        + ".",
        "",
    ]
    publish(lines, RESULTS, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
