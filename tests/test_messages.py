"""The message model: validation, OpenAI conversion, sequence rules."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextfold import MediaPart, Message, ToolCall, ValidationError
from contextfold.messages import StoredMessage, check_sequence, make_stored, render_text

from .strategies import transcripts


def test_openai_round_trip_with_tools_and_parts() -> None:
    raw: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "name": "Ann",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a cat"},
    ]
    messages = [Message.from_openai(r) for r in raw]
    assert [m.to_openai() for m in messages] == raw
    assert isinstance(messages[1].content, tuple) and isinstance(messages[1].content[1], MediaPart)
    assert messages[1].text == "what is this?\n[image]"
    assert "[tool calls: look({})]" in render_text(messages[2])


def test_to_dict_keeps_timestamp_metadata_id_and_raw_name() -> None:
    ts = datetime(2024, 5, 8, 13, 56, tzinfo=timezone(timedelta(hours=2)))
    m = Message(
        role="user", content="x", name="Ann Lee", timestamp=ts, metadata={"a": [1]}, id="m1"
    )
    assert m.timestamp == ts and m.timestamp.tzinfo == timezone.utc
    assert Message.from_openai(m.to_dict()) == m
    assert m.to_openai()["name"] == "Ann_Lee"  # OpenAI's name pattern, in the wire form only


@pytest.mark.parametrize(
    "raw",
    [
        {"role": "robot", "content": "x"},
        {"role": "user", "content": "nul\x00"},
        {"role": "user", "content": "\udc00"},
        {"role": "user", "content": 5},
        {"role": "user", "content": "x", "metadata": {"k": float("nan")}},
        {"role": "user", "content": "x", "metadata": {1: "x"}},
        {"role": "user", "content": "x", "timestamp": "yesterday"},
        {"role": "user", "content": "x", "surprise": True},
        {"role": "tool", "content": "x"},
        {"role": "user", "content": "x", "tool_call_id": "c"},
        {"role": "user", "content": [{"type": "hologram"}]},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "a", "function": {"name": "f"}},
                {"id": "a", "function": {"name": "g"}},
            ],
        },
        {"role": "assistant", "function_call": {"name": "f"}},
    ],
)
def test_invalid_messages_raise_validation_error(raw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Message.from_openai(raw)


def test_sequence_rules() -> None:
    call = Message(role="assistant", tool_calls=(ToolCall("a", "f"), ToolCall("b", "f")))
    assert check_sequence([call]) == ("a", "b")
    assert check_sequence([Message(role="tool", content="1", tool_call_id="b")], ("a", "b")) == (
        "a",
    )
    with pytest.raises(ValidationError, match="orphan or answered twice"):
        check_sequence([Message(role="tool", content="1", tool_call_id="zz")])
    with pytest.raises(ValidationError, match="unanswered"):
        check_sequence([call, Message(role="user", content="hey")])


@given(transcripts())
def test_generated_transcripts_are_valid_and_round_trip(messages: list[Message]) -> None:
    check_sequence(messages)
    assert [Message.from_openai(m.to_dict()) for m in messages] == messages


@given(st.text())
def test_text_is_accepted_or_rejected_with_validation_error(text: str) -> None:
    try:
        m = Message(role="user", content=text)
    except ValidationError:
        assert "\x00" in text or any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)
    else:
        assert m.text == text


@given(
    st.sampled_from(["system", "user", "assistant", "tool", "developer", "robot", ""]),
    st.text(),
    st.none() | st.datetimes(timezones=st.none() | st.just(timezone.utc)),
)
def test_a_role_and_content_dict_parses_as_the_full_constructor_would(
    role: str, content: str, stamp: datetime | None
) -> None:
    """{"role", "content"} dicts take a short path: same message, same errors."""
    try:
        expected: Message | type[ValidationError] = Message(
            role="system" if role == "developer" else role,  # type: ignore[arg-type]
            content=content,
            timestamp=stamp,
        )
    except ValidationError:
        expected = ValidationError
    if expected is ValidationError:
        with pytest.raises(ValidationError):
            Message.from_openai({"role": role, "content": content}, timestamp=stamp)
    else:
        got = Message.from_openai({"role": role, "content": content}, timestamp=stamp)
        assert got == expected and got.timestamp == expected.timestamp  # type: ignore[union-attr]


@given(
    st.integers(1, 10**6),
    st.text(st.characters(blacklist_categories=("Cs",))),
    st.integers(0, 10**4),
    st.booleans(),
)
def test_a_stored_message_made_fast_is_the_dataclass(
    seq: int, content: str, tokens: int, folded: bool
) -> None:
    """Stores make StoredMessage with make_stored (no __init__): same fields, same
    equality, hash and repr, and as frozen."""
    message = Message(role="user", content=content.replace("\x00", ""))
    made = make_stored(seq, message, tokens, folded)
    built = StoredMessage(seq, message, tokens, folded)
    assert made == built and repr(made) == repr(built)
    assert (made.seq, made.message, made.tokens, made.folded) == (seq, message, tokens, folded)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seq = 0  # type: ignore[misc]
