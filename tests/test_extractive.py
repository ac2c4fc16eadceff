"""The offline ExtractiveSummarizer: hard guarantees (cap, determinism, no exceptions,
parseable rolling summaries) as properties, and what it keeps as behaviour tests."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold.demo import demo_conversation, planted_facts
from contextfold.memory import Memory
from contextfold.messages import Message, StoredMessage
from contextfold.policy import TokenBudget
from contextfold.summarizers.base import Summarizer, SummaryRequest, check_summary
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.summarizers.facts import parse_summary, render_summary_text
from contextfold.summary_block import SEGMENT_BREAK
from contextfold.tokens import TokenCounter, get_counter

O200K = get_counter("o200k")
APPROX = get_counter("approx")
DAY = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def stored(messages: Sequence[Message], first_seq: int = 1) -> list[StoredMessage]:
    return [StoredMessage(first_seq + i, m, 0) for i, m in enumerate(messages)]


def summarize(
    messages: Sequence[Message],
    cap: int = 400,
    previous: str = "",
    counter: TokenCounter = O200K,
    summarizer: ExtractiveSummarizer | None = None,
    first_seq: int = 1,
) -> str:
    request = SummaryRequest("s", previous, stored(messages, first_seq), cap, counter)
    result = asyncio.run((summarizer or ExtractiveSummarizer()).summarize(request))
    return check_summary(result, request).text


def say(name: str, text: str, when: datetime | None = DAY) -> Message:
    return Message(role="user", name=name, content=text, timestamp=when)


CHIT_CHAT = [
    "Hey! How are you?",
    "Haha, that's awesome!",
    "Wow, sounds great, thanks so much!",
    "Oh totally, I agree.",
    "That's so cool, I love it!",
    "Yeah, for sure.",
]

# -- properties ---------------------------------------------------------------------------

safe_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=300,
)
names = st.one_of(st.none(), safe_text.filter(lambda s: s.strip() != "").map(lambda s: s[:40]))
stamps = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1)).map(
        lambda d: d.replace(tzinfo=timezone.utc)
    ),
)
messages_st = st.lists(
    st.builds(
        lambda role, text, name, ts: Message(role=role, content=text, name=name, timestamp=ts),
        st.sampled_from(["user", "assistant", "system"]),
        safe_text,
        names,
        stamps,
    ),
    max_size=12,
)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(messages_st, st.integers(min_value=8, max_value=300), safe_text,
       st.sampled_from([O200K, APPROX]))
def test_never_over_cap_never_raises_deterministic(
    messages: list[Message], cap: int, previous: str, counter: TokenCounter
) -> None:
    first = summarize(messages, cap, previous, counter)
    assert first.strip()
    assert counter.count(first) <= cap
    assert summarize(messages, cap, previous, counter) == first


@SETTINGS
@given(st.lists(messages_st, min_size=1, max_size=4), st.integers(min_value=24, max_value=300))
def test_rolling_folds_stay_parseable(chunks: list[list[Message]], cap: int) -> None:
    summary, seq = "", 1
    for chunk in chunks:
        summary = summarize(chunk, cap, summary, first_seq=seq)
        seq += len(chunk)
        assert O200K.count(summary) <= cap
        # each segment (the text written whole, then what each extension appended) reads
        # back into facts that render to the very same text
        for segment in summary.split(SEGMENT_BREAK):
            assert render_summary_text(parse_summary(segment)) == segment or segment in (
                "(no facts recorded yet)", "…", ".", "-")


def test_satisfies_the_protocol() -> None:
    summarizer = ExtractiveSummarizer()
    assert isinstance(summarizer, Summarizer)
    assert summarizer.name == "extractive"


# -- behaviour ----------------------------------------------------------------------------


def test_keeps_names_dates_numbers_over_chit_chat() -> None:
    msgs = [say("Ana", CHIT_CHAT[i % len(CHIT_CHAT)]) for i in range(30)]
    msgs.insert(17, say("Ana", "My sister Ingrid lands in Oslo on 14 March on flight LH 2417."))
    text = summarize(msgs, cap=40)
    assert "Ingrid" in text and "14 March" in text and "LH 2417" in text
    assert "awesome" not in text and "How are you" not in text


def test_dates_and_speakers_attributed() -> None:
    later = DAY + timedelta(days=17)
    text = summarize([
        say("Caroline", "I adopted a dog named Oscar from the shelter in Denver."),
        Message(role="assistant", content="Melanie painted a lake sunrise in 2022.",
                timestamp=later),
    ])
    lines = text.splitlines()
    assert lines[0].startswith("8 May 2023 — Caroline: ") and "Oscar" in lines[0]
    assert lines[1].startswith("25 May 2023 — Assistant: ") and "2022" in lines[1]


def test_time_order_even_when_previous_summary_is_later() -> None:
    first = summarize([say("Jon", "I opened my dance studio in Brooklyn.", DAY + timedelta(5))])
    text = summarize([say("Jon", "I lost my banking job at Chase.", DAY)], previous=first,
                     first_seq=2)
    assert text.index("Chase") < text.index("Brooklyn")


def test_without_timestamps_speaker_is_role() -> None:
    text = summarize([Message(role="user", content="Book a table for 4 at Trattoria Lupo.")])
    assert text == "User: Book a table for 4 at Trattoria Lupo."


def test_dedupes_repeats() -> None:
    fact = "We are moving to Ljubljana in July."
    msgs = [say("Maya", fact), say("Maya", "Oh wow, " + fact.lower()),
            say("Maya", "Reminder: we are moving to Ljubljana in July!")]
    text = summarize(msgs, cap=200)
    assert text.count("Ljubljana") == 1


def test_keeps_a_fact_word_for_word_and_drops_chit_chat() -> None:
    said = ("Oh wow, I actually just finished my first marathon in Boston, and it was so "
            "amazing!")
    text = summarize([say("Mel", said), say("Mel", "Haha, that's awesome!")])
    assert text == f"8 May 2023 — Mel: {said}"


def test_rolling_folds_keep_old_facts_when_there_is_room() -> None:
    summary = summarize([say("Tim", "I started learning the violin in August.")], cap=120)
    for i in range(5):
        chunk = [say("John", CHIT_CHAT[j]) for j in range(4)]
        summary = summarize(chunk, cap=120, previous=summary, first_seq=10 + 10 * i)
    assert "violin" in summary


def test_evicts_least_salient_first_when_full() -> None:
    previous = summarize([say("Tim", "I like coffee."), say("Tim", "The weather was nice.")])
    text = summarize(
        [say("Tim", "I booked flights to Tokyo for 12 October, confirmation QX7-552.")],
        cap=30, previous=previous, first_seq=3)
    assert "QX7-552" in text
    assert "weather" not in text


def test_tiny_cap_still_returns_text() -> None:
    text = summarize([say("Ana", "My sister Ingrid lands on 14 March on flight LH 2417.")],
                     cap=8)
    assert text.strip() and O200K.count(text) <= 8


def test_demo_facts_survive_the_engine() -> None:
    """The demo's planted facts, folded by the real engine with the default summarizer,
    mostly survive; truncation keeps few of them (the point of the demo)."""
    with Memory("memory://", policy=TokenBudget(2000)) as memory:
        for message in demo_conversation():
            memory.add("demo", message)
        context = memory.context("demo")
    assert context.tokens <= 2000
    text = "\n".join(m.text for m in context.messages).lower()
    kept = [needle for _, needle in planted_facts() if needle.lower() in text]
    assert len(kept) >= 16, kept


@pytest.mark.parametrize("off", ["compress", "dedupe", "salience", "coverage", "dates"])
def test_ablations_still_honour_the_cap(off: str) -> None:
    summarizer = ExtractiveSummarizer(**{off: False})
    msgs = [say("Ana", f"Fact {i}: I visited Lisbon on day {i} with Marco.") for i in range(40)]
    text = summarize(msgs, cap=60, summarizer=summarizer)
    assert O200K.count(text) <= 60


def test_a_speaker_name_with_a_control_character_is_shown_cleaned_in_every_form() -> None:
    """"Ann\\r" and "Ann" are one speaker: the label shown is the cleaned one, never the raw
    name (a carriage return in it broke the summary's line format)."""
    text = summarize([Message(role="user", content="", name="000\r"),
                      Message(role="user", content="0", name="000"),
                      say("Ann\r", "Booked flight LH 2417."), say("Annabel", "Fine.")], 80)
    assert "\r" not in text
    assert render_summary_text(parse_summary(text)) == text
