"""Information retention of the offline summarizer, measured so that over-fitting shows.

Three evaluation sets, each replayed through the real engine (``AsyncMemory`` on the
in-memory store, inline folds, the default ``TokenBudget(B)``) at B = 2,000 / 4,000 /
8,000 tokens, against plain truncation (the newest messages that fit in B):

1. **LoCoMo dev** (``locomo_dev.json``, read at run time, never copied): the share of QA
   answers (categories 1-4) present in the final context, counted over answers present
   in the full conversation. Every weight is chosen by leave-one-conversation-out
   cross-validation (``retention_cv.py``); the table shows the in-sample figure (weights
   chosen on all five conversations, which is what ships), the cross-validated mean over
   held-out conversations, the worst held-out conversation, and the gap.
2. **Messy synthetic chats** (``contextfold.testing.messy_chats``): bursts, lower case,
   nicknames, emoji, typos, relative dates and later corrections; planted facts kept, kept
   under the right speaker, stale corrected values shown alone, relative dates resolved.
3. **Planted facts per language** (``contextfold.testing.planted_languages``): English,
   Turkish, German, Spanish, French and Russian.

Also times the summarizer alone on 2,000-token spans (median per fold). Usage::

    python benchmarks/retention.py [--data PATH] [--sets locomo,messy,languages]
        [--budgets 2000,4000,8000] [--passes 1] [--jobs 2] [--ablations] [--no-write]

Prints the tables and writes ``benchmarks/results/retention.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retention_cv import FULL_GRID, GRID, CVResult, Evaluator, cross_validate
from retention_data import ROOT, default_data, load, publish, replay, retention, truncate

from contextfold.memory import AsyncMemory
from contextfold.messages import Message, StoredMessage
from contextfold.policy import TokenBudget
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.summarizers.weights import DESIGN_WEIGHTS
from contextfold.testing.messy_chats import messy_chats
from contextfold.testing.planted import ChatScore, PlantedChat, score
from contextfold.tokens import TokenCounter, count_message, get_counter

RESULTS = ROOT / "benchmarks" / "results" / "retention.md"


def _pct(x: float) -> str:
    return f"{x:.1f}%"


# -- LoCoMo ------------------------------------------------------------------------------


def locomo_section(args: argparse.Namespace, counter: TokenCounter) -> tuple[list[str], CVResult]:
    ev = Evaluator(args.data, args.budgets, args.jobs, args.tokenizer)
    print(f"LoCoMo cross-validation ({len(ev.convs)} conversations, cache {ev.cache_path})",
          flush=True)
    grid = FULL_GRID if args.grid == "full" else GRID
    result = cross_validate(ev, passes=args.passes, grid=grid)
    convs = ev.convs
    trunc = []
    trunc_conv: list[list[float]] = []
    for b in args.budgets:
        kept = present = 0
        row = []
        for conv in convs:
            k, p = retention(conv, truncate(conv, b, counter))
            kept += k
            present += p
            row.append(100 * k / p)
        trunc.append(100 * kept / present)
        trunc_conv.append(row)
    n = len(convs)
    nb = len(args.budgets)
    mean_in = [statistics.fmean(result.in_sample[c][j] for c in range(n)) for j in range(nb)]
    mean_out = [statistics.fmean(result.held_out[c][j] for c in range(n)) for j in range(nb)]
    worst = [min(result.held_out[c][j] for c in range(n)) for j in range(nb)]
    head = "| | " + " | ".join(f"B = {b:,}" for b in args.budgets) + " |"
    sep = "|---|" + "---:|" * nb
    lines = [
        f"## LoCoMo dev ({n} conversations): answers kept",
        "",
        "Weights chosen by leave-one-conversation-out cross-validation (coordinate ascent "
        f"over {len(grid)} weights, {args.passes} pass(es), {result.configs} weight "
        "configurations replayed). *In-sample*: the weights chosen on all five (shipped). "
        "*Held-out*: each conversation scored with the weights chosen on the other four. "
        "Pooled = answers kept / answers present over all conversations; mean = mean of "
        "per-conversation shares.",
        "",
        head,
        sep,
        "| truncation (pooled) | " + " | ".join(_pct(x) for x in trunc) + " |",
        "| in-sample (pooled) | " + " | ".join(_pct(x) for x in result.pooled_in) + " |",
        "| held-out (pooled) | " + " | ".join(_pct(x) for x in result.pooled_out) + " |",
        "| in-sample (mean) | " + " | ".join(_pct(x) for x in mean_in) + " |",
        "| **cross-validated mean** | " + " | ".join(f"**{_pct(x)}**" for x in mean_out)
        + " |",
        "| worst held-out conversation | " + " | ".join(_pct(x) for x in worst) + " |",
        "| gap in-sample − CV (mean) | "
        + " | ".join(f"{a - b:+.1f}" for a, b in zip(mean_in, mean_out, strict=True)) + " |",
        "",
        "Per conversation (held-out / in-sample / truncation):",
        "",
        head,
        sep,
        *(
            f"| {result.conversations[c]} | "
            + " | ".join(
                f"{result.held_out[c][j]:.1f} / {result.in_sample[c][j]:.1f} / "
                f"{trunc_conv[j][c]:.1f}"
                for j in range(nb)
            )
            + " |"
            for c in range(n)
        ),
        "",
        "Weights chosen (design value → in-sample choice; per held-out fold):",
        "",
        "| weight | design | in-sample | " + " | ".join(result.conversations) + " |",
        "|---|---:|---:|" + "---:|" * n,
        *(
            f"| {p} | {getattr(DESIGN_WEIGHTS, p)} | {getattr(result.chosen['all'], p)} | "
            + " | ".join(str(getattr(result.chosen[s], p)) for s in result.conversations)
            + " |"
            for p in grid
        ),
        "",
    ]
    if args.ablations:
        lines += ablations(args, counter, convs)
    return lines, result


def ablations(args: argparse.Namespace, counter: TokenCounter, convs: list) -> list[str]:
    rows = []
    for off in ("compress", "dedupe", "salience", "coverage", "dates", "corrections",
                "resolve_dates"):
        cells = []
        for b in args.budgets:
            kept = present = 0
            for conv in convs:
                s = ExtractiveSummarizer(**{off: False})
                k, p = retention(conv, replay(conv, TokenBudget(b), s, counter))
                kept += k
                present += p
            cells.append(_pct(100 * kept / present))
        rows.append(f"| without {off} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    return ["Ablations (shipped weights, one technique off, pooled):", "",
            "| variant | " + " | ".join(f"B = {b:,}" for b in args.budgets) + " |",
            "|---|" + "---:|" * len(args.budgets), *rows, ""]


# -- planted-fact sets -------------------------------------------------------------------


async def _context(chat: PlantedChat, budget: int, counter: TokenCounter,
                   summarizer: ExtractiveSummarizer) -> list[Message]:
    async with AsyncMemory("memory://", summarizer=summarizer, policy=TokenBudget(budget),
                           tokenizer=counter, raise_errors=True) as memory:
        for message in chat.messages:
            await memory.add(chat.name, message)
        context = await memory.context(chat.name)
    if context.tokens > budget:
        raise AssertionError(f"{chat.name}: {context.tokens} > {budget}")
    return list(context.messages)


def _truncated(chat: PlantedChat, budget: int, counter: TokenCounter) -> list[Message]:
    used, kept = 3, 0
    for msg in reversed(chat.messages):
        cost = count_message(counter, msg)
        if used + cost > budget:
            break
        used += cost
        kept += 1
    return chat.messages[len(chat.messages) - kept :]


def planted_scores(chats: Sequence[PlantedChat], budget: int, counter: TokenCounter,
                   make: Callable[[], ExtractiveSummarizer]) -> tuple[ChatScore, ChatScore]:
    ours, trunc = ChatScore(), ChatScore()
    for chat in chats:
        ours.add(score(chat, asyncio.run(_context(chat, budget, counter, make()))))
        trunc.add(score(chat, _truncated(chat, budget, counter)))
    return ours, trunc


def messy_section(args: argparse.Namespace, counter: TokenCounter) -> list[str]:
    chats = messy_chats()
    tokens = [sum(count_message(counter, m) for m in c.messages) for c in chats]
    lines = [
        f"## Messy synthetic chats ({len(chats)} chats, {statistics.fmean(tokens):,.0f} "
        f"tokens and {statistics.fmean(len(c.messages) for c in chats):.0f} messages on "
        f"average, {len(chats[0].facts)} planted facts each)",
        "",
        "| B | truncation | extractive | ratio | attributed | stale value alone in "
        "summary | relative dates resolved (of those in summary) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for b in args.budgets:
        ours, trunc = planted_scores(chats, b, counter, ExtractiveSummarizer)
        ratio = ours.share / trunc.share if trunc.share else float("inf")
        lines.append(
            f"| {b:,} | {_pct(100 * trunc.share)} | {_pct(100 * ours.share)} | "
            f"{ratio:.1f}× | {ours.attributed}/{ours.kept} | "
            f"{ours.stale_alone}/{ours.corrections} | {ours.resolved}/{ours.relative} |")
        print(lines[-1], flush=True)
    return [*lines, ""]


def languages_section(args: argparse.Namespace, counter: TokenCounter) -> list[str]:
    from contextfold.testing.planted_languages import language_chats

    lines = [
        "## Planted facts per language",
        "",
        "| language | tokens | facts | " + " | ".join(
            f"B = {b:,} trunc → ours" for b in args.budgets) + " | ratio at "
        f"{args.budgets[0]:,} |",
        "|---|---:|---:|" + "---:|" * (len(args.budgets) + 1),
    ]
    for chat in language_chats():
        tokens = sum(count_message(counter, m) for m in chat.messages)
        cells = []
        first_ratio = 0.0
        for j, b in enumerate(args.budgets):
            ours, trunc = planted_scores([chat], b, counter, ExtractiveSummarizer)
            cells.append(f"{trunc.kept}/{trunc.total} → {ours.kept}/{ours.total}")
            if j == 0:
                first_ratio = ours.share / trunc.share if trunc.share else float("inf")
        lines.append(f"| {chat.language} | {tokens:,} | {len(chat.facts)} | "
                     + " | ".join(cells) + f" | {first_ratio:.1f}× |")
        print(lines[-1], flush=True)
    return [*lines, ""]


# -- timing ------------------------------------------------------------------------------


def timing_section(args: argparse.Namespace, counter: TokenCounter) -> list[str]:
    """The summarizer alone on consecutive ~2,000-token spans (no engine, no store)."""
    from contextfold.testing.planted_languages import language_chats

    spans: dict[str, list[list[Message]]] = {}
    sources: dict[str, list[Message]] = {}
    if args.data.exists():
        for conv in load(args.data):
            sources[f"locomo {conv.sample_id}"] = conv.messages
    for chat in messy_chats()[:2]:
        sources[chat.name] = chat.messages
    for chat in language_chats():
        sources[f"planted {chat.language}"] = chat.messages
    for name, messages in sources.items():
        span: list[Message] = []
        used = 0
        for m in messages:
            span.append(m)
            used += count_message(counter, m)
            if used >= 2000:
                spans.setdefault(name, []).append(span)
                span, used = [], 0
    variants = {
        "shipped": ExtractiveSummarizer(),
        "without date resolution": ExtractiveSummarizer(resolve_dates=False),
        "without bursts, corrections, date resolution": ExtractiveSummarizer(
            resolve_dates=False, bursts=False, corrections=False),
    }
    rows = []
    for label, summarizer in variants.items():
        for warm in ("warm up", "yesterday we went out"):
            summarizer.fold("", [StoredMessage(1, Message(role="user", content=warm), 0)],
                            100, counter)
        for mode in ("fresh", "rolling"):
            wall: list[float] = []
            cpu: list[float] = []
            for chunks in spans.values():
                previous = ""
                for chunk in chunks:
                    stored = [StoredMessage(i + 1, m, 0) for i, m in enumerate(chunk)]
                    t0, c0 = time.perf_counter(), time.process_time()
                    out = summarizer.fold(previous if mode == "rolling" else "", stored,
                                          1200, counter)
                    wall.append((time.perf_counter() - t0) * 1000)
                    cpu.append((time.process_time() - c0) * 1000)
                    previous = out
            wall.sort()
            rows.append(
                f"| {label} | {mode} | {statistics.median(wall):.1f} | "
                f"{wall[int(0.95 * (len(wall) - 1))]:.1f} | {statistics.median(cpu):.1f} |")
            print(rows[-1], flush=True)
    n = sum(len(c) for c in spans.values())
    line = "\n".join([
        f"The summarizer alone (no engine, no store) on {n} consecutive ~2,000-token spans "
        "of every set (summary cap 1,200 tokens); *fresh*: no previous summary, *rolling*: "
        "each span folded into the previous span's summary (~3,000 tokens in). The machine "
        "was shared (2 cores, load average 8-16 during the run): wall times are inflated, "
        "compare rows with each other; CPU time is less affected.",
        "",
        "| variant | summary | median ms | p95 ms | median CPU ms |",
        "|---|---|---:|---:|---:|",
        *rows,
    ])
    return ["## Time per fold", "", line, ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--tokenizer", default="o200k")
    parser.add_argument("--sets", default="locomo,messy,languages,timing")
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--grid", choices=("main", "full"), default="main")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ablations", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    args.budgets = [int(b) for b in args.budgets.split(",")]
    sets = set(args.sets.split(","))
    counter = get_counter(args.tokenizer)
    lines = [
        "# Retention of the offline summarizer",
        "",
        f"Generated by `python benchmarks/retention.py`; tokenizer {counter.name}; default "
        "`TokenBudget(B)`; every context checked to be within B.",
        "",
    ]
    if "locomo" in sets:
        if not args.data.exists():
            print(f"data set not found: {args.data}", file=sys.stderr)
            return 2
        section, _ = locomo_section(args, counter)
        lines += section
    if "messy" in sets:
        lines += messy_section(args, counter)
    if "languages" in sets:
        lines += languages_section(args, counter)
    if "timing" in sets:
        lines += timing_section(args, counter)
    publish(lines, RESULTS, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
