"""Why an answer is missing from the context with recall: an error analysis on LoCoMo dev.

Each conversation is replayed through the real engine with ``Memory(recall=Recall())`` at
each budget (default 2,000 / 4,000 / 8,000), then every question whose answer occurs in the
conversation is asked (``context(query=question)``). For each answer missing from the
context, the cause, following the question's evidence turn (LoCoMo's ``evidence`` ids)
through recall's steps:

- *live*: the evidence turn is not folded (the answer is not in it as written);
- *no terms*: the question has no search terms left;
- *no shared term*: the evidence turn has none of the query's terms (its speaker, named
  in the question, counts as one);
- *below min_matched*: it shares terms, fewer than the store's ``min_matched``;
- *search limit*: it matches enough terms, but is not among the ``limit`` best;
- *threshold*: returned by the store, dropped by the relevance threshold;
- *truncated*: a relevant hit (rank given) whose turn did not fit the block;
- *shown, not literal*: the evidence turn is in the context, the answer is not written in
  it as the gold answer is (an inference, a paraphrase, a relative date);
- *no evidence*: the question lists no evidence turn.

An evidence turn that search cannot find (no shared term, below min_matched) may still be
shown as a neighbour of a hit: such a miss is marked *, a hit near* when a relevant hit is
within ``neighbours`` turns of it (it lost the room to other turns), else *, no hit near*
(only a match on meaning would find it).

Counts per cause, per LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)
and for the low-overlap subset (:func:`retention_data.low_overlap`); and how full the
context is: the block's tokens against its room, the whole context against the budget.
Usage::

    python benchmarks/recall_errors.py [--budgets 2000,4000,8000] [--show 20]
        [--cause CAUSE] [--no-write]

Prints the tables (and the misses asked for, with their questions) and writes the counts
to ``benchmarks/results/recall_errors.md`` (no question text: the data set stays out of
the repository).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retention_data import (
    ROOT,
    Conversation,
    context_text,
    default_data,
    load,
    low_overlap,
    normalize,
    publish,
)
from retention_recall import present

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.recall import Recall, relevant, speaker_bonus, speaker_terms
from contextfold.search_terms import date_words, query_months, refine_terms
from contextfold.stores.search import clean_terms, index_text, matched_terms
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import get_counter

RESULTS = ROOT / "benchmarks" / "results" / "recall_errors.md"
CAUSES = ("live", "no terms", "no shared term, a hit near", "no shared term, no hit near",
          "below min_matched, a hit near", "below min_matched, no hit near", "search limit",
          "threshold", "truncated", "shown, not literal", "no evidence")


async def analyse(conv: Conversation, budget: int, options: Recall
                  ) -> list[dict[str, Any]]:
    counter = get_counter("o200k")
    rows: list[dict[str, Any]] = []
    async with AsyncMemory("memory://", summarizer=ExtractiveSummarizer(),
                           policy=TokenBudget(budget), tokenizer=counter,
                           raise_errors=True, recall=options) as memory:
        for message in conv.messages:
            await memory.add(conv.sample_id, message)
        store = memory.store
        snap = await store.snapshot(conv.sample_id)
        assert snap is not None
        live_from = snap.live[0].seq if snap.live else None
        memory.recall = None
        plain = await memory.context(conv.sample_id)
        memory.recall = options
        room = min(options.room(budget), budget - plain.tokens)
        for i in present(conv):
            q, a = conv.questions[i], conv.answers[i]
            ctx = await memory.context(conv.sample_id, query=q)
            kept = normalize(a) in normalize(context_text(ctx.messages))
            row = {"conv": conv.sample_id, "q": q, "a": a, "cat": conv.categories[i],
                   "low": low_overlap(conv, i), "kept": kept, "cause": "kept",
                   "recalled": len(ctx.recalled), "tokens": ctx.tokens,
                   "block": ctx.tokens - plain.tokens if ctx.recalled else 0, "room": room}
            rows.append(row)
            if kept:
                continue
            row["cause"] = await _cause(conv, i, store, snap.live, live_from, ctx.recalled,
                                        options, row)
    return rows


async def _cause(conv: Conversation, i: int, store: Any, live: Any, live_from: int | None,
                 recalled: tuple[int, ...], options: Recall, row: dict[str, Any]) -> str:
    """Why question ``i``'s answer is missing (one of :data:`CAUSES`)."""
    q = conv.questions[i]
    ev = [at + 1 for at in conv.evidence[i]]  # seqs start at 1
    if not ev:
        return "no evidence"
    if all(live_from is not None and s >= live_from for s in ev):
        return "live"
    if set(ev) & set(recalled):
        return "shown, not literal"
    months = query_months(q)
    days = date_words(q) if months else set()
    terms = [t for t in refine_terms(clean_terms([q])) if t not in days]
    row["terms"] = terms
    if not terms:
        return "no terms"
    need = math.ceil(max(min(options.min_matched, len(terms)),
                         options.min_coverage * len(terms)))
    named = speaker_terms(terms, live) if options.speakers else set()
    found = await store.search(
        conv.sample_id, terms, limit=options.limit * (2 if months else 1),
        folded=True, min_matched=max(1, need - bool(months) - bool(named)))
    bonus = speaker_bonus(await store.fetch(conv.sample_id, [h.seq for h in found]), named)
    hits = relevant(found, len(terms), options, live_from, months, bonus)
    near = any(abs(h.seq - s) <= options.neighbours for h in hits for s in ev)
    texts = {s: index_text(conv.messages[s - 1]) for s in ev}
    said = speaker_bonus(await store.fetch(conv.sample_id, ev), named)
    best = max(matched_terms(texts[s], terms) + said.get(s, 0) for s in ev)
    row["ev_matched"] = best
    row["ev_text"] = " | ".join(conv.messages[s - 1].text[:160] for s in ev)
    where = ", a hit near" if near else ", no hit near"
    if best == 0:
        return "no shared term" + where
    if best + bool(months) < need:
        return "below min_matched" + where
    if not set(ev) & {h.seq for h in found}:
        return "search limit"
    ranks = [r for r, h in enumerate(hits) if h.seq in ev]
    if not ranks:
        return "threshold"
    row["rank"] = ranks[0]
    return "truncated"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """Misses per cause, for all questions, the low-overlap ones and each category."""
    groups: dict[str, list[dict[str, Any]]] = {"all": rows, "low-overlap": [
        r for r in rows if r["low"]]}
    for c in (1, 2, 3, 4):
        groups[f"cat {c}"] = [r for r in rows if r["cat"] == c]
    out = ["| cause | " + " | ".join(groups) + " |", "|---|" + "---:|" * len(groups)]
    seen = Counter(r["cause"] for r in rows)
    for cause in ("kept", *CAUSES):
        if seen[cause]:
            out.append(f"| {cause} | " + " | ".join(
                str(sum(r["cause"] == cause for r in g)) for g in groups.values()) + " |")
    out.append("| total | " + " | ".join(str(len(g)) for g in groups.values()) + " |")
    return out


