"""Use case 2: a privacy-first assistant keeps turn digests, never the transcript."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextfold import ConfigError, Message, SessionStats, StoredMessage
from contextfold.digests import (
    DigestMemory,
    DigestWindow,
    LLMDigester,
    RuleDigester,
    TurnDigest,
    render_block,
)
from contextfold.stores import MemoryStore
from contextfold.stores.sqlite import SQLiteStore
from contextfold.testing import FakeChat
from contextfold.tokens import get_counter

PII = {
    "email": "jane.doe@example.com",
    "phone": "+1 415 555 0132",
    "card": "4111 1111 1111 1111",
    "ssn": "123-45-6789",
    "address": "1600 Pennsylvania Avenue NW",
}


T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_later_turn_context_holds_the_earlier_digest() -> None:
    async def main() -> None:
        async with DigestMemory("memory://") as dm:
            first = await dm.record("s", "What is on my calendar tomorrow?",
                                    "You have a dentist appointment at 10. Shall I set a reminder?")
            assert first.turn == 1 and first.pending == ("waiting for confirmation",)
            assert "calendar" in first.wanted and "dentist" in first.did
            await dm.record("s", "Yes please.", "Done: reminder set for 9:30.")
            prompt = await dm.system_prompt("s", "You are a helpful assistant.")
            assert prompt.startswith("You are a helpful assistant.")
            assert "DIALOG_SUMMARY" in prompt
            assert "Turn 1" in prompt and "dentist appointment" in prompt
            assert "pending: waiting for confirmation" in prompt
            assert "Turn 2" in prompt and "reminder set" in prompt

    run(main())


def test_pii_is_never_stored_and_no_raw_transcript(tmp_path: Path) -> None:
    path = tmp_path / "digests.db"
    raw_sentence = ("Also tell me about the weather in a city I will not name, the one where "
                    "we met last spring, near the river with the old stone bridge")

    async def main() -> None:
        async with DigestMemory(f"sqlite:///{path}") as dm:
            assert dm.memory.store.retention == "delete"
            user = (f"Email me at {PII['email']} or call {PII['phone']}; my card is "
                    f"{PII['card']}, SSN {PII['ssn']}, I live at {PII['address']}. "
                    f"{raw_sentence}.")
            digest = await dm.record("s", user, f"I will email {PII['email']} the summary.")
            for value in PII.values():
                assert value not in digest.render()
            assert "<EMAIL_1>" in digest.render()
            for i in range(30):
                await dm.record("s", f"question {i} from {PII['email']}", f"answer {i}")
            # evicted digests are gone, not archived
            stored = await dm.memory.messages("s", include_folded=True)
            assert len(stored) == len(await dm.digests("s"))

    run(main())
    data = path.read_bytes()
    for extra in ("-wal", "-shm"):
        side = path.with_name(path.name + extra)
        if side.exists():
            data += side.read_bytes()
    for value in PII.values():
        assert value.encode() not in data
    conn = sqlite3.connect(path)
    dump = "\n".join(conn.iterdump())
    conn.close()
    for value in PII.values():
        assert value not in dump
    assert raw_sentence not in dump  # over the digest's word limit: never stored


def test_cap_holds_after_many_turns_and_newest_is_always_kept() -> None:
    counter = get_counter()

    async def main() -> None:
        async with DigestMemory("memory://", max_tokens=500) as dm:
            for i in range(1, 26):
                await dm.record("s", f"Turn {i}: please book table number {i} for dinner "
                                     "tonight at the Italian place near the station.",
                                f"Booked table {i} at 19:00. Do you want a taxi as well?")
                assert await dm.window_tokens("s") <= 500
                window = await dm.digests("s")
                assert window[-1].turn == i
            window = await dm.digests("s")
            assert 1 < len(window) < 25 and window[0].turn > 1
            assert sum(counter.count(d.render()) for d in window) <= 500
            block = await dm.block("s")
            assert block.count("- Turn ") == 5  # last five turns at most
            assert "Turn 25" in block and "Turn 20" not in block

    run(main())


def test_newest_digest_is_kept_even_alone_over_the_cap() -> None:
    async def main() -> None:
        async with DigestMemory("memory://", max_tokens=20) as dm:
            await dm.record("s", "short", "ok")
            await dm.record("s", "a rather long request " * 5, "a rather long reply " * 5)
            window = await dm.digests("s")
            assert [d.turn for d in window] == [2]

    run(main())


def test_store_must_delete() -> None:
    with pytest.raises(ConfigError, match="retention='delete'"):
        DigestMemory(MemoryStore())
    DigestMemory(MemoryStore(retention="delete"))
    DigestMemory(SQLiteStore(":memory:", retention="delete"))


def test_block_rendering_and_rule_digester() -> None:
    async def main() -> None:
        d = await RuleDigester().digest(3, "Can you move my 3pm meeting? It clashes.",
                                        "I'll move it to 4pm once you confirm.",
                                        datetime(2025, 5, 1, 10, 0))
        assert d.wanted == "Can you move my 3pm meeting? It clashes."
        assert "waiting for confirmation" in d.pending
        assert "assistant follow-up promised" in d.pending
        assert render_block([]) == "DIALOG_SUMMARY: (no earlier turns)"
        block = render_block([TurnDigest(i, "w", "d") for i in range(1, 9)], last=5)
        assert block.splitlines()[1].startswith("- Turn 4:")

    run(main())


def test_llm_digester_sees_only_redacted_text() -> None:
    async def main() -> None:
        chat = FakeChat(['{"wanted": "send the report to <EMAIL_1>", "did": "sent it", '
                         '"pending": ["waiting for confirmation"]}', "not json at all"])
        async with DigestMemory("memory://", digester=LLMDigester(chat)) as dm:
            d = await dm.record("s", f"send the report to {PII['email']}", "Sent.")
            assert d.wanted == "send the report to <EMAIL_1>"
            assert d.pending == ("waiting for confirmation",)
            assert PII["email"] not in chat.requests[0].text
            d2 = await dm.record("s", "thanks", "You're welcome. Anything else?")
            assert d2.wanted == "thanks"  # unparseable reply: the rule digest for that turn

    run(main())


@given(st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=40),
       st.integers(min_value=1, max_value=600), st.integers(min_value=1, max_value=3))
def test_digest_window_plan_property(tokens: list[int], cap: int, keep: int) -> None:
    """Whatever the sizes: the kept digests fit the cap unless only the newest ``keep_last``
    are left, the newest is always kept, and the plan drops a prefix, oldest first."""
    live = [StoredMessage(i + 1, Message(role="assistant", content="d"), t)
            for i, t in enumerate(tokens)]
    stats = SessionStats("s", last_seq=len(live), live_count=len(live), live_tokens=sum(tokens))
    window = DigestWindow(cap, keep_last=keep)
    plan = window.plan(stats, live, datetime.now())
    assert (plan is not None) == (sum(tokens) > cap and len(live) > keep)
    kept = live if plan is None else [m for m in live if m.seq > plan.hi]
    if plan is not None:
        assert plan.lo == 1 and window.triggered(stats, datetime.now())
    assert kept[-1] is live[-1] and len(kept) >= min(keep, len(live))
    assert sum(m.tokens for m in kept) <= cap or len(kept) == min(keep, len(live))
