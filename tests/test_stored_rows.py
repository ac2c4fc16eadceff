"""Reading stored message rows back: the cheap path for the rows a store writes gives the
same messages as full parsing and validation, and a row that does not parse is a
``StorageError`` — from the decoder and from a store whose row was damaged."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextfold import MediaPart, Message, ToolCall
from contextfold.errors import StorageError
from contextfold.messages import trusted_message
from contextfold.stores.base import PreparedMessage
from contextfold.stores.rows import decode_message, encode_message
from contextfold.stores.sqlite import SQLiteStore

from .strategies import transcripts

_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=60)
_stamps = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1),
                 timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=5, minutes=30)),
                                            timezone(timedelta(hours=-7))])),
)
_metadata = st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: "\x00" not in k),
                            st.one_of(st.integers(), st.booleans(), st.none(), _text,
                                      st.lists(st.integers(), max_size=3)), max_size=3)


@st.composite
def messages(draw: Any) -> Message:
    """Valid messages of every kind a store holds: text turns with or without a name,
    timestamp, metadata and id; content parts; tool calls and results."""
    kind = draw(st.sampled_from(["text", "text", "parts", "calls", "tool"]))
    common: dict[str, Any] = {
        "timestamp": draw(_stamps),
        "metadata": draw(_metadata),
        "id": draw(st.one_of(st.none(), st.text(min_size=1, max_size=10).filter(
            lambda s: "\x00" not in s))),
    }
    if kind == "text":
        name = draw(st.one_of(st.none(), st.sampled_from(["Caroline", "Mel", "Zoë"])))
        role = draw(st.sampled_from(["system", "user", "assistant"]))
        return Message(role=role, content=draw(_text), name=name, **common)
    if kind == "parts":
        image = MediaPart("image", {"type": "image_url", "image_url": {"url": "https://x/y"}})
        content = [{"type": "text", "text": draw(_text)}, dict(image.data)]
        return Message.from_openai({"role": "user", "content": content},
                                   timestamp=common["timestamp"])
    if kind == "calls":
        return Message(role="assistant", content=draw(_text),
                       tool_calls=(ToolCall("call_1", "lookup", '{"q": 1}'),), **common)
    return Message(role="tool", content=draw(_text), tool_call_id="call_1", **common)


def _validated(body: str) -> Message:
    return Message.from_openai(json.loads(body))


@given(messages())
def test_a_stored_row_reads_back_as_full_validation_reads_it(message: Message) -> None:
    body = encode_message(message)
    stored = decode_message(7, body, 12, folded=True)
    assert (stored.seq, stored.tokens, stored.folded) == (7, 12, True)
    assert stored.message == _validated(body) == message
    stamp = stored.message.timestamp
    assert stamp is None or stamp.tzinfo is timezone.utc


@given(transcripts(max_turns=12))
def test_transcripts_read_back_unchanged(chat: list[Message]) -> None:
    for m in chat:
        assert decode_message(1, encode_message(m), 3).message == m


def test_plain_turns_take_the_cheap_path_and_others_are_parsed() -> None:
    turn = Message(role="user", content="Hey Mel!", name="Caroline",
                   timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc),
                   metadata={"dia": "D1:1"}, id="m1")
    assert trusted_message(json.loads(encode_message(turn))) == turn
    tool = Message(role="tool", content="42", tool_call_id="c1")
    assert trusted_message(json.loads(encode_message(tool))) is None
    assert decode_message(1, encode_message(tool), 1).message == tool
    # a timestamp not in the store's own form is coerced by the full path
    row = {"role": "user", "content": "hi", "timestamp": "2023-05-08T15:56:00+02:00"}
    assert trusted_message(row) is None
    assert decode_message(1, json.dumps(row), 1).message.timestamp == datetime(
        2023, 5, 8, 13, 56, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "body",
    [
        "",
        "{not json",
        '"just a string"',
        "[1, 2]",
        '{"role": "wizard", "content": "hi"}',
        '{"role": "user", "content": 5}',
        '{"role": "user", "content": "hi", "name": 3}',
        '{"role": "user", "content": "hi", "timestamp": "yesterday"}',
        '{"role": "user", "content": "hi", "timestamp": 1e400}',
        '{"role": "user", "content": "hi", "metadata": [1]}',
        '{"role": "user", "content": "hi", "id": 9}',
        '{"role": "user", "content": "hi", "colour": "red"}',
        '{"role": "tool", "content": "42"}',
        '{"role": "user", "content": [{"type": "hologram"}]}',
    ],
)
def test_a_row_that_does_not_parse_is_a_storage_error(body: str) -> None:
    with pytest.raises(StorageError, match="seq 4 cannot be read back"):
        decode_message(4, body, 1)


def test_a_damaged_row_in_the_store_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)

    async def main() -> None:
        store = SQLiteStore(path)
        await store.setup()
        await store.append("s", [PreparedMessage(Message(role="user", content=f"turn {i}"), 3)
                                 for i in range(3)], t0)
        assert [m.text for m in await store.fetch("s", [1, 2])] == ["turn 0", "turn 1"]
        await store.close()
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE messages SET body = ? WHERE seq = 2",
                         ('{"role": "user", "content": {"no": "text"}}',))
        store = SQLiteStore(path)
        await store.setup()
        try:
            with pytest.raises(StorageError, match="seq 2 cannot be read back"):
                await store.fetch("s", [1, 2])
            assert [m.text for m in await store.fetch("s", [1, 3])] == ["turn 0", "turn 2"]
        finally:
            await store.close()

    asyncio.run(main())


def test_the_decoder_reuses_a_row_only_while_its_body_is_the_same() -> None:
    from contextfold.stores.rows import MessageDecoder

    decoder = MessageDecoder()
    said = Message(role="user", content="the ferry leaves at noon")
    body = decoder.encode("s", 1, said, 9)  # written live
    live = decoder.decode("s", 1, body, 9)
    assert live.message == said and not live.folded
    folded = decoder.decode("s", 1, body, 9, folded=True)  # read after its fold
    assert folded.message == said and folded.folded and folded.seq == 1 and folded.tokens == 9
    assert decoder.decode("s", 1, body, 9, folded=True) is folded  # kept as it now reads
    assert not decoder.decode("s", 1, body, 9).folded  # an older snapshot still reads live
    other = encode_message(Message(role="user", content="another session, same seq"))
    assert decoder.decode("s", 1, other, 9, folded=True).message.text == (
        "another session, same seq")  # a re-created session's row is decoded afresh
    assert decoder.decode("s", 1, body, 0, folded=True).tokens == 0  # a changed count too
