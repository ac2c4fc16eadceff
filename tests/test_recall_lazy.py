"""Recall packs its block a tier at a time and reads the second tier's turns a part at a
time, only as far as the room can take a line (:class:`contextfold.recall_block.Packer`,
:func:`contextfold.recall.recall_into`). Neither may change what is shown: the block is
the one :func:`~contextfold.recall.build_block` lays out from every hit's turns fetched
up front (the way recall read them before)."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import AsyncMemory, Message, recall
from contextfold.context import Context
from contextfold.messages import StoredMessage
from contextfold.policy import TokenBudget
from contextfold.recall import (
    LESSER_ROOM,
    Recall,
    build_block,
    lesser_hits,
    plan_spans,
    recall_into,
    relevant,
    turn_seqs,
    wanted_seqs,
)
from contextfold.recall_block import (
    MIN_LINE_TOKENS,
    Packer,
    RecallBlock,
    _block_lines,
    _block_message,
    _frame_tokens,
    _one_line,
    _own_turn,
    _quoted,
    _runs,
    _text_count,
    _text_tokens,
    _who,
    message_line,
)
from contextfold.search_terms import query_months, refine_terms
from contextfold.stores.base import Store
from contextfold.stores.search import SearchHit, clean_terms
from contextfold.tokens import (
    ApproximateCounter,
    TokenCounter,
    count_message,
    count_repeated,
    framing_tokens,
    get_counter,
)
from tests.conftest import store_url_of

START = datetime(2024, 2, 1, 8, 0, tzinfo=timezone.utc)


# the packing recall shipped before it packed a tier at a time, kept here as the oracle

def reference_block(spans: Sequence[tuple[int, Sequence[int]]],
                messages: Mapping[int, StoredMessage],
                counter: TokenCounter, room: int, options: Recall,
                summary_text: str | None = None,
                lesser: Sequence[tuple[int, Sequence[int]]] = ()) -> RecallBlock | None:
    """build_block as it was before the block was packed a tier at a time (the oracle)."""
    quoted = _one_line(summary_text) if summary_text else ""
    chosen: dict[int, StoredMessage] = {}
    lines: dict[int, str] = {}
    # the tokens of each seq's line, or None when it is not shown (not fetched, or quoted
    # by the summary): worked out once per seq, however often it is tried
    costs: dict[int, int | None] = {}
    used = _frame_tokens(counter)
    max_tokens = options.max_message_tokens

    def line_cost(seq: int) -> int | None:
        """A line's tokens, estimated from the stored count (the block is counted exactly
        once laid out); counted on the line itself when that count cannot tell. None: not
        shown (not fetched, or quoted by the summary)."""
        item = messages.get(seq)
        if item is None:
            return None
        msg = item.message
        content = msg.content
        if quoted and _quoted(content if isinstance(content, str) else msg.text, quoted):
            return None
        text = _text_tokens(item, counter)
        if text is not None and text <= max_tokens:
            return text + count_repeated(counter, _who(item) + ": ") + 2  # newline, date, gap
        lines[seq] = message_line(item, counter, max_tokens)
        return counter.count(lines[seq]) + 2

    def known(item: StoredMessage) -> bool:
        return bool(quoted) and _quoted(item.text, quoted)

    def take(seqs: Sequence[int]) -> bool:
        """Add the messages of ``seqs`` not shown yet, all or none, if they fit (False:
        they do not)."""
        nonlocal used
        new: list[int] = []
        cost = 0
        for seq in seqs:
            if seq in chosen:
                continue
            if seq in costs:
                tokens = costs[seq]
            else:
                tokens = costs[seq] = line_cost(seq)
            if tokens is not None:
                new.append(seq)
                cost += tokens
        if not new:
            return True
        if used + cost > room:
            return False
        used += cost
        for seq in new:
            chosen[seq] = messages[seq]
        return True

    hits = [(hit, span) for hit, span in spans
            if not (hit in messages and known(messages[hit]))]
    for rank, (hit, span) in enumerate(hits):
        if not take(span):  # too big with the hits around it: the hit's own turn, at least
            take(_own_turn(hit, span, messages))
        elif rank < options.framed:  # the best hits with the turns around them
            take([span[0] - 1])
            for after in range(1, options.frame_after + 1):
                take([span[-1] + after])
    # room left: the turns around the best hits, nearest first, up to ``neighbours`` away
    for d in range(1, options.neighbours + 1):
        for hit, _ in hits:
            if hit in chosen:
                take([hit - d])
                take([hit + d])
    for hit, span in lesser:  # the second tier: only the room left
        if not (hit in messages and known(messages[hit])) and not take(span):
            take(_own_turn(hit, span, messages))
    for seq, item in chosen.items():
        if seq not in lines:
            lines[seq] = message_line(item, counter, options.max_message_tokens,
                                      _text_tokens(item, counter))
    while chosen:
        parts = _block_lines(_runs(chosen), lines)
        message = _block_message("\n".join(parts))
        tokens = framing_tokens(counter, message) + _text_count(counter, parts)
        if tokens <= room:
            return RecallBlock(message, tokens, tuple(sorted(chosen)))
        freed = 0  # the estimate was short: drop the last taken until it covers the excess
        while chosen and freed < tokens - room:
            freed += costs.get(chosen.popitem()[0]) or 1
    return None


def hit(seq: int, score: float) -> SearchHit:
    return SearchHit(seq, score, "assistant", START, "", True, 1)


def corpus(lengths: list[int], asks: list[bool]) -> dict[int, StoredMessage]:
    counter = get_counter(None)
    out = {}
    for seq, (n, ask) in enumerate(zip(lengths, asks, strict=False), start=1):
        text = " ".join(f"k{k}" for k in range(n)) + ("?" if ask else ".")
        msg = Message(role="user" if seq % 2 else "assistant", name=["Ann", "Bo"][seq % 2],
                      content=text, timestamp=START + timedelta(hours=seq))
        out[seq] = StoredMessage(seq, msg, counter.count(text) + 8, folded=True)
    return out


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(1, 50), min_size=4, max_size=50),
       asks=st.lists(st.booleans(), min_size=50, max_size=50),
       picks=st.lists(st.integers(1, 50), min_size=1, max_size=8, unique=True),
       extra=st.lists(st.integers(1, 50), max_size=12, unique=True),
       cuts=st.lists(st.integers(1, 6), max_size=6),
       room=st.integers(40, 1500), framed=st.integers(0, 3), neighbours=st.integers(0, 4),
       approximate=st.booleans())
def test_a_tier_at_a_time_is_build_block(lengths: list[int], asks: list[bool],
                                         picks: list[int], extra: list[int], cuts: list[int],
                                         room: int, framed: int, neighbours: int,
                                         approximate: bool) -> None:
    """The first tier, the block laid out, then the second tier in parts (its spans
    planned a part at a time): the same block as build_block of both at once."""
    messages = corpus(lengths, asks)
    n = len(lengths)
    counter: TokenCounter = ApproximateCounter() if approximate else get_counter(None)
    first = [hit(s, 100.0 - i) for i, s in enumerate(picks) if s <= n]
    second = lesser_hits([hit(s, 50.0 - i) for i, s in enumerate(extra) if s <= n],
                         first, None)
    options = Recall(framed=framed, neighbours=neighbours)
    spans = plan_spans(first, messages, options)
    whole = reference_block(spans, messages, counter, room, options,
                            lesser=plan_spans(second, messages, options))
    assert build_block(spans, messages, counter, room, options,
                       lesser=plan_spans(second, messages, options)) == whole
    packer = Packer(messages, counter, room, options)
    packer.add_spans(spans)
    alone = reference_block(spans, messages, counter, room, options)
    laid = packer.layout()
    assert (laid is None) == (alone is None)
    if alone is not None and laid is not None:
        assert (laid[1], laid[2]) == (alone.tokens, alone.seqs)
    done = 0
    for size in [*cuts, len(second)]:
        part = second[done:done + size]
        done += len(part)
        packer.add_lesser(plan_spans(part, messages, options,
                                     others=[h.seq for h in second]))
    assert packer.block() == whole
    if whole is not None:
        assert whole.tokens <= room


class Nothing:
    """A counter that counts nothing (a plug-in counter may count 0 for a short text)."""

    name = "nothing"

    def count(self, text: str) -> int:
        return 0


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(st.characters(blacklist_characters="\x00",
                                                blacklist_categories=("Cs",)),
                                  max_size=30), min_size=1, max_size=6),
       names=st.lists(st.sampled_from([None, "Al", "Bea Lee"]), min_size=6, max_size=6),
       which=st.integers(0, 2), max_message_tokens=st.integers(16, 40))
def test_no_line_costs_less_than_the_least(texts: list[str], names: list[str | None],
                                           which: int, max_message_tokens: int) -> None:
    """The packer stops once less room is left than :data:`MIN_LINE_TOKENS`: no line may
    cost less, whatever the counter (so stopping there changes nothing)."""
    counter: TokenCounter = [Nothing(), ApproximateCounter(), get_counter(None)][which]
    messages = {}
    for seq, (text, name) in enumerate(zip(texts, names, strict=False), start=1):
        msg = Message(role="assistant", name=name, content=text)
        messages[seq] = StoredMessage(seq, msg, count_message(counter, msg), folded=True)
    packer = Packer(messages, counter, 10_000, Recall(max_message_tokens=max_message_tokens))
    for seq in messages:
        cost = packer._line_cost(seq)
        assert cost is not None and cost >= MIN_LINE_TOKENS


def test_a_full_packer_takes_nothing_more() -> None:
    messages = corpus([30] * 12, [False] * 12)
    counter = get_counter(None)
    options = Recall()
    spans = plan_spans([hit(3, 9.0)], messages, options)
    for room in range(40, 400):
        packer = Packer(messages, counter, room, options)
        packer.add_spans(spans)
        if packer.full:
            assert packer.free < MIN_LINE_TOKENS
            before = packer.layout()
            packer.add_lesser(plan_spans([hit(9, 1.0)], messages, options))
            assert packer.layout() == before


# -- recall_into against the eager reading of every turn -----------------------------------


def talk(seed: int) -> tuple[list[Message], list[str]]:
    """Two speakers over a small vocabulary (every word in many turns: many one-word
    matches for the second tier), questions among the turns."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("aeioubdgklmnprst") for _ in range(rng.randint(3, 7)))
             for _ in range(500)]
    out = []
    for i in range(400):
        words = " ".join(rng.choice(vocab) for _ in range(rng.randint(3, 40)))
        out.append(Message(role="user" if i % 2 == 0 else "assistant",
                           name=["Ann", "Bo"][i % 2],
                           content=words.capitalize() + ("?" if rng.random() < 0.3 else "."),
                           timestamp=START + timedelta(hours=5 * i)))
    return out, vocab


