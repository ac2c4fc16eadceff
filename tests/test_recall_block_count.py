"""The recalled block is counted line by line with OpenAI's encodings (each line's count
remembered): the sum is the count of the whole text whenever it is used, and the text is
counted whole otherwise."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.recall_block import _text_count
from contextfold.tokens import ApproximateCounter, TiktokenCounter

COUNTERS = [TiktokenCounter("cl100k_base"), TiktokenCounter("o200k_base")]
# what splits or joins pieces: spaces, newlines, slashes, punctuation, apostrophes,
# digits, letters of several scripts, combining marks
PIECES = st.sampled_from([*"ab Zé1 9/?!.:'’-\t\r\n\u2028\u00a0ıİ日本語\u0301[]<>…", "  ", "'s",
                          "'ll", "http://x", "Caroline: ", "?\n/", "1234"])
LINE = st.lists(PIECES, max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(LINE, min_size=1, max_size=8), which=st.integers(0, 1))
def test_line_by_line_counts_the_whole_text(parts: list[str], which: int) -> None:
    counter = COUNTERS[which]
    assert _text_count(counter, parts) == counter.count("\n".join(parts))
    assert _text_count(counter, parts) == counter.count("\n".join(parts))  # remembered


def test_other_counters_count_the_whole_text() -> None:
    counter = ApproximateCounter()
    parts = ["a" * 3, "b" * 3]
    assert _text_count(counter, parts) == counter.count("aaa\nbbb") == 2
