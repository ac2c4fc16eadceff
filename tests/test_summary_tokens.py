"""A new summary's tokens counted once per fold (:mod:`contextfold.summary_tokens`): the
same numbers as counting the summary block whole, whatever the text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import summary_tokens
from contextfold.summary_block import render_summary
from contextfold.summary_tokens import count_summary, summary_block_tokens
from contextfold.tokens import ApproximateCounter, TokenCounter, count_message, get_counter

COUNTERS = [get_counter("o200k"), get_counter("cl100k"), ApproximateCounter()]

#: Starts that meet the header's last piece in every way: punctuation and the characters
#: its line break may run into, digits, letters of several scripts, marks, emoji.
_STARTS = list(" \t\n\r/\\):;.,-—–'\"“([{<#*_0123456789aZéİıßЖж中あ한\u0301\u200b😀\x0b\x0c")
_TEXT = st.lists(
    st.one_of(st.sampled_from(_STARTS), st.sampled_from(["8 May 2023 — Maya: ", " ", "\n\n"]),
              st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                      max_size=8)),
    max_size=12,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_the_block_costs_what_counting_it_whole_costs(text: str) -> None:
    for counter in COUNTERS:
        assert summary_block_tokens(counter, text) == count_message(
            counter, render_summary(text)
        )
        assert count_summary(counter, text) == counter.count(text)


def test_a_summary_written_by_the_extractive_summarizer() -> None:
    text = ("8 May 2023 — Maya: I moved to Lisbon on 3 May. My sister Ingrid visits in June.\n"
            "9 May 2023 — Assistant: Booked the table for 4 at 7pm.")
    for counter in COUNTERS:
        assert summary_block_tokens(counter, text) == count_message(
            counter, render_summary(text)
        )


class Words:
    """A counter of its own (not tiktoken): never answered from the memo."""

    name = "o200k_base"  # the same name as a tiktoken encoding, counting otherwise

    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text.split())


def test_another_counter_is_always_asked() -> None:
    counter = Words()
    typed: TokenCounter = counter
    assert count_summary(typed, "one two three") == 3
    assert count_summary(typed, "one two three") == 3
    assert summary_block_tokens(typed, "one two") == count_message(typed, render_summary("one two"))
    assert counter.calls == 4


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary_tokens, "MAX_TEXTS", 4)
    counter = get_counter("o200k")
    for i in range(20):
        assert count_summary(counter, f"fact number {i}.") == counter.count(f"fact number {i}.")
        assert len(summary_tokens._COUNTED) <= 4