async def eager(store: Store, sid: str, ctx: Context, live: list[StoredMessage],
                options: Recall, counter: TokenCounter, query: str) -> RecallBlock | None:
    """The block as recall chose it with every turn fetched up front and the block built
    again with the second tier (no speaker or date in these queries)."""
    assert ctx.budget is not None
    room = min(options.room(ctx.budget), ctx.budget - ctx.tokens)
    terms = refine_terms(clean_terms([query]))
    live_from = live[0].seq if live else None
    need = math.ceil(max(min(options.min_matched, len(terms)),
                         options.min_coverage * len(terms)))
    found = await store.search(sid, terms, limit=options.limit, folded=True,
                               min_matched=need, snippets=False)
    hits = relevant(found, len(terms), options, live_from)
    if not hits or room < 32:
        return None
    fetched = await store.fetch(sid, wanted_seqs(hits, options, live_from))
    messages = {m.seq: m for m in fetched if m.folded}
    spans = plan_spans(hits, messages, options)
    block = reference_block(spans, messages, counter, room, options)
    if (options.lesser and block is not None and len(hits) < options.limit
            and room - block.tokens >= LESSER_ROOM):
        more = await store.search(sid, terms, limit=options.limit, folded=True,
                                  min_matched=1, snippets=False)
        lesser = lesser_hits(more, hits, live_from)
        if lesser:
            wanted = [s for s in turn_seqs(lesser, live_from) if s not in messages]
            messages.update((m.seq, m) for m in await store.fetch(sid, wanted) if m.folded)
            block = reference_block(spans, messages, counter, room, options,
                                    lesser=plan_spans(lesser, messages, options))
    return block


