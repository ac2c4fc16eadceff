"""Information retention of the offline summarizer on LoCoMo conversations.

Replays each conversation of ``locomo_dev.json`` (read from ``../shared/data/locomo`` at
run time — the data set is never copied into this repository) through a memory with a
``TokenBudget(B)`` policy, and measures the share of QA answers (categories 1-4) whose
normalised text is still present in the final context, counted only over answers present
in the full conversation (every message's text and the dates of its session). Compared at
B = 2,000 / 4,000 / 8,000 tokens:

- ``truncation``: the newest messages that fit in B, nothing else;
- ``extractive``: the shipped ``ExtractiveSummarizer`` with the default policy split;
- one ablation per technique (that technique switched off, everything else on);
- the policy split before and after tuning.

Also reports the summarizer's time per fold. Usage::

    python benchmarks/retention.py [--data PATH] [--budgets 2000,4000,8000] [--quick]

Prints a table and writes ``benchmarks/results/retention.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from contextfold.memory import AsyncMemory
from contextfold.messages import Message
from contextfold.policy import TokenBudget
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import TokenCounter, count_message, get_counter

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
RESULTS = ROOT / "benchmarks" / "results" / "retention.md"
CATEGORIES = (1, 2, 3, 4)
_PUNCT = set(string.punctuation) | {"’", "‘", "“", "”", "—", "–", "…"}
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


# -- data --------------------------------------------------------------------------------


@dataclass
class Conversation:
    sample_id: str
    messages: list[Message]
    answers: list[str]
    dates: list[str] = field(default_factory=list)


def load(path: Path) -> list[Conversation]:
    """LoCoMo → provider-neutral messages: speaker A is ``user``, speaker B ``assistant``,
    both named; a shared photo is appended as ``[shares <caption>]``; the timestamp is the
    session's date and time."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in raw:
        conv = sample["conversation"]
        messages: list[Message] = []
        dates: list[str] = []
        i = 1
        while f"session_{i}" in conv:
            stamp = datetime.strptime(conv[f"session_{i}_date_time"], "%I:%M %p on %d %B, %Y")
            stamp = stamp.replace(tzinfo=timezone.utc)
            dates.append(f"{stamp.day} {stamp:%B %Y}")
            for turn in conv[f"session_{i}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text = f"{text} [shares {turn['blip_caption']}]"
                role = "user" if turn["speaker"] == conv["speaker_a"] else "assistant"
                messages.append(
                    Message(role=role, name=turn["speaker"], content=text, timestamp=stamp)
                )
            i += 1
        answers = [str(q["answer"]) for q in sample["qa"] if q.get("category") in CATEGORIES]
        out.append(Conversation(sample["sample_id"], messages, answers, dates))
    return out


def normalize(text: str) -> str:
    """SQuAD-style: lower case, punctuation to spaces, no articles, single spaces."""
    text = "".join(" " if ch in _PUNCT else ch for ch in text.lower())
    return " " + " ".join(_ARTICLES.sub(" ", text).split()) + " "


def context_text(messages: Sequence[Message]) -> str:
    return "\n".join(f"{m.name or m.role}: {m.text}" for m in messages)


# -- replay ------------------------------------------------------------------------------


@dataclass
class Run:
    context: str
    tokens: int
    folds: int = 0
    fold_seconds: list[float] = field(default_factory=list)


def truncate(conv: Conversation, budget: int, counter: TokenCounter) -> Run:
    """The newest messages that fit in ``budget`` (reply priming counted)."""
    used, kept = 3, 0
    for msg in reversed(conv.messages):
        cost = count_message(counter, msg)
        if used + cost > budget:
            break
        used += cost
        kept += 1
    tail = conv.messages[len(conv.messages) - kept :]
    return Run(context_text(tail), used)


def replay(
    conv: Conversation,
    policy: TokenBudget,
    summarizer: ExtractiveSummarizer,
    counter: TokenCounter,
) -> Run:
    """Stream the conversation through the real engine (``AsyncMemory`` on the in-memory
    store, inline folds) and take its final context."""
    return asyncio.run(_replay(conv, policy, summarizer, counter))


async def _replay(
    conv: Conversation,
    policy: TokenBudget,
    summarizer: ExtractiveSummarizer,
    counter: TokenCounter,
) -> Run:
    run = Run("", 0)
    async with AsyncMemory(
        "memory://", summarizer=summarizer, policy=policy, tokenizer=counter,
        raise_errors=True,
    ) as memory:
        for message in conv.messages:
            added = await memory.add(conv.sample_id, message)
            if added.fold is not None and added.fold.status == "committed":
                run.folds += 1
                run.fold_seconds.append(added.fold.latency_ms / 1000)
        context = await memory.context(conv.sample_id)
    run.context = context_text(context.messages)
    run.tokens = context.tokens
    return run


# -- scoring -----------------------------------------------------------------------------


def retention(conv: Conversation, run: Run) -> tuple[int, int]:
    """(answers kept, answers present in the full conversation)."""
    full = normalize(context_text(conv.messages) + "\n" + "\n".join(conv.dates))
    ctx = normalize(run.context)
    present = kept = 0
    for answer in conv.answers:
        needle = normalize(answer)
        if needle.strip() and needle in full:
            present += 1
            kept += needle in ctx
    return kept, present


@dataclass(frozen=True)
class Variant:
    label: str
    make: Callable[[int], Run] | None = None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--tokenizer", default="o200k")
    parser.add_argument("--quick", action="store_true", help="default and truncation only")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"data set not found: {args.data}", file=sys.stderr)
        return 2
    convs = load(args.data)
    counter = get_counter(args.tokenizer)
    budgets = [int(b) for b in args.budgets.split(",")]

    def policy(budget: int) -> TokenBudget:
        return TokenBudget(budget)

    variants: list[tuple[str, Callable[[Conversation, int], Run]]] = [
        ("truncation", lambda c, b: truncate(c, b, counter)),
        ("extractive", lambda c, b: replay(c, policy(b), ExtractiveSummarizer(), counter)),
    ]
    if not args.quick:
        variants.append((
            "  old split (target 70%, summary 33%)",
            lambda c, b: replay(
                c, TokenBudget(b, target=int(b * 0.7), summary_max_tokens=b // 3),
                ExtractiveSummarizer(), counter),
        ))
        for off in ("compress", "dedupe", "salience", "coverage", "dates"):
            summarizer = ExtractiveSummarizer(**{off: False})
            variants.append((
                f"  without {off}",
                lambda c, b, s=summarizer: replay(c, policy(b), s, counter),
            ))
    rows: list[list[str]] = []
    fold_times: list[float] = []
    fold_counts: dict[int, int] = {}
    for label, make in variants:
        cells = [label]
        for budget in budgets:
            kept = present = 0
            for conv in convs:
                run = make(conv, budget)
                if run.tokens > budget:
                    raise AssertionError(f"{label} {conv.sample_id}: {run.tokens} > {budget}")
                k, p = retention(conv, run)
                kept += k
                present += p
                if label == "extractive":
                    fold_times.extend(run.fold_seconds)
                    fold_counts[budget] = fold_counts.get(budget, 0) + run.folds
            cells.append(f"{100 * kept / present:.1f}%")
        rows.append(cells)
        print(" | ".join(cells), flush=True)
    report = _report(rows, budgets, fold_times, fold_counts, len(convs), counter)
    print(report)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report, encoding="utf-8")
    return 0


