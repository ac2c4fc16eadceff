"""The append and context answers are written by orjson where it can: the bytes must be
the ones pydantic writes for the same response model (the OpenAPI document describes
pydantic's), for any text, number, time and message shape."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.server.routes.sessions import _json
from contextfold.server.schemas import (
    Appended,
    AppendResponse,
    ContextResponse,
    FoldResult,
    StatsOut,
    SummaryOut,
)

texts = st.text(max_size=40)
ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
times = st.one_of(
    st.none(),
    st.datetimes(timezones=st.sampled_from(
        [timezone.utc, timezone(timedelta(hours=3)), timezone(timedelta(hours=-5, minutes=-30))]
    )),
    st.datetimes(),  # naive
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), ints, st.floats(allow_nan=False), texts),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)
messages = st.lists(st.dictionaries(texts, json_values, max_size=4), max_size=4)
summaries = st.one_of(st.none(), st.builds(
    SummaryOut, text=texts, through_seq=ints, version=ints, tokens=ints, updated_at=times))


def stats(draw: Any) -> StatsOut:
    return StatsOut(
        last_seq=draw(ints), live_count=draw(ints), live_tokens=draw(ints),
        through_seq=draw(ints), summary_version=draw(ints), summary_tokens=draw(ints),
        pending_tool_calls=draw(st.lists(texts, max_size=2)), last_activity=draw(times),
        reported_input_tokens=draw(st.one_of(st.none(), ints)),
    )


@st.composite
def append_responses(draw: Any) -> AppendResponse:
    appended = st.lists(st.builds(Appended, index=ints, seq=ints,
                                  id=st.one_of(st.none(), texts)), max_size=3)
    fold = draw(st.one_of(st.none(), st.builds(
        FoldResult, status=st.sampled_from(["committed", "skipped", "failed"]), reason=texts,
        lo=ints, hi=ints, messages_folded=ints, tokens_folded=ints, summary=summaries,
        error_class=st.one_of(st.none(), texts), input_tokens=ints, output_tokens=ints,
        calls=ints)))
    return AppendResponse.model_construct(
        session_id=draw(texts), appended=draw(appended), duplicates=draw(appended),
        fold=fold, stats=stats(draw))


@st.composite
def context_responses(draw: Any) -> ContextResponse:
    omitted = draw(st.one_of(st.none(), st.tuples(ints, ints)))
    return ContextResponse.model_construct(
        session_id=draw(texts), format=draw(st.sampled_from(["openai", "anthropic", "gemini"])),
        system=draw(st.one_of(st.none(), texts)), messages=draw(messages), tokens=draw(ints),
        budget=draw(st.one_of(st.none(), ints)), trimmed=draw(st.booleans()),
        omitted=draw(ints), omitted_seqs=omitted, truncated=draw(st.booleans()),
        elided=draw(st.lists(ints, max_size=3)), masked=draw(ints), bridged=draw(st.booleans()),
        recalled=draw(st.lists(ints, max_size=3)), summary=draw(summaries),
    )


@settings(max_examples=300, deadline=None)
@given(st.one_of(append_responses(), context_responses()))
def test_the_answer_is_pydantics_bytes(model: AppendResponse | ContextResponse) -> None:
    assert _json(model).body == model.model_dump_json().encode()


def test_what_orjson_refuses_is_written_by_pydantic() -> None:
    big = ContextResponse.model_construct(
        session_id="s", format="openai", system=None, messages=[{"n": 2**70}], tokens=1,
        budget=None, trimmed=False, omitted=0, omitted_seqs=None, truncated=False, elided=[],
        masked=0, bridged=False, recalled=[], summary=SummaryOut(
            text="t", through_seq=1, version=1, tokens=1,
            updated_at=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc)),
    )
    assert _json(big).body == big.model_dump_json().encode()
