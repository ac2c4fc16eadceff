"""The extractive summarizer never rewords what people said: every sentence of a summary
is, apart from labelled annotations (a resolved date in parentheses right after a relative
date phrase, the " / " between the lines of a burst, a "…" where an over-long sentence is
cut), a sentence of some source message — word for word."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold.messages import Message, StoredMessage
from contextfold.summarizers.base import SummaryRequest
from contextfold.summarizers.dates import resolver_for
from contextfold.summarizers.extractive import BURST_JOINER, NO_FACTS, ExtractiveSummarizer
from contextfold.summarizers.facts import parse_summary
from contextfold.summarizers.salience import split_sentences
from contextfold.tokens import get_counter

O200K = get_counter("o200k")
START = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
#: a resolved date, as the summarizer writes it after a relative-date phrase
ANNOTATION = re.compile(
    r" \((?:week of )?\d{1,2} [A-Z][a-z]+ \d{4}\)| \([A-Z][a-z]+ \d{4}\)| \(\d{4}\)")

SENTENCES = [
    "I have saved so far 300 euros.",
    "Mondays exist so the rest of the week looks better.",
    "We spent a week in Lisbon.",
    "I spent a day in Porto last year.",
    "Oh wow, I actually just finished my first marathon in Boston, and it was so amazing!",
    "Hey! How are you?",
    "Thanks so much!",
    "My sister Ana moved to Berlin in 2021.",
    "The dentist is on Friday at 3pm, you know?",
    "We fly to Lisbon next friday",
    "I adopted a puppy named Biscuit yesterday!",
    "Honestly, the budget for the kitchen is 12,000 euros; the tiles are extra.",
    "i got the job",
    "at google",
    "lol",
    "Really, I just love painting sunsets - it calms me down.",
    "Two weeks ago I started learning the piano.",
    "Caroline, that's great!",
    "We will visit Grandma in 3 days.",
]

message_text = st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3).map(" ".join)
chats = st.lists(
    st.tuples(st.sampled_from(["Mel", "Caroline", None]), message_text,
              st.integers(0, 600)),
    min_size=1, max_size=24,
)


def _unannotated(text: str) -> str:
    return ANNOTATION.sub("", text)


def _source_sentences(messages: Sequence[Message]) -> set[str]:
    out: set[str] = set()
    for m in messages:
        for s in split_sentences(m.text):
            out.add(" ".join(_unannotated(s).split()))
    return out


def _is_source(piece: str, sources: set[str]) -> bool:
    piece = piece.strip()
    if piece in sources or (piece.endswith(".") and piece[:-1] in sources):
        return True  # a fact renders with a full stop when its sentence had none
    if piece.endswith("…"):  # an over-long sentence cut, and marked so
        return any(s.startswith(piece[:-1]) for s in sources)
    return False


def assert_word_for_word(summary: str, messages: Sequence[Message]) -> None:
    sources = _source_sentences(messages)
    for fact in parse_summary(summary):
        if fact.text == NO_FACTS:  # the label of an empty summary: nothing was said yet
            continue
        for piece in _unannotated(fact.text).split(BURST_JOINER.strip()):
            assert _is_source(piece, sources), (piece, fact.text)


def _fold(previous: str, messages: list[StoredMessage], cap: int) -> str:
    request = SummaryRequest("s", previous, messages, cap, O200K)
    return asyncio.run(ExtractiveSummarizer().summarize(request)).text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat=chats, cap=st.integers(40, 600), folds=st.integers(1, 3))
def test_every_summary_sentence_is_a_source_sentence_word_for_word(
    chat: list[tuple[str | None, str, int]], cap: int, folds: int
) -> None:
    when = START
    messages: list[StoredMessage] = []
    for i, (name, text, gap) in enumerate(chat):
        when += timedelta(seconds=gap)
        role = "user" if name != "Caroline" else "assistant"
        messages.append(StoredMessage(i + 1, Message(role=role, name=name, content=text,
                                                     timestamp=when), 0))
    summary, size = "", max(1, len(messages) // folds)
    for lo in range(0, len(messages), size):
        summary = _fold(summary, messages[lo:lo + size], cap)
        assert_word_for_word(summary, [m.message for m in messages[:lo + size]])


def test_the_issues_sentences_are_kept_as_said() -> None:
    said = ["I have saved so far 300 euros.",
            "Mondays exist so the rest of the week looks better.",
            "We spent a week in Lisbon.",
            "Honestly, the budget for the kitchen is 12,000 euros; the tiles are extra."]
    msgs = [StoredMessage(i + 1, Message(role="user", name="Mel", content=text,
                                         timestamp=START + timedelta(hours=i)), 0)
            for i, text in enumerate(said)]
    summary = _fold("", msgs, 400)
    for text in said:
        assert text in summary, summary
    assert "(" not in summary  # "a week in Lisbon" is no date


def test_a_date_is_added_only_right_after_a_real_relative_phrase() -> None:
    resolver = resolver_for("en")
    if resolver is None:  # the dates extra is a dev dependency; say so if it is missing
        raise AssertionError('the tests need the dates extra: pip install "contextfold[dates]"')
    day = date(2026, 3, 8)
    assert resolver.annotate("a week in Lisbon", day) == "a week in Lisbon"
    assert resolver.annotate("a day in Porto last year", day) == (
        "a day in Porto last year (2025)")
    assert resolver.annotate("We fly in 2 weeks", day) == "We fly in 2 weeks (22 March 2026)"
    assert resolver.annotate("I saw it 3 days ago", day) == "I saw it 3 days ago (5 March 2026)"
    assert resolver.annotate("two days in Rome were enough", day) == (
        "two days in Rome were enough")
