"""TokenBudget plans with the summary the fold is expected to produce: an LLM-sized
summary leaves the budget used, a larger one than planned never breaks the budget."""

from __future__ import annotations

import itertools

from contextfold import Memory, TokenBudget
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.testing.summarizers import FunctionSummarizer


def words(n: int) -> str:
    return " ".join(f"w{i % 10}" for i in range(n))


def turns(n: int) -> list[dict[str, str]]:
    return [
        {"role": ("user", "assistant")[i % 2], "content": f"turn {i} " + words(40)}
        for i in range(n)
    ]


def run(sizes: list[int], budget: int = 2000, n: int = 600) -> tuple[Memory, list[int]]:
    """Replay ``n`` turns with a summarizer whose summaries cycle through ``sizes``
    (approximate tokens); returns the memory and the context size after every turn."""
    cycle = itertools.cycle(sizes)

    def summarize(request: SummaryRequest) -> SummaryResult:
        size = min(next(cycle), request.max_tokens - 2)
        return SummaryResult(words(size), calls=1, input_tokens=1, output_tokens=size)

    memory = Memory("memory://", policy=TokenBudget(budget), tokenizer="approx",
                    summarizer=FunctionSummarizer(summarize))
    seen = []
    for msg in turns(n):
        memory.add("s", msg)
        seen.append(memory.context("s").tokens)
    return memory, seen


def test_a_small_summary_leaves_the_budget_used() -> None:
    memory, seen = run([200])
    steady = seen[len(seen) // 4:]
    assert max(seen) <= 2000
    assert sum(steady) / len(steady) >= 0.70 * 2000  # cap planning gave ~0.45
    usage = memory.usage("s")
    assert usage.folds >= 10
    assert usage.failed == 0
    memory.close()


def test_a_summary_larger_than_planned_never_breaks_the_budget() -> None:
    """Summaries alternate 150 / 1,100 tokens: after a big one the view trims and the
    next fold comes sooner; no context ever exceeds the budget, nothing is lost."""
    memory, seen = run([150, 1100, 150, 150])
    assert max(seen) <= 2000
    stats = memory.stats("s")
    assert stats is not None and stats.last_seq == 600
    stored = memory.messages("s")
    assert [m.seq for m in stored] == list(range(1, 601))
    assert stats.live_count == sum(not m.folded for m in stored)
    assert memory.usage("s").failed == 0
    memory.close()


def test_folds_give_the_summarizer_what_the_ratio_asks_and_little_more() -> None:
    """A 200-token summary and the default ``min_fold_ratio`` of 5: every fold reads the
    previous summary plus at least 5 × its size of messages (input ≤ 1.2 × folded over
    the session), and not much more — folding more than that only empties the context."""
    seen_input = seen_folded = 0

    def summarize(request: SummaryRequest) -> SummaryResult:
        nonlocal seen_input, seen_folded
        folded = sum(-(-len(m.message.text) // 4) for m in request.messages)
        seen_folded += folded
        seen_input += -(-len(request.previous) // 4) + folded
        return SummaryResult(words(267), calls=1, input_tokens=1, output_tokens=200)

    memory = Memory("memory://", policy=TokenBudget(2000), tokenizer="approx",
                    summarizer=FunctionSummarizer(summarize))
    sizes = []
    for msg in turns(800):
        memory.add("s", msg)
        sizes.append(memory.context("s").tokens)
    assert memory.usage("s").folds >= 10
    assert 1.15 <= seen_input / seen_folded <= 1.20
    steady = sizes[len(sizes) // 4:]
    assert max(sizes) <= 2000 and sum(steady) / len(steady) >= 0.70 * 2000
    memory.close()
