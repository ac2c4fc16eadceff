"""Cache-stable rolling summaries: a fold that extends keeps the previous summary block as a
byte prefix of the new one, and never goes over the cap; one that cannot, compacts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold.context import render_summary
from contextfold.memory import Memory
from contextfold.messages import Message, StoredMessage
from contextfold.policy import TokenBudget
from contextfold.summarizers.base import SummaryRequest, check_summary
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.summary_block import SEGMENT_BREAK, SUMMARY_HEADER, summary_blocks
from contextfold.tokens import get_counter

O200K = get_counter("o200k")
DAY = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

WORDS = ["Lisbon", "violin", "marathon", "Priya", "garden", "budget", "Tokyo", "promotion",
         "adoption", "painting", "camping", "Boston", "17:40", "2,400", "sister", "novel"]


def fold(summarizer: ExtractiveSummarizer, previous: str, messages: Sequence[Message],
         first_seq: int, cap: int) -> str:
    span = [StoredMessage(first_seq + i, m, 0) for i, m in enumerate(messages)]
    request = SummaryRequest("s", previous, span, cap, O200K)
    return check_summary(asyncio.run(summarizer.summarize(request)), request).text


sentence = st.lists(st.sampled_from(WORDS), min_size=2, max_size=7).map(
    lambda ws: "I told you about " + " and ".join(ws) + ".")
chunk = st.lists(st.tuples(st.sampled_from(["Ann", "Ben"]), sentence), min_size=1, max_size=8)


@SETTINGS
@given(st.lists(chunk, min_size=2, max_size=6), st.integers(min_value=40, max_value=600),
       st.sampled_from([0.5, 0.7, 0.9]), st.sampled_from([1.0, 3.0]))
def test_each_fold_extends_as_a_byte_prefix_or_compacts_under_the_cap(
    chunks: list[list[tuple[str, str]]], cap: int, compact_to: float, share: float
) -> None:
    summarizer = ExtractiveSummarizer(extend=True, compact_to=compact_to, extend_share=share)
    previous, seq = "", 1
    for k, lines in enumerate(chunks):
        day = DAY + timedelta(days=k)
        messages = [Message(role="user", name=who, content=text, timestamp=day)
                    for who, text in lines]
        text = fold(summarizer, previous, messages, seq, cap)
        seq += len(messages)
        assert O200K.count(text) <= cap
        old, new = render_summary(previous).text, render_summary(text).text
        if previous and (text == previous or text.startswith(previous + SEGMENT_BREAK)):
            # an extension: the previous block is a byte prefix, its cache parts too
            assert new.startswith(old)
            assert summary_blocks(new)[: len(summary_blocks(old))] == summary_blocks(old)
        else:  # a compaction: written whole, to the lower fill
            assert SEGMENT_BREAK not in text
            assert O200K.count(text) <= max(1, int(cap * compact_to))
        previous = text


def test_a_fold_with_room_appends_the_new_facts_after_the_old_text() -> None:
    summarizer = ExtractiveSummarizer(extend=True, compact_to=0.5, extend_share=0.5)
    first = fold(summarizer, "", [Message(role="user", name="Ann", timestamp=DAY,
                                          content="I started learning the violin in Lisbon.")],
                 1, 400)
    later = [Message(role="user", name="Ann", timestamp=DAY + timedelta(days=3),
                     content="My sister Priya ran the Boston marathon in 3 hours.")]
    text = fold(summarizer, first, later, 2, 400)
    assert text.startswith(first + SEGMENT_BREAK)
    assert "Priya" in text[len(first):]


def test_a_full_summary_compacts_to_the_lower_fill() -> None:
    summarizer = ExtractiveSummarizer(extend=True, compact_to=0.5)
    facts = [f"I visited {w} with my sister on day {i}." for i, w in enumerate(WORDS)]
    full = fold(summarizer, "", [Message(role="user", name="Ann", timestamp=DAY, content=t)
                                 for t in facts], 1, 10_000)
    cap = O200K.count(full) + 4  # nearly no room left
    more = [Message(role="user", name="Ann", timestamp=DAY + timedelta(days=1),
                    content="I got the promotion at the Tokyo office, 2,400 more a year.")]
    text = fold(summarizer, full, more, len(facts) + 1, cap)
    assert SEGMENT_BREAK not in text and O200K.count(text) <= cap // 2


def test_a_correction_compacts_so_the_stale_value_goes() -> None:
    summarizer = ExtractiveSummarizer(extend=True)
    first = fold(summarizer, "", [Message(role="user", name="Tom", timestamp=DAY,
                                          content="My flight is at 16:10 on Friday.")], 1, 400)
    fix = [Message(role="user", name="Tom", timestamp=DAY + timedelta(days=1),
                   content="Update: the flight moved to 17:40.")]
    text = fold(summarizer, first, fix, 2, 400)
    assert "17:40" in text and "16:10" not in text


def test_by_default_every_fold_rewrites_the_summary_in_time_order() -> None:
    summarizer = ExtractiveSummarizer()
    first = fold(summarizer, "", [Message(role="user", name="Ann", timestamp=DAY,
                                          content="I started learning the violin.")], 1, 400)
    later = [Message(role="user", name="Ann", timestamp=DAY,
                     content="My sister Priya ran the Boston marathon.")]
    text = fold(summarizer, first, later, 2, 400)
    assert SEGMENT_BREAK not in text and "violin" in text and "Priya" in text


@SETTINGS
@given(st.lists(st.text(alphabet="ab \n", max_size=12), min_size=1, max_size=5))
def test_summary_blocks_join_back_and_extend_as_a_prefix(segments: list[str]) -> None:
    for k in range(1, len(segments) + 1):
        content = render_summary(SEGMENT_BREAK.join(segments[:k])).text
        parts = summary_blocks(content)
        assert "".join(parts) == content and parts[0].startswith(SUMMARY_HEADER)
        if k > 1:
            before = summary_blocks(render_summary(SEGMENT_BREAK.join(segments[:k - 1])).text)
            assert parts[: len(before) - 1] == before[:-1]
    assert summary_blocks("not a summary\n\nblock") == ["not a summary\n\nblock"]


def test_the_engine_keeps_the_summary_block_as_a_prefix_between_compactions() -> None:
    """Through the real engine: most folds leave the previous summary block as the start
    of the next one, so a provider's prompt cache keeps it."""
    texts: list[str] = []
    with Memory("memory://", policy=TokenBudget(1200), summarizer=ExtractiveSummarizer(
            extend=True, compact_to=0.7, extend_share=1)) as memory:
        for i in range(240):
            who = ("Ann", "Ben")[i % 2]
            memory.add("s", Message(
                role="user", name=who, timestamp=DAY + timedelta(hours=i),
                content=f"I told {who} about {WORDS[i % len(WORDS)]} and "
                        f"{WORDS[(i * 7) % len(WORDS)]} on visit {i}."))
            summary = memory.summary("s")
            if summary is not None and (not texts or texts[-1] != summary.text):
                texts.append(summary.text)
    blocks = [render_summary(t).text for t in texts]
    kept = sum(b.startswith(a) for a, b in pairwise(blocks))
    assert len(blocks) > 5 and kept >= len(blocks) // 2
