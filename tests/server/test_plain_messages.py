"""An append body of plain turns skips the request model: what it reads is exactly what
``AppendRequest`` would validate and dump, and it reads nothing the model refuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from contextfold.server.routes.sessions import plain_messages
from contextfold.server.schemas import AppendRequest

values = st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=False), st.booleans(),
    st.text(max_size=8), st.text(min_size=500, max_size=600), st.just(""),
    st.lists(st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2), max_size=2),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
)
roles = st.one_of(st.sampled_from(["system", "developer", "user", "assistant", "tool"]),
                  values)
keys = st.sampled_from(["role", "content", "name", "id", "tool_call_id", "timestamp",
                        "metadata", "extra"])
plain = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system"]), "content": st.text(max_size=20)},
    optional={"id": st.text(min_size=1, max_size=20), "name": st.text(max_size=10)},
)
odd = st.dictionaries(keys, st.one_of(values, roles), max_size=5)
message = st.one_of(plain, plain, odd, values)
bodies = st.one_of(
    st.fixed_dictionaries({"messages": st.lists(message, max_size=4)}),
    st.fixed_dictionaries({"messages": st.lists(plain, min_size=1, max_size=4)}),
    st.dictionaries(st.sampled_from(["messages", "other"]), st.lists(message, max_size=3)),
    values,
)


def _model(body: Any) -> list[dict[str, Any]] | None:
    try:
        return [m.to_library() for m in AppendRequest.model_validate(body).messages]
    except ValidationError:
        return None


@settings(max_examples=600, deadline=None)
@given(bodies)
def test_plain_messages_read_what_the_model_reads(body: Any) -> None:
    read = plain_messages(body)
    if read is not None:
        assert read == _model(body)


def test_plain_turns_take_the_short_way() -> None:
    body = {"messages": [{"role": "user", "content": "hi", "id": "u1"},
                         {"role": "assistant", "content": "hello", "name": "bot"}]}
    assert plain_messages(body) == _model(body)
    assert plain_messages({"messages": [{"role": "user", "content": "x", "id": ""}]}) is None
    assert plain_messages({"messages": [{"role": "user", "content": None}]}) is None
