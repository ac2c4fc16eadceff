"""The offline summarizer's text for fixed inputs, byte for byte.

Rolling folds over the repository's own fixed conversations (the demo, messy chats, the
planted chats of every language, chat-service turns) must give exactly the summaries
they gave when the digests below were recorded. A change meant only to make folding
cheaper (memos, shortcuts) must leave them as they are; a change that means to alter
what summaries say updates the digest and says so, with its retention figures.

The per-process memos (:mod:`contextfold.summarizers.sentence_memo`) must not change a
summary either: the same folds with the memos emptied before every fold, warm from
other sessions, or shared by several threads at once give the same text.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.demo import demo_conversation
from contextfold.messages import Message, StoredMessage
from contextfold.summarizers import sentence_memo
from contextfold.summarizers.base import SummaryRequest
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.summarizers.facts import sentence_text
from contextfold.summarizers.salience import content_words, features
from contextfold.summarizers.weights import DEFAULT_WEIGHTS
from contextfold.testing.messy_chats import messy_chats
from contextfold.testing.planted_languages import language_chats
from contextfold.tokens import TokenCounter, get_counter

O200K = get_counter("o200k")
APPROX = get_counter("approx")
START = datetime(2024, 3, 4, 9, 0, tzinfo=timezone.utc)


def service_turns(rounds: int = 12, clients: int = 4) -> list[Message]:
    """What clients of a chat service append: a user and an assistant message per turn."""
    out: list[Message] = []
    for r in range(rounds):
        for n in range(clients):
            when = START + timedelta(minutes=r * 7 + n)
            out.append(Message(
                role="user", timestamp=when,
                content=f"client {n} round {r}: please note item {r * 7 + n} "
                + "and the plan for the quarterly review meeting " * 6))
            out.append(Message(
                role="assistant", timestamp=when,
                content=f"Noted item {r * 7 + n}; the review is on the {r % 28 + 1}th "
                + "with the budget and the roadmap on the agenda " * 6))
    return out


def conversations() -> Iterator[tuple[str, list[Message]]]:
    yield "demo", demo_conversation()
    for chat in messy_chats(3):
        yield chat.name, chat.messages
    for chat in language_chats():
        yield chat.name, chat.messages
    yield "service", service_turns()


def rolling(
    summarizer: ExtractiveSummarizer, messages: Sequence[Message], counter: TokenCounter,
    cap: int, chunk: int, forget: bool = False,
) -> Iterator[str]:
    """Fold ``messages`` ``chunk`` at a time into a rolling summary of ``cap`` tokens."""
    previous = ""
    for start in range(0, len(messages), chunk):
        if forget:
            sentence_memo.forget()
        span = [StoredMessage(start + i + 1, m, 0)
                for i, m in enumerate(messages[start : start + chunk])]
        request = SummaryRequest("s", previous, span, cap, counter)
        previous = asyncio.run(summarizer.summarize(request)).text
        yield previous


def digest(forget: bool = False) -> str:
    h = hashlib.sha256()
    runs = [
        (ExtractiveSummarizer(), O200K, 300, 24),
        (ExtractiveSummarizer(extend=True), O200K, 400, 16),
        (ExtractiveSummarizer(), APPROX, 200, 30),
    ]
    for summarizer, counter, cap, chunk in runs:
        for name, messages in conversations():
            h.update(name.encode())
            for text in rolling(summarizer, messages, counter, cap, chunk, forget):
                h.update(text.encode() + b"\x00")
    return h.hexdigest()


#: Recorded from the summarizer before its memos; update only with a change meant to
#: alter summaries (and its retention figures).
GOLDEN = "6a2722fccef7db2b341d658bd3feab5164746bc1eab64b2641a004ee0aa6c544"


def test_summaries_are_the_recorded_ones() -> None:
    assert digest() == GOLDEN


def test_memos_change_no_summary() -> None:
    sentence_memo.forget()
    cold = digest(forget=True)
    warm = digest()  # every memo warm from the other conversations and the run before
    assert cold == warm == GOLDEN


def test_threads_sharing_the_memos_write_the_same_summaries() -> None:
    """Fold workers fold in threads that share the memos: the same texts as one alone."""
    sentence_memo.forget()
    chats = list(conversations())

    def one(index: int) -> list[str]:
        _, messages = chats[index % len(chats)]
        return list(rolling(ExtractiveSummarizer(), messages, O200K, 300, 24))

    alone = [one(i) for i in range(len(chats))]
    sentence_memo.forget()
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(one, range(len(chats))))
    assert together == alone


def test_a_full_memo_starts_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sentence_memo, "MAX_SENTENCES", 3)
    monkeypatch.setattr(sentence_memo, "MAX_CONTEXTS", 2)
    sentence_memo.forget()
    texts = [f"Maya moved to Lisbon in {2000 + i}." for i in range(10)]
    for speakers in ({"Maya"}, {"Ana"}, {"Maya", "Ana"}):
        got = sentence_memo.memo_features(texts, speakers, DEFAULT_WEIGHTS, None)
        assert got == [features(t, speakers, DEFAULT_WEIGHTS, None) for t in texts]
        assert sum(len(m) for m in sentence_memo._MEMOS.values()) <= 3
    assert len(sentence_memo._MEMOS) <= 2


_TEXT = st.lists(
    st.sampled_from([*"abcXYZ 019²٣.,?!'-éİı", "May", "Lisbon", " I ", "we"]),
    max_size=30,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, max_size=8), st.sets(st.sampled_from(["Maya", "ana", "Bo"])),
       st.sampled_from([None, frozenset({"der", "die", "das"})]))
def test_memos_answer_as_the_functions_do(
    texts: list[str], speakers: set[str], function_words: frozenset[str] | None
) -> None:
    for _ in range(2):  # a miss, then a hit
        got = sentence_memo.memo_features(texts, speakers, DEFAULT_WEIGHTS, function_words)
        assert got == [features(t, speakers, DEFAULT_WEIGHTS, function_words) for t in texts]
        words = sentence_memo.memo_content_words(texts, function_words)
        assert words == [frozenset(content_words(t, function_words)) for t in texts]
        for counter in (O200K, APPROX):
            assert [sentence_memo.fact_tokens(counter, t) for t in texts] == [
                counter.count(" " + sentence_text(t)) for t in texts]


def test_no_letter_is_a_digit() -> None:
    """:func:`~contextfold.summarizers.salience.features` settles a word of letters only
    as having no digit without looking at each character: true of every code point."""
    assert not [i for i in range(0x110000) if chr(i).isalpha() and chr(i).isdigit()]


def test_every_regex_digit_is_a_str_digit() -> None:
    """:func:`~contextfold.summarizers.salience.split_sentences` checks ``isdigit()`` on
    the character before a period before it tries its ``\\d`` pattern."""
    digit = re.compile(r"\d")
    assert not [i for i in range(0x110000) if digit.match(chr(i)) and not chr(i).isdigit()]