def _report(
    rows: list[list[str]],
    budgets: list[int],
    fold_times: list[float],
    fold_counts: dict[int, int],
    n: int,
    counter: TokenCounter,
) -> str:
    head = "| variant | " + " | ".join(f"B = {b:,}" for b in budgets) + " |"
    sep = "|---|" + "---:|" * len(budgets)
    lines = [
        "# Retention on LoCoMo (dev, 5 conversations)",
        "",
        f"Share of QA answers (categories 1-4) present in the final context; tokenizer "
        f"{counter.name}; replayed through `AsyncMemory` (in-memory store, inline folds) with "
        "the default `TokenBudget(B)` (target 85%, summary cap 60%) unless the row says "
        "otherwise. Generated by `python benchmarks/retention.py`.",
        "",
        "Ablations switch one technique off: `compress` (drop greetings, interjections, "
        "hedges and tone-only clauses), `dedupe` (merge repeated and contained sentences), "
        "`salience` (weights for names, places, numbers, dates; life-event/plan/preference "
        "cues; questions, reactions and generic sentences count less), `coverage` (a word "
        "already kept adds nothing again), `dates` (dated lines, one kept fact per day).",
        "",
        head,
        sep,
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]
    if fold_times:
        ms = sorted(t * 1000 for t in fold_times)
        lines += [
            f"Summarizer time per fold (all budgets, {len(ms)} folds over {n} conversations): "
            f"median {statistics.median(ms):.1f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.1f} ms, "
            f"max {ms[-1]:.1f} ms. Folds per budget: "
            + ", ".join(f"{b:,}: {fold_counts.get(b, 0)}" for b in budgets) + ".",
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
