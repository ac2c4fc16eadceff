"""The cheap paths of making stand-ins give exactly what the plain path gives: a stand-in
counted as its head + its tail equals its count as a whole (both tiktoken encodings), and
a result whose stand-in's head alone is not smaller is shown verbatim without its key
facts being made, as it would have been after making them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import Message, ToolCall
from contextfold.masking import (
    Masking,
    head_tokens,
    masked_result,
    split_counter,
    stand_in,
    stand_in_head,
    stand_in_tail,
)
from contextfold.messages import StoredMessage
from contextfold.summarizers.agent_state import facts_and_failure
from contextfold.tokens import ApproximateCounter, count_message, get_counter

COUNTERS = [get_counter("o200k"), get_counter("cl100k")]

_PIECES = [
    "a", "Z", "é", "ß", "Ω", "中", "🙂", "0", "7", "42", "1234", "٣", " ", "  ", "\n", "\r\n",
    "\t", "\u00a0", ":", ".", ",", ";", "'", "'s", "'ll", "/", "//", "-", "_", "(", ")", "[",
    "]", "{", "}", "=", '"', "$", "%", "#", "<", ">", "⋯", "error", "KeyError", "ids",
    "status", "failed", "INC8082", "2024-05-01", "src/app.py", "x" * 40,
]
_text = st.lists(st.sampled_from(_PIECES), max_size=25).map("".join)
_name = st.one_of(st.sampled_from(["search", "run_tests", "get_user_details", "tool"]),
                  _text.filter(lambda s: bool(s.strip())))
_masking = st.builds(Masking, keep_call_args=st.booleans())


@st.composite
def _call(draw: st.DrawFn) -> ToolCall | None:
    if draw(st.booleans()):
        return None
    args = draw(st.one_of(
        _text,
        st.dictionaries(st.sampled_from(["id", "path", "q", "n"]),
                        st.one_of(_text, st.integers(), st.lists(_text, max_size=3)),
                        max_size=3).map(json.dumps),
    ))
    return ToolCall("c1", draw(_name), args)


@settings(max_examples=300, deadline=None)
@given(
    name=st.one_of(st.none(), _name),
    seq=st.integers(0, 10**12),
    call=_call(),
    masking=_masking,
    found=st.lists(_text, max_size=6),
    failed=st.booleans(),
)
def test_a_stand_in_counts_as_its_head_plus_its_tail(
    name: str | None, seq: int, call: ToolCall | None, masking: Masking, found: list[str],
    failed: bool,
) -> None:
    result = Message(role="tool", content="x", name=name or None, tool_call_id="c1")
    head = stand_in_head(result, seq, call, masking)
    tail = stand_in_tail(found, failed)
    assert tail.startswith(" ")
    shown = stand_in(result, seq, call, masking, (found, failed))
    assert shown.text == head + tail
    for counter in COUNTERS:
        assert split_counter(counter)
        assert counter.count(head + tail) == counter.count(head) + counter.count(tail)
        assert counter.count(tail) >= 1
        assert head_tokens(counter, head, seq) == counter.count(head)


@pytest.mark.parametrize("counter", COUNTERS)
def test_a_head_counted_by_parts_is_its_count_whole(counter: object) -> None:
    """What :func:`head_tokens` relies on: every string of one to three digits is one
    token, and heads around the digit-group boundaries count the same by parts."""
    for width in (1, 2, 3):
        for n in range(10**width):
            assert counter.count(str(n).zfill(width)) == 1  # type: ignore[attr-defined]
    call = ToolCall("c1", "get_order", '{"id": "A1"}')
    result = Message(role="tool", content="x", tool_call_id="c1")
    for masking in (Masking(), Masking(keep_call_args=False)):
        for seq in (0, 1, 9, 10, 99, 100, 999, 1000, 99999, 100000, 10**9, 10**12 + 7):
            head = stand_in_head(result, seq, call, masking)
            assert head_tokens(counter, head, seq) == counter.count(head)  # type: ignore[arg-type, attr-defined]


def _plain(item: StoredMessage, call: ToolCall | None, masking: Masking, counter: object
           ) -> tuple[Message, int]:
    """The plain path: make the facts and the stand-in, count it whole, and show it only
    when it is at most three quarters of the result."""
    shown = stand_in(item.message, item.seq, call, masking,
                     facts_and_failure(item.message.text, masking.fact_chars))
    tokens = count_message(counter, shown)  # type: ignore[arg-type]
    if tokens * 4 > item.tokens * 3:
        return item.message, item.tokens
    return shown, tokens


_results = st.one_of(
    _text,
    st.lists(st.sampled_from(["ok", "id INC8082", "status: failed", "user mia_li_3668",
                              '{"id": "A1"}', "2024-05-01", "Traceback", "\n"]),
             max_size=12).map(" ".join),
)


@settings(max_examples=300, deadline=None)
@given(content=_results, name=st.one_of(st.none(), _name), seq=st.integers(1, 10**6),
       call=_call(), masking=_masking)
def test_masked_result_is_the_plain_outcome(
    content: str, name: str | None, seq: int, call: ToolCall | None, masking: Masking
) -> None:
    result = Message(role="tool", content=content, name=name or None, tool_call_id="c1")
    for counter in [*COUNTERS, ApproximateCounter()]:
        item = StoredMessage(seq, result, count_message(counter, result))
        got = masked_result(counter, item, call, masking,
                            lambda: facts_and_failure(content, masking.fact_chars))
        want = _plain(item, call, masking, counter)
        assert got[1] == want[1]
        assert got[0] is item.message if want[0] is item.message else got[0] == want[0]
        if got[0] is not item.message:
            assert got[1] == count_message(counter, got[0])


@pytest.mark.parametrize("counter", COUNTERS)
def test_a_small_result_gets_no_key_facts_made(counter: object) -> None:
    result = Message(role="tool", content="ok: id A1", tool_call_id="c1")
    item = StoredMessage(7, result, count_message(counter, result))  # type: ignore[arg-type]

    def facts() -> tuple[list[str], bool]:
        raise AssertionError("key facts made for a result no stand-in can beat")

    assert masked_result(counter, item, None, Masking(), facts) == (result, item.tokens)  # type: ignore[arg-type]


def test_a_counter_of_unknown_kind_counts_the_stand_in_whole() -> None:
    assert not split_counter(ApproximateCounter())


@pytest.mark.parametrize("keep_call_args", [True, False])
def test_results_around_the_stand_in_size_get_the_plain_outcome(keep_call_args: bool) -> None:
    """Sizes swept across the point where a stand-in starts to save tokens."""
    masking = Masking(keep_call_args=keep_call_args)
    call = ToolCall("call_9", "get_user_details", '{"user_id": "mia_li_3668"}')
    outcomes = set()
    for counter in COUNTERS:
        for k in range(80):
            for content in ("result " + "ok " * k, "id A1 status shipped; " * k,
                            json.dumps([None] * k), "-\n" * k, "\n" * k + "."):
                result = Message(role="tool", content=content, tool_call_id="call_9")
                item = StoredMessage(1234, result, count_message(counter, result))
                got = masked_result(counter, item, call, masking,
                                    lambda c=content: facts_and_failure(c, masking.fact_chars))
                assert got == _plain(item, call, masking, counter)
                outcomes.add(got[0] is result)
    assert outcomes == {True, False}


def _plain_render(pairs: list[tuple[str, str]], max_chars: int
                  ) -> tuple[list[str], list[tuple[str, str]]]:
    """render's plain loop: every pair looked at, a full render sends the rest on."""
    from contextfold.summarizers.agent_values import _clip

    groups: dict[str, list[str]] = {}
    rest: list[tuple[str, str]] = []
    used = 0
    for label, value in pairs:
        if used >= max_chars - 6:
            rest.append((label, value))
            continue
        cost = len(value) + 2 + (0 if label in groups else len(label) + 2)
        if used + cost > max_chars:
            if groups:
                rest.append((label, value))
                continue
            value = _clip(value, max(8, max_chars - len(label) - 4))
            cost = len(value) + len(label) + 4
        groups.setdefault(label, []).append(value)
        used += cost
    return [f"{label}: {', '.join(values)}" for label, values in groups.items()], rest


@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(st.sampled_from(["ids", "error", "paths", "a" * 40]),
                                _text), max_size=40),
       max_chars=st.integers(0, 400))
def test_render_stops_early_with_the_plain_outcome(pairs: list[tuple[str, str]],
                                                   max_chars: int) -> None:
    from contextfold.summarizers.agent_state import render

    assert render(pairs, max_chars) == _plain_render(pairs, max_chars)
