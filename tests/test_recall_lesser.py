"""Recall's second tier: when every hit that passes the gate is shown and room is left,
the best matches of fewer of the query's terms (:func:`contextfold.recall.lesser_hits`)
take what is left — after the first tier, never in its place, and never without a first
tier (a query that finds nothing worth its tokens still gets the plain context)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import Memory, Message
from contextfold.errors import ConfigError
from contextfold.messages import StoredMessage
from contextfold.policy import TokenBudget
from contextfold.recall import (
    RECALL_HEADER,
    Recall,
    build_block,
    lesser_hits,
    plan_spans,
    turn_seqs,
)
from contextfold.stores.search import SearchHit
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.tokens import get_counter

START = datetime(2023, 5, 6, 10, 0, tzinfo=timezone.utc)
FILLER = [
    "I spent the afternoon repainting the fence in the back yard.",
    "Sounds tiring! Did the weather hold up for you?",
    "Mostly, a bit of drizzle near the end but nothing serious.",
    "We should grab coffee next week and catch up properly.",
]


class Terse:
    """A summary with none of the details, so the tests measure recall, not the summary."""

    name = "terse"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(text="John and Maria caught up about their weeks.")


def turn(i: int, text: str, day: int) -> Message:
    return Message(role="user" if i % 2 == 0 else "assistant",
                   name="John" if i % 2 == 0 else "Maria", content=text,
                   timestamp=START + timedelta(days=day))


def talk() -> list[Message]:
    """The answer ("West County") in a turn that shares one word with the question, the
    turn that matches it forty turns later, filler between and after."""
    out = [turn(0, "I want to work on improving my old area, West County, too.", 0),
           turn(1, "That sounds like a good plan, John.", 0)]
    out += [turn(i, f"{FILLER[i % 4]} (day {i})", 1 + i // 4) for i in range(2, 42)]
    out += [turn(42, "My old area was hit by a nasty flood last week.", 12),
            turn(43, "Oh no, I hope everyone is safe.", 12)]
    out += [turn(i, f"{FILLER[i % 4]} (day {i})", 13 + i // 4) for i in range(44, 90)]
    return out


def recalled(ctx_messages: tuple[Message, ...]) -> str:
    return " ".join(m.text for m in ctx_messages if m.text.startswith(RECALL_HEADER))


def test_a_one_word_match_fills_the_room_the_gate_leaves(store_url: str) -> None:
    """"What area was hit by a flood?": the flood turn passes the gate (two terms), the
    answer's turn matches one ("area") and comes in the room left; with no turn passing
    the gate the context is the plain one."""
    sid = f"l-{uuid.uuid4().hex[:12]}"
    with Memory(store_url, policy=TokenBudget(800), summarizer=Terse(),
                recall=Recall()) as mem:
        mem.add(sid, *talk())
        stats = mem.stats(sid)
        assert stats is not None and stats.through_seq > 44  # both turns folded
        ctx = mem.context(sid, query="What area was hit by a flood?")
        assert ctx.tokens <= 800
        shown = recalled(ctx.messages)
        assert "nasty flood" in shown and "West County" in shown
        assert 1 in ctx.recalled and 43 in ctx.recalled
        # one word of the question in any turn ("area"): nothing passes the gate
        plain = mem.context(sid)
        lone = mem.context(sid, query="Which area has the best bakery?")
        assert lone.messages == plain.messages and not lone.recalled
        mem.engine.recall = Recall(lesser=False)  # the first tier alone
        first = recalled(mem.context(sid, query="What area was hit by a flood?").messages)
        assert "nasty flood" in first and "West County" not in first


def test_lesser_is_checked() -> None:
    with pytest.raises(ConfigError, match="lesser"):
        Recall(lesser=1)  # type: ignore[arg-type]


def hit(seq: int, score: float, folded: bool = True) -> SearchHit:
    return SearchHit(seq, score, "assistant", START, "", folded, 1)


def test_lesser_hits_are_the_other_folded_hits_before_the_live_ones() -> None:
    first = [hit(5, 9.0)]
    found = [hit(5, 9.0), hit(9, 8.0), hit(30, 7.0), hit(40, 6.0, folded=False), hit(2, 1.0)]
    assert [h.seq for h in lesser_hits(found, first, live_from=30)] == [9, 2]
    assert turn_seqs([hit(1, 1.0), hit(9, 1.0)], live_from=10) == [1, 2, 8, 9]


def corpus(lengths: list[int]) -> dict[int, StoredMessage]:
    names = ["Jon", "Gina"]
    counter = get_counter(None)
    out = {}
    for seq, n in enumerate(lengths, start=1):
        msg = Message(role="assistant", name=names[seq % 2], timestamp=START,
                      content=" ".join(f"word{seq}x{k}" for k in range(n)))
        out[seq] = StoredMessage(seq, msg, counter.count(msg.text) + 8, folded=True)
    return out


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.integers(1, 60), min_size=4, max_size=40),
       picks=st.lists(st.integers(1, 40), min_size=1, max_size=8, unique=True),
       extra=st.lists(st.integers(1, 40), max_size=8, unique=True),
       room=st.integers(40, 1500), framed=st.integers(0, 3), neighbours=st.integers(0, 4))
def test_the_second_tier_stays_in_the_room_and_never_displaces_the_first(
        lengths: list[int], picks: list[int], extra: list[int], room: int, framed: int,
        neighbours: int) -> None:
    messages = corpus(lengths)
    n = len(lengths)
    first = [hit(s, 100.0 - i) for i, s in enumerate(picks) if s <= n]
    second = lesser_hits([hit(s, 50.0 - i) for i, s in enumerate(extra) if s <= n],
                         first, None)
    options = Recall(framed=framed, neighbours=neighbours)
    counter = get_counter(None)
    spans = plan_spans(first, messages, options)
    alone = build_block(spans, messages, counter, room, options)
    both = build_block(spans, messages, counter, room, options,
                       lesser=plan_spans(second, messages, options))
    for block in (alone, both):
        assert block is None or block.tokens <= room
    if alone is not None:
        assert both is not None and set(alone.seqs) <= set(both.seqs)
        assert both.tokens >= alone.tokens
