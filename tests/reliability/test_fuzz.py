"""Fuzz targets (hypothesis) over the message parser, the sequence validator and the
context renderer: whatever the input, the only exception that may escape is
``ValidationError`` (and, for the renderer, ``ConfigError`` when the system prompt alone is
over the budget, which is the caller's configuration). What is accepted round-trips."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from _support import Transcript
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold import ConfigError, Message, StoredMessage, ValidationError, get_counter
from contextfold.context import build_context
from contextfold.messages import check_sequence, render_text
from contextfold.testing.provider_rules import check_provider_rules
from contextfold.tokens import count_message

COUNTER = get_counter("o200k")
# every code point, lone surrogates included
ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=40)
NICE_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                    max_size=40)
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT | NICE_TEXT
           | st.binary(max_size=4))
JUNK = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(ANY_TEXT | st.integers(), inner, max_size=3), max_leaves=12)
IDS = st.sampled_from(["c1", "c2", "c3"]) | NICE_TEXT | JUNK


def _part() -> st.SearchStrategy[Any]:
    kinds = st.sampled_from(["text", "input_text", "image_url", "image", "input_audio", "file",
                             "document", "video", ""]) | JUNK
    return st.fixed_dictionaries(
        {"type": kinds},
        optional={"text": NICE_TEXT | JUNK, "image_url": st.fixed_dictionaries(
            {"url": NICE_TEXT}) | JUNK, "file": st.fixed_dictionaries(
            {"filename": NICE_TEXT, "file_data": NICE_TEXT}) | JUNK},
    ) | NICE_TEXT | JUNK


CALL = st.fixed_dictionaries(
    {"id": IDS, "function": st.fixed_dictionaries(
        {"name": st.sampled_from(["f", "g"]) | JUNK},
        optional={"arguments": NICE_TEXT | st.dictionaries(NICE_TEXT, JUNK, max_size=3) | JUNK})
     | JUNK},
    optional={"type": st.just("function")},
) | JUNK

MESSAGE_DICTS = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", "developer"]) | JUNK},
    optional={
        "content": NICE_TEXT | st.lists(_part(), max_size=3) | JUNK,
        "name": NICE_TEXT | JUNK,
        "tool_calls": st.lists(CALL, max_size=3) | JUNK,
        "tool_call_id": IDS,
        "timestamp": st.datetimes() | st.floats() | st.integers() | NICE_TEXT | JUNK,
        "metadata": st.dictionaries(NICE_TEXT, JUNK, max_size=3) | JUNK,
        "id": NICE_TEXT | JUNK,
        "refusal": st.none(),
        JUNK.filter(lambda k: isinstance(k, str)).map(str): JUNK,  # type: ignore[dict-item]
    },
) | JUNK


NICE_PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": NICE_TEXT}),
    st.fixed_dictionaries({"type": st.just("image_url"),
                           "image_url": st.fixed_dictionaries({"url": NICE_TEXT})}),
    st.fixed_dictionaries({"type": st.just("file"), "file": st.fixed_dictionaries(
        {"filename": NICE_TEXT, "file_data": NICE_TEXT})}),
)
NICE_CALL = st.fixed_dictionaries({"id": st.sampled_from(["c1", "c2", "c3"]), "function":
                                   st.fixed_dictionaries({"name": st.just("f")})})
WELL_FORMED = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]),
                           "content": NICE_TEXT | st.lists(NICE_PART, max_size=3)},
                          optional={"name": NICE_TEXT, "metadata": st.dictionaries(
                              NICE_TEXT, NICE_TEXT | st.integers(), max_size=2)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": NICE_TEXT,
                           "tool_calls": st.lists(NICE_CALL, min_size=1, max_size=3,
                                                  unique_by=lambda c: c["id"])}),
    st.fixed_dictionaries({"role": st.just("tool"), "content": NICE_TEXT,
                           "tool_call_id": st.sampled_from(["c1", "c2", "c3"])}),
)
MESSAGES = WELL_FORMED | MESSAGE_DICTS


@st.composite
def _transcripts(draw: Any) -> list[dict[str, Any]]:
    """Valid transcripts (parallel, out-of-order and pending calls) with odd text."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    msgs = Transcript(rng, media=True).messages(draw(st.integers(1, 6)),
                                                 system=draw(st.booleans()),
                                                 end_pending=draw(st.booleans()))
    out = [m.to_dict() for m in msgs]
    for item in out:
        if isinstance(item.get("content"), str) and draw(st.booleans()):
            item["content"] = draw(NICE_TEXT)
    return out


TRANSCRIPTS = _transcripts()


def _parse(raw: object) -> Message | None:
    try:
        return Message.from_openai(raw)  # type: ignore[arg-type]
    except ValidationError:
        return None


def _fuzz(n: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return settings(max_examples=n, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


def test_parser_raises_only_validation_error_and_round_trips(counts: Callable[..., int]) -> None:
    @_fuzz(counts("parser examples", 1000, 30000))
    @given(MESSAGES)
    def check(raw: object) -> None:
        msg = _parse(raw)
        if msg is None:
            return
        assert Message.from_openai(msg.to_dict()) == msg
        assert Message.from_openai(msg.to_openai()).content == msg.content
        render_text(msg)
        assert count_message(COUNTER, msg) > 0

    check()


def test_sequence_validator_raises_only_validation_error(counts: Callable[..., int]) -> None:
    @_fuzz(counts("sequence examples", 400, 10000))
    @given(st.lists(MESSAGES, max_size=8), st.lists(st.sampled_from(["c1", "c2"]), max_size=2))
    def check(raws: list[object], pending: list[str]) -> None:
        msgs = [m for m in map(_parse, raws) if m is not None]
        try:
            left = check_sequence(msgs, pending)
        except ValidationError:
            return
        assert isinstance(left, tuple) and all(isinstance(c, str) for c in left)

    check()


def test_context_renderer_raises_only_validation_error(counts: Callable[..., int]) -> None:
    @_fuzz(counts("renderer examples", 500, 10000))
    @given(
        st.lists(MESSAGES, max_size=8) | TRANSCRIPTS,
        st.none() | NICE_TEXT,
        st.none() | NICE_TEXT,
        st.none() | st.integers(min_value=1, max_value=400),
        st.integers(min_value=0, max_value=50),
    )
    def check(raws: list[Any], summary: str | None, system: str | None, budget: int | None,
              reserved: int) -> None:
        msgs = [m for m in map(_parse, raws) if m is not None]
        try:
            check_sequence(msgs)
        except ValidationError:
            return  # a store never holds such a sequence
        live = [StoredMessage(i + 1, m, count_message(COUNTER, m)) for i, m in enumerate(msgs)]
        try:
            ctx = build_context(counter=COUNTER, live=live, summary_text=summary, system=system,
                                budget=budget, reserved_tokens=reserved)
        except ValidationError:
            return
        except ConfigError as exc:
            assert "alone take" in str(exc)
            return
        if budget is not None:
            assert ctx.tokens <= budget
        for item in ctx.to_openai():
            Message.from_openai(item)
        # what the engine adds never breaks a rule the transcript itself kept
        if not any(v.rule not in ("empty", "empty_content", "first_turn_not_user",
                                  "system_placement") for v in check_provider_rules(msgs)):
            problems = [v for v in check_provider_rules(ctx)
                        if v.rule not in ("empty", "empty_content", "first_turn_not_user",
                                          "system_placement")]
            assert not problems, problems

    check()