@pytest.mark.parametrize("parts", [None, 1, 3])
@pytest.mark.parametrize("store", ["memory", "sqlite", "postgres"])
def test_recall_shows_what_the_eager_reading_shows(
        store: str, parts: int | None, request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every query's context is the eager reading's (its parts as recall sizes them, and
    parts of one and three hits: spans reach hits of later parts). PostgreSQL reads the
    turns around the hits with its searches (``search_turns``): the same context."""
    if parts is not None:
        monkeypatch.setattr(recall, "_part_size", lambda packer: parts)
    msgs, vocab = talk(5)
    rng = random.Random(6)
    url = store_url_of(store, request, tmp_path_factory)
    sid = f"s-{parts}"
    counter = get_counter(None)

    async def run() -> int:
        compared = 0
        async with AsyncMemory(url, policy=TokenBudget(100_000), fold="manual") as memory:
            await memory.add(sid, *msgs[:-20])
            await memory.fold(sid, force=True)
            await memory.add(sid, *msgs[-20:])
            live = [m for m in await memory.messages(sid) if not m.folded]
            for i in range(200):
                query = " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 5)))
                if query_months(query) or {"ann", "bo"} & set(clean_terms([query])):
                    continue  # (no dates, no speakers: the reference reads neither)
                budget = rng.choice([300, 600, 1200, 3000])
                options = Recall(neighbours=rng.randint(0, 4), framed=rng.randint(0, 3),
                                 limit=rng.choice([5, 15, 40]))
                plain = Context(messages=(), tokens=budget // 3, budget=budget,
                                summary_included=False, live_count=0)
                got = await recall_into(memory.store, sid, plain, live, options=options,
                                        counter=counter, query=query)
                want = await eager(memory.store, sid, plain, live, options, counter, query)
                assert got.recalled == (() if want is None else want.seqs), (i, query)
                if want is not None:
                    assert got.messages == (want.message,) and got.tokens == \
                        plain.tokens + want.tokens
                compared += want is not None
        return compared

    assert asyncio.run(run()) > 100  # most queries show a block


class Counting:
    """A store's search and fetch, counted."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.searches: list[int] = []

    async def search(self, *args: Any, **kwargs: Any) -> Any:
        self.searches.append(kwargs["min_matched"])
        return await self.store.search(*args, **kwargs)

    async def fetch(self, *args: Any, **kwargs: Any) -> Any:
        return await self.store.fetch(*args, **kwargs)


def test_a_first_search_for_any_one_term_is_not_run_again(tmp_path: Path) -> None:
    """A query naming a speaker asks the store for one term fewer: with two terms, for
    any one of them — the second tier's own search. Its hits are used again (the store
    is searched once), and they fill the room the first tier leaves."""
    msgs, vocab = talk(5)
    counter = get_counter(None)

    async def run() -> int:
        filled = 0
        async with AsyncMemory(f"sqlite:///{tmp_path / 'once.db'}", fold="manual",
                               policy=TokenBudget(100_000)) as memory:
            await memory.add("s", *msgs[:-20])
            await memory.fold("s", force=True)
            await memory.add("s", *msgs[-20:])
            live = [m for m in await memory.messages("s") if not m.folded]
            plain = Context(messages=(), tokens=100, budget=20_000, summary_included=False,
                            live_count=0)
            for word in vocab[:40]:
                query = f"What did Ann say about {word} and {vocab[-1]}?"
                if query_months(query):
                    continue
                spy = Counting(memory.store)
                got = await recall_into(spy, "s", plain, live,  # type: ignore[arg-type]
                                        options=Recall(), counter=counter, query=query)
                assert spy.searches == [1]
                alone = await recall_into(memory.store, "s", plain, live,
                                          options=Recall(lesser=False), counter=counter,
                                          query=query)
                assert set(alone.recalled) <= set(got.recalled)
                filled += len(got.recalled) > len(alone.recalled)
        return filled

    assert asyncio.run(run()) > 5
