"""Malformed and hostile input: the same documented behaviour on every store.

Documented behaviour (README "Guarantees"): text is stored exactly as given when it is
valid Unicode without NUL (zero-width, bidi, control characters, emoji all pass
unchanged); anything else — NUL, lone surrogates, a wrong type in any field, metadata
nested deeper than 32 levels, a message over ``max_message_chars``, a sequence that breaks
the tool-call rules — raises ``ValidationError`` before anything is written, for the whole
append. No driver exception ever escapes. Image/audio/file parts are stored unchanged and
reach summarizers only as typed placeholders.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from conftest import StoreFactory
from contextfold import (
    AsyncMemory,
    ConfigError,
    ContextFoldError,
    MediaPart,
    Message,
    MessageCount,
    TextPart,
    TokenBudget,
    ToolCall,
    ValidationError,
)
from contextfold.messages import render_text
from contextfold.stores.base import Store
from contextfold.summarizers.base import SummaryRequest
from contextfold.testing import FakeChat, FunctionSummarizer, check_invariant
from contextfold.testing.provider_rules import check_provider_rules

T = TypeVar("T")
PAYLOAD = (  # a base64 PNG: must never reach a summarizer
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _deep(levels: int, leaf: Any = 1, wrap: Callable[[Any], Any] = lambda x: {"a": x}) -> Any:
    return functools.reduce(lambda acc, _: wrap(acc), range(levels), leaf)


def _run(
    stores: StoreFactory, body: Callable[[AsyncMemory, Store], Awaitable[T]], **options: Any
) -> T:
    async def main() -> T:
        _, store = stores.new()
        memory = AsyncMemory(
            store,
            summarizer=FunctionSummarizer(lambda r: "s"),
            fold="manual",
            tokenizer="o200k",
            **options,
        )
        try:
            return await body(memory, store)
        finally:
            await memory.close()

    return asyncio.run(main())


# -- valid but unusual text: stored exactly as given, on every store -------------------------

ODD_BUT_VALID = [
    "zero\u200bwidth\u200c\u200djoiners\ufeff and\u2060word joiner",
    "bidi \u202eoverride\u202c \u2066isolate\u2069 \u200fRLM\u200e",
    "emoji 🙂 👩‍👩‍👧 flags 🇫🇷 combining e\u0301 \U0010ffff",
    "control \x01\x08\x1b[31m\x7f\x85 and\r\nCRLF\ttab",
    "Привет 中文 العربية עברית",
    "",
    "   ",
    '{"looks": "like json"} <tag> \'; DROP TABLE messages; --',
]


def test_odd_but_valid_text_round_trips_unchanged(stores: StoreFactory) -> None:
    async def body(memory: AsyncMemory, store: Store) -> None:
        msgs = [
            Message(
                role="user", content=t, name=t or None if t.strip() else None, metadata={t: [t]}
            )
            for t in ODD_BUT_VALID
        ]
        await memory.add("s\u202e\u200b🙂", *msgs)
        back = await memory.messages("s\u202e\u200b🙂")
        assert [m.message.content for m in back] == ODD_BUT_VALID
        assert [m.message.metadata for m in back] == [{t: [t]} for t in ODD_BUT_VALID]
        assert [m.message.name for m in back] == [m.name for m in msgs]
        await check_invariant(store, "s\u202e\u200b🙂")

    _run(stores, body)


# -- invalid input: ValidationError before any write, for the whole append --------------------

GOOD = {"role": "user", "content": "fine"}
CALL = {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]}

BAD_DICTS: dict[str, Any] = {
    "NUL in content": {"role": "user", "content": "a\x00b"},
    "lone surrogate in content": {"role": "user", "content": "x\ud800y"},
    "lone surrogate in text part": {
        "role": "user",
        "content": [{"type": "text", "text": "\udfff"}],
    },
    "NUL in name": {"role": "user", "content": "x", "name": "a\x00"},
    "blank name": {"role": "user", "content": "x", "name": "  "},
    "surrogate metadata key": {"role": "user", "metadata": {"\ud800": 1}},
    "NUL metadata value": {"role": "user", "metadata": {"k": "v\x00"}},
    "metadata 33 levels": {"role": "user", "metadata": _deep(33)},
    "metadata 100k levels": {"role": "user", "metadata": _deep(100_000)},
    "metadata 100k nested lists": {
        "role": "user",
        "metadata": {"a": _deep(100_000, wrap=lambda x: [x])},
    },
    "metadata NaN": {"role": "user", "metadata": {"x": float("nan")}},
    "metadata non-JSON value": {"role": "user", "metadata": {"x": {1, 2}}},
    "metadata int key": {"role": "user", "metadata": {1: "x"}},
    "huge metadata": {"role": "user", "metadata": {"x": "y" * 70_000}},
    "NUL in tool call id": {
        "role": "assistant",
        "tool_calls": [{"id": "c\x00", "function": {"name": "f"}}],
    },
    "surrogate in tool args": {
        "role": "assistant",
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "\ud83d"}}],
    },
    "tool args 100k levels": {
        "role": "assistant",
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": _deep(100_000)}}],
    },
    "duplicate call ids": {
        "role": "assistant",
        "tool_calls": [
            {"id": "c", "function": {"name": "f"}},
            {"id": "c", "function": {"name": "g"}},
        ],
    },
    "role int": {"role": 5},
    "role None": {"role": None, "content": "x"},
    "role list": {"role": ["user"]},
    "role unknown": {"role": "wizard"},
    "content int": {"role": "user", "content": 5},
    "content dict": {"role": "user", "content": {"text": "x"}},
    "content bytes": {"role": "user", "content": b"x"},
    "content part int": {"role": "user", "content": [5]},
    "content part unknown type": {"role": "user", "content": [{"type": "video", "url": "x"}]},
    "content part type list": {"role": "user", "content": [{"type": ["text"]}]},
    "text part text None": {"role": "user", "content": [{"type": "text"}]},
    "name int": {"role": "user", "name": 5},
    "tool_calls str": {"role": "assistant", "tool_calls": "call"},
    "tool_calls dict": {"role": "assistant", "tool_calls": {"id": "c"}},
    "tool_calls [int]": {"role": "assistant", "tool_calls": [5]},
    "tool call function int": {"role": "assistant", "tool_calls": [{"id": "c", "function": 5}]},
    "tool call id int": {"role": "assistant", "tool_calls": [{"id": 5, "function": {"name": "f"}}]},
    "tool call args list": {
        "role": "assistant",
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": [1]}}],
    },
    "tool calls on user": {"role": "user", "tool_calls": [{"id": "c", "function": {"name": "f"}}]},
    "tool message without id": {"role": "tool", "content": "r"},
    "tool_call_id int": {"role": "tool", "content": "r", "tool_call_id": 5},
    "tool_call_id on user": {"role": "user", "tool_call_id": "c1"},
    "timestamp junk": {"role": "user", "timestamp": "yesterday"},
    "timestamp NaN": {"role": "user", "timestamp": float("nan")},
    "timestamp 1e30": {"role": "user", "timestamp": 1e30},
    "timestamp list": {"role": "user", "timestamp": [2026]},
    "timestamp bool": {"role": "user", "timestamp": True},
    "metadata int": {"role": "user", "metadata": 5},
    "metadata list": {"role": "user", "metadata": [1]},
    "id int": {"role": "user", "id": 5},
    "id empty": {"role": "user", "id": ""},
    "id NUL": {"role": "user", "id": "a\x00"},
    "unknown field": {"role": "user", "content": "x", "evil": 1},
    "legacy function_call": {"role": "assistant", "function_call": {"name": "f"}},
    "not a mapping: int": 5,
    "not a mapping: str": "hello",
    "not a mapping: None": None,
    "not a mapping: list": [GOOD],
}


def _bad_objects() -> dict[str, Callable[[], object]]:
    """Constructors that must raise ValidationError (a bad Message cannot exist)."""
    return {
        "Message role list": lambda: Message(role=["user"]),  # type: ignore[arg-type]
        "Message tool_calls int": lambda: Message(role="assistant", tool_calls=5),  # type: ignore[arg-type]
        "Message tool_calls of dicts": lambda: Message(role="assistant", tool_calls=({"id": "c"},)),  # type: ignore[arg-type]
        "Message content tuple of str": lambda: Message(role="user", content=("x",)),  # type: ignore[arg-type]
        "TextPart int": lambda: Message(role="user", content=(TextPart(5),)),  # type: ignore[arg-type]
        "MediaPart non-JSON data": lambda: Message(
            role="user", content=(MediaPart("image", {"x": object()}),)
        ),
        "MediaPart unknown kind": lambda: Message(
            role="user", content=(MediaPart("video", {"type": "v"}),)
        ),  # type: ignore[arg-type]
        "MediaPart data not a mapping": lambda: Message(
            role="user", content=(MediaPart("image", [1]),)
        ),  # type: ignore[arg-type]
        "MediaPart deep data": lambda: Message(
            role="user", content=(MediaPart("file", _deep(100_000)),)
        ),
        "ToolCall args object": lambda: ToolCall("c", "f", {"x": object()}),  # type: ignore[arg-type]
        "ToolCall args deep": lambda: ToolCall("c", "f", _deep(100_000)),  # type: ignore[arg-type]
        "ToolCall id blank": lambda: ToolCall(" ", "f"),
    }


@pytest.mark.parametrize("name", sorted(_bad_objects()))
def test_invalid_message_objects_cannot_be_built(name: str) -> None:
    with pytest.raises(ValidationError):
        _bad_objects()[name]()


def test_invalid_input_writes_nothing_on_any_store(stores: StoreFactory) -> None:
    async def body(memory: AsyncMemory, store: Store) -> None:
        await memory.add("s", GOOD, CALL)
        before = (await memory.stats("s"), await memory.messages("s"))
        answer = {"role": "tool", "content": "r", "tool_call_id": "c1"}
        for name, bad in BAD_DICTS.items():
            for batch in ([bad], [answer, GOOD, bad]):  # nothing of a batch is written
                with pytest.raises(ValidationError):
                    await memory.add("s", *batch)
                assert (await memory.stats("s"), await memory.messages("s")) == before, name
            with pytest.raises(ValidationError):
                await memory.add("fresh", GOOD, bad)
            assert await memory.stats("fresh") is None, name
        # sequences the tool-call rules forbid, checked by the store inside its transaction
        for name, batch in {
            "user while a call is pending": [GOOD],
            "orphan tool result": [answer, {"role": "tool", "content": "r", "tool_call_id": "zz"}],
            "a call answered twice": [answer, answer],
            "assistant reusing a pending call id": [CALL],
        }.items():
            with pytest.raises(ValidationError):
                await memory.add("s", *batch)
            assert (await memory.stats("s"), await memory.messages("s")) == before, name
        await check_invariant(store, "s")

    _run(stores, body)


def test_hostile_session_ids_are_refused_before_any_write(stores: StoreFactory) -> None:
    async def body(memory: AsyncMemory, store: Store) -> None:
        for sid in ("", "   ", "a\x00b", "x\ud800", 5, None, b"s", "s" * 300):
            with pytest.raises((ConfigError, ValidationError)):
                await memory.add(sid, GOOD)  # type: ignore[arg-type]
            with pytest.raises((ConfigError, ValidationError)):
                await memory.context(sid)  # type: ignore[arg-type]
        assert await memory.sessions() == []

    _run(stores, body)


# -- 10 MB messages ----------------------------------------------------------------------------


def test_ten_megabyte_message(stores: StoreFactory) -> None:
    big = "word " * 2_000_000 + "end"
    digest = hashlib.sha256(big.encode()).hexdigest()

    async def refused(memory: AsyncMemory, store: Store) -> None:
        with pytest.raises(ValidationError, match="max_message_chars"):
            await memory.add("s", GOOD, {"role": "user", "content": big})
        assert await memory.stats("s") is None

    async def stored(memory: AsyncMemory, store: Store) -> None:
        await memory.add("s", GOOD, Message(role="user", content=big))
        back = await memory.messages("s")
        assert hashlib.sha256(back[1].message.text.encode()).hexdigest() == digest
        assert back[1].tokens > 2_000_000
        await check_invariant(store, "s")

    _run(stores, refused)  # the default cap is 1,000,000 characters
    _run(stores, stored, max_message_chars=11_000_000)


# -- media parts: stored unchanged, summarized as placeholders --------------------------------

MEDIA_MSGS = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PAYLOAD}"}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "input_audio", "input_audio": {"data": PAYLOAD, "format": "wav"}}],
    },
    {
        "role": "user",
        "content": [{"type": "file", "file": {"filename": "report.pdf", "file_data": PAYLOAD}}],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PAYLOAD},
            }
        ],
    },
    {"role": "assistant", "content": "I see a one-pixel image, a sound and a report."},
]


def test_media_parts_are_stored_unchanged_and_summarized_as_placeholders(
    stores: StoreFactory,
) -> None:
    seen: list[SummaryRequest] = []

    def summarize(request: SummaryRequest) -> str:
        seen.append(request)
        return "summary of " + " | ".join(render_text(m.message) for m in request.messages)

    async def body(memory: AsyncMemory, store: Store) -> None:
        memory.summarizer = FunctionSummarizer(summarize)
        await memory.add("s", *MEDIA_MSGS)
        back = await memory.messages("s")
        assert [m.message.to_openai()["content"] for m in back] == [
            m["content"] for m in MEDIA_MSGS
        ]
        outcome = await memory.fold("s", force=True)
        assert outcome.status == "committed"
        rendered = [render_text(m.message) for m in seen[0].messages]
        assert rendered[:4] == [
            "what is in this picture?\n[image]",
            "[audio]",
            "[file: report.pdf]",
            "[image]",
        ]
        summary = await memory.summary("s")
        assert summary is not None and PAYLOAD not in summary.text and "[audio]" in summary.text
        assert [m.message.to_openai()["content"] for m in await memory.messages("s")] == [
            m["content"] for m in MEDIA_MSGS
        ]  # the fold did not touch the stored parts

    _run(stores, body, policy=TokenBudget(4000, keep_last=0))  # force: fold them all


@pytest.mark.parametrize("which", ["extractive", "llm"])
def test_shipped_summarizers_never_see_media_payloads(which: str) -> None:
    from contextfold.stores import MemoryStore

    async def main() -> None:
        chat = FakeChat()
        if which == "llm":
            from contextfold.summarizers.llm import LLMSummarizer

            summarizer: Any = LLMSummarizer(chat)
        else:
            from contextfold.summarizers.extractive import ExtractiveSummarizer

            summarizer = ExtractiveSummarizer()
        memory = AsyncMemory(
            MemoryStore(), summarizer=summarizer, policy=MessageCount(100), fold="manual"
        )
        await memory.add("s", *MEDIA_MSGS)
        outcome = await memory.fold("s", force=True)
        assert outcome.status == "committed", outcome.error
        summary = await memory.summary("s")
        assert summary is not None and PAYLOAD not in summary.text
        for request in chat.requests:
            assert all(PAYLOAD not in m.text and "base64" not in m.text for m in request.messages)
            assert check_provider_rules(request.messages) == []  # the summarizer's own call

    asyncio.run(main())


def test_store_failures_surface_as_contextfold_errors(stores: StoreFactory) -> None:
    """A closed store: StorageError (a ContextFoldError), never the driver's exception."""

    async def main() -> None:
        _, store = stores.new()
        memory = AsyncMemory(store, summarizer=FunctionSummarizer(lambda r: "s"), fold="manual")
        await memory.add("s", GOOD)
        await memory.close()
        if stores.kind == "memory":
            return  # nothing to close
        with pytest.raises(ContextFoldError):
            await memory.add("s", GOOD)

    asyncio.run(main())
