"""What recall costs with a provider's prompt cache: the bill per 1,000 turns, with and without.

Each LoCoMo dev conversation is replayed through the real engine (``AsyncMemory`` on the
in-memory store, inline folds, the offline summarizer, ``TokenBudget(B)``); after every
user message the context is built as an app would send it (with recall on, the newest user
message is the implicit query, behind the gate) and billed the way Anthropic bills a
request with prompt caching: one cache breakpoint at the end of the byte-stable prefix
(everything before the recalled block, or before the newest user message when there is
none); the longest prefix written by an earlier request is read from the cache (0.1× the
input price), the rest of the prefix is written to it (1.25×), and what follows the
breakpoint — the block and the newest user message — is fresh input (1×).

*Cache rewrites*: writes made when the prefix did not merely grow (a fold changed the
summary, or a trimmed view moved its start), so cached text had to be written again; the
share of the bill they take. The ratio row is the bill with recall over the bill without,
measured in the same run. Usage::

    python benchmarks/recall_bill.py [--data PATH] [--budget 4000] [--quick] [--no-write]

Prints the table and writes ``benchmarks/results/recall_bill.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retention_data import ROOT, Conversation, default_data, load

from contextfold.context import Context
from contextfold.engine import AsyncMemory
from contextfold.messages import Message
from contextfold.policy import TokenBudget
from contextfold.recall import RECALL_METADATA, Recall
from contextfold.tokens import TokenCounter, count_message, get_counter

RESULTS = ROOT / "benchmarks" / "results" / "recall_bill.md"
READ, WRITE, FRESH = 0.1, 1.25, 1.0


@dataclass
class Bill:
    turns: int = 0
    read: int = 0
    write: int = 0
    rewrite: int = 0
    fresh: int = 0
    recalled_turns: int = 0
    recalled_tokens: int = 0

    @property
    def cost(self) -> float:
        return READ * self.read + WRITE * self.write + FRESH * self.fresh

    def per_1000(self) -> float:
        return 1000 * self.cost / self.turns if self.turns else 0.0

    def add(self, other: Bill) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def breakpoint_at(ctx: Context) -> int:
    """Index of the first message after the byte-stable prefix: the recalled block, or
    the newest user message (the end when there is none)."""
    for i, m in enumerate(ctx.messages):
        if m.metadata == RECALL_METADATA:
            return i
    for i in range(len(ctx.messages) - 1, -1, -1):
        if ctx.messages[i].role == "user":
            return i
    return len(ctx.messages)


class Biller:
    """Anthropic-style prompt caching over a sequence of requests of one conversation."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.cached: list[tuple[Message, ...]] = []  # prefixes written so far
        self.bill = Bill()
        self._tokens: dict[int, tuple[Message, int]] = {}

    def tokens(self, m: Message) -> int:
        hit = self._tokens.get(id(m))
        if hit is None or hit[0] is not m:
            hit = self._tokens[id(m)] = (m, count_message(self.counter, m))
        return hit[1]

    def request(self, ctx: Context) -> None:
        k = breakpoint_at(ctx)
        prefix = ctx.messages[:k]
        best = 0
        for old in self.cached[-8:]:  # a cache entry lives 5 minutes: the recent ones
            n = 0
            while n < len(old) and n < len(prefix) and old[n] == prefix[n]:
                n += 1
            if n == len(old):
                best = max(best, n)  # a hit needs the whole written prefix
        last = self.cached[-1] if self.cached else ()
        grew = len(prefix) >= len(last) and prefix[: len(last)] == last
        read = sum(self.tokens(m) for m in prefix[:best])
        write = sum(self.tokens(m) for m in prefix[best:])
        fresh = sum(self.tokens(m) for m in ctx.messages[k:])
        b = self.bill
        b.turns += 1
        b.read += read
        b.write += write
        b.rewrite += 0 if grew else write
        b.fresh += fresh
        if ctx.recalled:
            b.recalled_turns += 1
            b.recalled_tokens += self.tokens(ctx.messages[k])
        if write:
            self.cached.append(prefix)


async def replay(conv: Conversation, budget: int, recall: Recall | None,
                 counter: TokenCounter) -> Bill:
    biller = Biller(counter)
    async with AsyncMemory("memory://", policy=TokenBudget(budget), tokenizer=counter,
                           raise_errors=True, recall=recall) as memory:
        for message in conv.messages:
            await memory.add(conv.sample_id, message)
            if message.role == "user":
                ctx = await memory.context(conv.sample_id)
                if ctx.tokens > budget:
                    raise AssertionError(f"{ctx.tokens} over the budget {budget}")
                biller.request(ctx)
    return biller.bill


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--tokenizer", default="o200k")
    parser.add_argument("--quick", action="store_true", help="two conversations")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"data set not found: {args.data}", file=sys.stderr)
        return 2
    convs = load(args.data)[: 2 if args.quick else None]
    counter = get_counter(args.tokenizer)
    variants: dict[str, Recall | None] = {
        "without recall": None,
        "recall (defaults, gate on)": Recall(),
        "recall, gate off (every turn searched)": Recall(gate="always"),
    }
    bills: dict[str, Bill] = {}
    for name, recall in variants.items():
        total = Bill()
        for conv in convs:
            total.add(asyncio.run(replay(conv, args.budget, recall, counter)))
        bills[name] = total
        print(f"  {name}: {total.per_1000():,.0f} per 1,000 turns", flush=True)
    base = bills["without recall"].per_1000()
    lines = [
        "# The bill with prompt caching, with and without recall",
        "",
        f"Generated by `python benchmarks/recall_bill.py{' --quick' if args.quick else ''}`; "
        f"LoCoMo dev, {len(convs)} conversations, {bills['without recall'].turns:,} user "
        f"turns, `TokenBudget({args.budget:,})`, tokenizer {counter.name}. Bill in input-token "
        f"units per 1,000 turns: cache read {READ}×, cache write {WRITE}×, fresh {FRESH}×.",
        "",
        "| | bill / 1,000 turns | × without | cache reads | writes | rewrite share of bill "
        "| fresh | turns with a block | block tokens (mean when shown) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, b in bills.items():
        lines.append(
            f"| {name} | {b.per_1000():,.0f} | {b.per_1000() / base:.2f}× | "
            f"{READ * b.read / b.cost:.0%} | {WRITE * b.write / b.cost:.0%} | "
            f"{WRITE * b.rewrite / b.cost:.1%} | {FRESH * b.fresh / b.cost:.0%} | "
            f"{b.recalled_turns / b.turns:.1%} | "
            f"{b.recalled_tokens / max(1, b.recalled_turns):,.0f} |")
    lines.append("")
    report = "\n".join(lines)
    print(report)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
