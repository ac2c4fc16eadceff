"""What recall costs with a provider's prompt cache: the bill per 1,000 turns, with and without.

Each LoCoMo dev conversation is replayed through the real engine (``AsyncMemory`` on the
in-memory store, inline folds, the offline summarizer, ``TokenBudget(B)``); after every
user message the context is built as an app would send it (with recall on, the newest user
message is the implicit query, behind the gate) and billed the way Anthropic bills a
request with prompt caching (:class:`Biller`). The request is a list of content blocks:
one per message, except that the summary block is sent as its cache-stable parts
(``contextfold.summary_block.summary_blocks``: the label with the summary as last written whole,
then each part a fold appended since). Two cache breakpoints: after the last summary part,
and at the end of the byte-stable prefix (everything before the recalled block, or before
the newest user message when there is none). The longest run of leading blocks that an
earlier request's breakpoint wrote is read from the cache (0.1× the input price; a
breakpoint looks back over at most 20 block boundaries; an entry lives while requests keep
using it, :data:`LIVE_REQUESTS`), the rest of the prefix is written to it (1.25×), and
what follows the last breakpoint — the block and the newest user message — is fresh input
(1×). A provider that caches the longest prefix it has seen (OpenAI) reads at least as
much without breakpoints (it caches in 128-token steps, which this ignores). Before the
summary could be extended the summary block was one part, and a fold rewrote all of it.

Writes are told apart by cause (see :class:`Bill`): *first writes* put conversation text
in the cache once — the previous turn's user message and reply, which any cached
conversation pays; the *cache rewrite* is what a changed prefix costs — the summary a
fold wrote (all of it when written whole, the appended part when extended), and the turns
after it, cached before and written again (likewise turns after a trimmed view's new
start). Its share is given of the bill and of the input tokens (the target, at most 10%
with recall on, is read against the input tokens). The ratio
column is the bill with recall over the bill without, measured in the same run. Each
budget is replayed with the summary rewritten at every fold (the default) and extended
(``ExtractiveSummarizer(extend=True)``).
``--target`` / ``--summary`` set ``TokenBudget``'s target and summary cap as shares of the
budget, to see how the rewrite share follows the gap between fold trigger and target.
Usage::

    python benchmarks/recall_bill.py [--data PATH] [--budget 2000,4000,8000] [--target 0.85]
        [--summary 0.6] [--quick] [--no-write]

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

from retention_data import ROOT, Conversation, default_data, load, publish

from contextfold.context import SUMMARY_HEADER, Context
from contextfold.engine import AsyncMemory
from contextfold.messages import Message
from contextfold.policy import TokenBudget
from contextfold.recall import RECALL_METADATA, Recall
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.summary_block import summary_blocks
from contextfold.tokens import TokenCounter, count_message, get_counter

RESULTS = ROOT / "benchmarks" / "results" / "recall_bill.md"
READ, WRITE, FRESH = 0.1, 1.25, 1.0
#: Block boundaries a breakpoint looks back over for an earlier entry (Anthropic: about 20).
LOOKBACK = 20
#: Requests an entry outlives its last use by (a stand-in for the 5-minute TTL).
LIVE_REQUESTS = 8


@dataclass
class Bill:
    """Input tokens of a sequence of requests, by how the provider bills them.

    ``read``: prefix tokens read from the cache (0.1×). Writes (1.25×), split by why they
    were written: ``grow`` — conversation text cached for the first time (the previous
    turn's user message and reply, once each: what any cached conversation pays);
    ``summary`` — a new rolling summary, written after a fold; ``rewrite`` — text that
    was cached before and is written again because something before it in the prefix
    changed (a fold replaced the summary and the turns it folded, or the view trimmed
    its oldest turns). ``fresh``: what follows the breakpoint (the recalled block, the
    newest user message), billed 1× every request."""

    turns: int = 0
    read: int = 0
    grow: int = 0
    summary: int = 0
    rewrite: int = 0
    fresh: int = 0
    prefix_changes: int = 0
    folds: int = 0
    recalled_turns: int = 0
    recalled_tokens: int = 0

    @property
    def write(self) -> int:
        return self.grow + self.summary + self.rewrite

    @property
    def cost(self) -> float:
        return READ * self.read + WRITE * self.write + FRESH * self.fresh

    def per_1000(self) -> float:
        return 1000 * self.cost / self.turns if self.turns else 0.0

    def share(self, tokens: int, price: float = WRITE) -> float:
        return price * tokens / self.cost if self.cost else 0.0

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


#: A content block of the prompt: (role, text, tool-call ids, part of the summary block).
Block = tuple[str, str, tuple[str, ...], bool]


class Biller:
    """Anthropic-style prompt caching over a sequence of requests of one conversation.

    The request is a list of content blocks: one per message, except the summary block,
    sent as its cache-stable parts (:func:`~contextfold.summary_block.summary_blocks`: the label
    with the first segment, then each segment an extension appended). Breakpoints
    (``cache_control``): after the last summary part, and at the end of the byte-stable
    prefix. A breakpoint writes a cache entry for the blocks up to it; a request reads the
    longest run of leading blocks that an entry holds, looking back from each breakpoint
    over at most :data:`LOOKBACK` block boundaries. Entries live while used: those written
    or read by the last :data:`LIVE_REQUESTS` requests (a 5-minute TTL refreshed on use).
    The rest of the prefix is written; what follows the last breakpoint is fresh."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.entries: dict[tuple[Block, ...], int] = {}  # prefix -> request last used
        self.seen: set[Block] = set()  # text ever cached (summary parts aside)
        self.bill = Bill()
        self._tokens: dict[int, tuple[Message, list[int]]] = {}
        self._summary_version = 0
        self._last: tuple[Block, ...] = ()

    def parts(self, m: Message, summary: bool) -> tuple[list[Block], list[int]]:
        """The blocks ``m`` is sent as, and their tokens (the message's count, split)."""
        texts = summary_blocks(m.text) if summary else [m.text]
        hit = self._tokens.get(id(m))
        if hit is None or hit[0] is not m:
            total = count_message(self.counter, m)
            rest = [self.counter.count(t) for t in texts[1:]]
            hit = self._tokens[id(m)] = (m, [total - sum(rest), *rest])
        ids = tuple(c.id for c in m.tool_calls)
        return [(m.role, t, ids, summary) for t in texts], hit[1]

    def request(self, ctx: Context) -> None:
        k = breakpoint_at(ctx)
        blocks: list[Block] = []
        tokens: list[int] = []
        marks: list[int] = []  # block counts at the breakpoints
        for i, m in enumerate(ctx.messages[:k]):
            summary = ctx.summary_included and i == self._summary_index(ctx)
            more, sizes = self.parts(m, summary)
            blocks += more
            tokens += sizes
            if summary:
                marks.append(len(blocks))
        marks.append(len(blocks))
        prefix = tuple(blocks)
        n_req = self.bill.turns
        best = 0
        for mark in marks:
            for end in range(mark, max(0, mark - LOOKBACK) - 1, -1):
                if end <= best:
                    break
                used = self.entries.get(prefix[:end])
                if used is not None and n_req - used <= LIVE_REQUESTS:
                    best = end
                    break
        b = self.bill
        b.turns += 1
        b.read += sum(tokens[:best])
        for block, size in zip(blocks[best:], tokens[best:], strict=True):
            if block[3]:
                b.summary += size
            elif block in self.seen:
                b.rewrite += size
            else:
                b.grow += size
            if not block[3]:
                self.seen.add(block)
        if best:
            self.entries[prefix[:best]] = n_req  # read: its life starts again
        for mark in marks:
            if mark > best:
                self.entries[prefix[:mark]] = n_req
        b.fresh += sum(self.parts(m, False)[1][0] for m in ctx.messages[k:])
        if prefix[:best] != self._last and self._last:
            b.prefix_changes += 1  # the newest cached prefix no longer matches whole
        self._last = prefix
        version = ctx.summary.version if ctx.summary is not None else 0
        if version != self._summary_version:
            b.folds += 1
            self._summary_version = version
        if ctx.recalled:
            b.recalled_turns += 1
            b.recalled_tokens += self.parts(ctx.messages[k], False)[1][0]
        if len(self.entries) > 4 * LIVE_REQUESTS:
            self.entries = {p: u for p, u in self.entries.items()
                            if n_req - u <= LIVE_REQUESTS}

    @staticmethod
    def _summary_index(ctx: Context) -> int:
        for i, m in enumerate(ctx.messages):
            if m.role == "system" and m.text.startswith(SUMMARY_HEADER):
                return i
        return -1


async def replay(conv: Conversation, budget: int, recall: Recall | None,
                 counter: TokenCounter, target: float | None = None,
                 summary: float | None = None, extend: bool = False) -> Bill:
    biller = Biller(counter)
    policy = TokenBudget(budget, target=None if target is None else int(budget * target),
                         summary_max_tokens=None if summary is None else int(budget * summary))
    async with AsyncMemory("memory://", policy=policy, tokenizer=counter,
                           summarizer=ExtractiveSummarizer(extend=extend),
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
    parser.add_argument("--budget", default="4000", help="one or more, comma-separated")
    parser.add_argument("--target", type=float, default=None,
                        help="TokenBudget's target as a share of the budget (default 0.85)")
    parser.add_argument("--summary", type=float, default=None,
                        help="TokenBudget's summary_max_tokens as a share (default 0.6)")
    parser.add_argument("--tokenizer", default="o200k")
    parser.add_argument("--quick", action="store_true", help="two conversations")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"data set not found: {args.data}", file=sys.stderr)
        return 2
    convs = load(args.data)[: 2 if args.quick else None]
    counter = get_counter(args.tokenizer)
    budgets = [int(b) for b in str(args.budget).split(",")]
    variants: dict[str, tuple[Recall | None, bool]] = {}
    for extend, mode in ((False, "summary rewritten at every fold (default)"),
                         (True, "summary extended (`extend=True`)")):
        variants[f"{mode}: without recall"] = (None, extend)
        variants[f"{mode}: recall (defaults, gate on)"] = (Recall(), extend)
        variants[f"{mode}: recall, gate off (every turn searched)"] = (
            Recall(gate="always"), extend)
    lines = [
        "# The bill with prompt caching, with and without recall",
        "",
        f"Generated by `python benchmarks/recall_bill.py --budget {args.budget}"
        f"{' --quick' if args.quick else ''}`; LoCoMo dev, {len(convs)} conversations, "
        f"tokenizer {counter.name}. Bill in input-token units per 1,000 user turns: cache "
        f"read {READ}×, cache write {WRITE}×, fresh {FRESH}×; the summary block sent as its "
        "cache-stable parts with a breakpoint after them, and one at the end of the "
        "byte-stable prefix (see the module docstring). Shares are of the bill. Writes by "
        "cause: *first writes* cache conversation text once (any cached conversation pays "
        "them); *cache rewrite* = the summary a fold wrote (all of it, or the part an "
        "extension appended) plus the text cached before and written again because the "
        "prefix changed in front of it. *× without*: the bill over the bill without recall "
        "with the same summarizer, in the same run.",
    ]
    for budget in budgets:
        bills: dict[str, Bill] = {}
        for name, (recall, extend) in variants.items():
            total = Bill()
            for conv in convs:
                total.add(asyncio.run(replay(conv, budget, recall, counter, args.target,
                                               args.summary, extend)))
            bills[name] = total
            print(f"  B={budget}, {name}: {total.per_1000():,.0f} per 1,000 turns", flush=True)
        bases = {name: bills[name.split(":")[0] + ": without recall"].per_1000()
                 for name in bills}
        policy = f"{budget:,}"
        if args.target is not None:
            policy += f", target={int(budget * args.target):,}"
        if args.summary is not None:
            policy += f", summary_max_tokens={int(budget * args.summary):,}"
        turns = next(iter(bills.values())).turns
        lines += [
            "",
            f"## `TokenBudget({policy})`, {turns:,} user turns",
            "",
            "| | bill / 1,000 turns | × without | cache reads | first writes "
            "| **cache rewrite** (summary + rewritten turns) | fresh "
            "| rewritten, share of input tokens | folds / 1,000 turns "
            "| rewritten tokens per fold | turns with a block | block tokens (mean when shown) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, b in bills.items():
            lines.append(
                f"| {name} | {b.per_1000():,.0f} | {b.per_1000() / bases[name]:.2f}× | "
                f"{b.share(b.read, READ):.0%} | {b.share(b.grow):.0%} | "
                f"**{b.share(b.summary + b.rewrite):.1%}** ({b.share(b.summary):.0%} + "
                f"{b.share(b.rewrite):.0%}) | {b.share(b.fresh, FRESH):.0%} | "
                f"{(b.summary + b.rewrite) / max(1, b.read + b.write + b.fresh):.1%} | "
                f"{1000 * b.folds / b.turns:.0f} | "
                f"{(b.summary + b.rewrite) / max(1, b.folds):,.0f} | "
                f"{b.recalled_turns / b.turns:.1%} | "
                f"{b.recalled_tokens / max(1, b.recalled_turns):,.0f} |")
    lines.append("")
    publish(lines, RESULTS, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
