"""Why an answer is missing from the context with recall: an error analysis on LoCoMo dev.

Each conversation is replayed through the real engine with ``Memory(recall=Recall())`` at
one budget (default 4,000), then every question whose answer occurs in the conversation
is asked (``context(query=question)``). For each answer missing from the context, the
cause, following the question's evidence turn (LoCoMo's ``evidence`` ids) through
recall's steps:

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

Counts per cause, per LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)
and for the low-overlap subset (:func:`retention_data.low_overlap`). Usage::

    python benchmarks/recall_errors.py [--budget 4000] [--show 20]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retention_data import (
    Conversation,
    context_text,
    default_data,
    load,
    low_overlap,
    normalize,
)
from retention_recall import present

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.recall import Recall, relevant, speaker_bonus, speaker_terms
from contextfold.search_terms import date_words, query_months, refine_terms
from contextfold.stores.search import clean_terms, index_text, matched_terms
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import get_counter


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
        for i in present(conv):
            q, a = conv.questions[i], conv.answers[i]
            ctx = await memory.context(conv.sample_id, query=q)
            kept = normalize(a) in normalize(context_text(ctx.messages))
            row = {"conv": conv.sample_id, "q": q, "a": a, "cat": conv.categories[i],
                   "low": low_overlap(conv, i), "kept": kept, "cause": "kept",
                   "recalled": len(ctx.recalled)}
            rows.append(row)
            if kept:
                continue
            ev = [at + 1 for at in conv.evidence[i]]  # seqs start at 1
            if not ev:
                row["cause"] = "no evidence"
                continue
            if all(live_from is not None and s >= live_from for s in ev):
                row["cause"] = "live"
                continue
            if set(ev) & set(ctx.recalled):
                row["cause"] = "shown, not literal"
                continue
            months = query_months(q)
            days = date_words(q) if months else set()
            terms = [t for t in refine_terms(clean_terms([q])) if t not in days]
            row["terms"] = terms
            if not terms:
                row["cause"] = "no terms"
                continue
            need = math.ceil(max(min(options.min_matched, len(terms)),
                                 options.min_coverage * len(terms)))
            texts = {s: index_text(conv.messages[s - 1]) for s in ev}
            named = speaker_terms(terms, snap.live) if options.speakers else set()
            said = speaker_bonus(await store.fetch(conv.sample_id, ev), named)
            best = max(matched_terms(texts[s], terms) + said.get(s, 0) for s in ev)
            row["ev_matched"] = best
            row["ev_text"] = " | ".join(conv.messages[s - 1].text[:160] for s in ev)
            if best == 0:
                row["cause"] = "no shared term"
                continue
            if best + bool(months) < need:
                row["cause"] = "below min_matched"
                continue
            found = await store.search(
                conv.sample_id, terms, limit=options.limit * (2 if months else 1),
                folded=True, min_matched=max(1, need - bool(months) - bool(named)))
            if not set(ev) & {h.seq for h in found}:
                row["cause"] = "search limit"
                continue
            bonus = speaker_bonus(await store.fetch(conv.sample_id, [h.seq for h in found]),
                                  named)
            hits = relevant(found, len(terms), options, live_from, months, bonus)
            ranks = [r for r, h in enumerate(hits) if h.seq in ev]
            if not ranks:
                row["cause"] = "threshold"
                continue
            row["cause"] = "truncated"
            row["rank"] = ranks[0]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--show", type=int, default=0, help="print this many misses")
    parser.add_argument("--cause", default="", help="only print misses of this cause")
    args = parser.parse_args()
    convs = load(default_data())
    options = Recall()
    rows: list[dict[str, Any]] = []
    for conv in convs:
        rows += asyncio.run(analyse(conv, args.budget, options))
    print(f"B = {args.budget:,}, {options}")
    n = len(rows)
    print(f"kept {sum(r['kept'] for r in rows)}/{n}")
    causes = Counter(r["cause"] for r in rows if not r["kept"])
    groups: dict[str, list[dict[str, Any]]] = {"all": rows, "low-overlap": [
        r for r in rows if r["low"]]}
    for c in (1, 2, 3, 4):
        groups[f"cat {c}"] = [r for r in rows if r["cat"] == c]
    print("| cause | " + " | ".join(groups) + " |")
    print("|---|" + "---:|" * len(groups))
    for cause in ["kept", *[c for c, _ in causes.most_common()]]:
        print(f"| {cause} | " + " | ".join(
            str(sum(r["cause"] == cause for r in g)) for g in groups.values()) + " |")
    print("| total | " + " | ".join(str(len(g)) for g in groups.values()) + " |")
    trunc = [r["rank"] for r in rows if r["cause"] == "truncated"]
    if trunc:
        print("truncated: ranks of the evidence hit", sorted(trunc))
    shown = 0
    for r in rows:
        if r["kept"] or (args.cause and r["cause"] != args.cause) or shown >= args.show:
            continue
        shown += 1
        print(f"- [{r['cause']}] c{r['cat']}{' low' if r['low'] else ''} {r['q']} -> "
              f"{r['a']!r}; terms {r.get('terms')} matched {r.get('ev_matched')} "
              f"rank {r.get('rank')}\n    {r.get('ev_text', '')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