def fill(rows: list[dict[str, Any]], budget: int) -> str:
    """How full the contexts with a block are: block against room, context against B."""
    shown = [r for r in rows if r["block"]]
    if not shown:
        return "no block shown"
    block = statistics.fmean(r["block"] for r in shown)
    room = statistics.fmean(r["room"] for r in shown)
    total = statistics.fmean(r["tokens"] for r in shown)
    under = sum(r["block"] < 0.8 * r["room"] for r in shown)
    return (f"a block on {len(shown)}/{len(rows)} questions; block {block:.0f} tokens of a "
            f"room of {room:.0f} ({100 * block / room:.0f}%), {under} under 80% of it; "
            f"context {total:.0f} of {budget:,} ({100 * total / budget:.0f}%)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--show", type=int, default=0, help="print this many misses")
    parser.add_argument("--cause", default="", help="only print misses of this cause")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    convs = load(default_data())
    options = Recall()
    budgets = [int(b) for b in args.budgets.split(",")]
    lines = ["# Why answers are missing with recall (LoCoMo dev)", "",
             "Generated by `python benchmarks/recall_errors.py`; shipped defaults "
             f"`{options}`. Each miss is followed through recall's steps from its evidence "
             "turn (see the script's docstring for the causes).", ""]
    for budget in budgets:
        rows: list[dict[str, Any]] = []
        for conv in convs:
            rows += asyncio.run(analyse(conv, budget, options))
        kept = sum(r["kept"] for r in rows)
        lines += [f"## B = {budget:,}: {kept}/{len(rows)} answers in the context", "",
                  *table(rows), "", f"Fill: {fill(rows, budget)}.", ""]
        trunc = sorted(r["rank"] for r in rows if r["cause"] == "truncated")
        if trunc:
            lines += [f"Truncated: ranks of the evidence hit {trunc}.", ""]
        shown = 0
        for r in rows:
            if r["kept"] or (args.cause and r["cause"] != args.cause) or shown >= args.show:
                continue
            shown += 1
            print(f"- [{r['cause']}] c{r['cat']}{' low' if r['low'] else ''} {r['q']} -> "
                  f"{r['a']!r}; terms {r.get('terms')} matched {r.get('ev_matched')} "
                  f"rank {r.get('rank')}\n    {r.get('ev_text', '')}")
    publish(lines, RESULTS, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
