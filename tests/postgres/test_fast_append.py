"""The PostgreSQL append in one statement, planned on the totals a process last saw: when
other processes moved the session meanwhile (appends, folds, tool calls, retried ids), what
is stored is what the transaction would have stored — every id once, seqs 1..N, totals
that add up, due marks as of the last seq, tool-call rules as stored."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timezone
from typing import Any

import pytest

from contextfold.errors import ValidationError
from contextfold.messages import Message, ToolCall
from contextfold.stores.base import PreparedMessage
from contextfold.stores.postgres import PostgresStore
from contextfold.testing import check_invariant

from .conftest import fresh_schema

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)


def item(mid: str | None, role: str = "user", **extra: Any) -> PreparedMessage:
    return PreparedMessage(Message(role=role, content=f"text of {mid}", id=mid, **extra), 7)


async def stores(url: str, n: int) -> list[PostgresStore]:
    """``n`` stores on one schema: as many server processes, each with its own caches."""
    schema = fresh_schema()
    out = [PostgresStore(url, schema=schema, pool_size=4) for _ in range(n)]
    await out[0].setup()
    return out


async def totals_add_up(store: PostgresStore, sid: str) -> None:
    stats = await store.stats(sid)
    rows = await store.messages(sid)
    assert stats is not None
    assert [m.seq for m in rows] == list(range(1, stats.last_seq + 1))
    live = [m for m in rows if m.seq > stats.through_seq]
    assert stats.live_count == len(live)
    assert stats.live_tokens == sum(m.tokens for m in live)
    await check_invariant(store, sid)


def test_processes_racing_with_retried_ids_store_each_id_once(pg_url: str) -> None:
    async def main() -> None:
        procs = await stores(pg_url, 3)
        rng = random.Random(7)
        try:
            await procs[0].append("s", [item("first")], T0)

            async def client(n: int) -> list[tuple[str | None, int]]:
                got = []
                for r in range(8):
                    batch = [item(f"c{n}-{r}-u"), item(f"c{n}-{r}-a", "assistant")]
                    for attempt in range(1 + (rng.random() < 0.4)):  # some sent twice
                        store = procs[(n + r + attempt) % len(procs)]
                        result = await store.append("s", batch, T0)
                        got += list(zip([i.message.id for i in batch], result.seqs,
                                        strict=True))
                    if rng.random() < 0.3:
                        await procs[n % 3].snapshot("s")  # what a context read updates
                return got

            answers = [a for c in await asyncio.gather(*(client(n) for n in range(9)))
                       for a in c]
            seq_of: dict[str | None, int] = {}
            for mid, seq in answers:  # a retried id answers its first seq
                assert seq_of.setdefault(mid, seq) == seq
            stored = await procs[1].messages("s")
            assert len({m.message.id for m in stored}) == len(stored) == 1 + 9 * 8 * 2
            assert {m.message.id: m.seq for m in stored} == {"first": 1, **seq_of}
            await totals_add_up(procs[2], "s")
        finally:
            await asyncio.gather(*(p.close() for p in procs))

    asyncio.run(main())


def test_a_stale_view_of_pending_tool_calls_is_checked_as_stored(pg_url: str) -> None:
    """One process saw no pending call; another appended the call: the first process's
    tool result is accepted (planned on stale totals it looked like an orphan). Then the
    reverse: a user turn while a call is pending is refused, as stored."""

    async def main() -> None:
        here, there = await stores(pg_url, 2)
        try:
            await here.append("t", [item("u1")], T0)
            call = ToolCall(id="call-1", name="lookup", arguments="{}")
            await there.append("t", [item("a1", "assistant", tool_calls=[call])], T0)
            result = await here.append(
                "t", [item("r1", "tool", tool_call_id="call-1", name="lookup")], T0)
            assert result.seqs == (3,) and result.stats.pending_calls == ()
            await there.append("t", [item("a2", "assistant", tool_calls=[
                ToolCall(id="call-2", name="lookup", arguments="{}")])], T0)
            with pytest.raises(ValidationError):
                await here.append("t", [item("u2")], T0)  # here still saw nothing pending
            stats = await there.stats("t")
            assert stats is not None and stats.pending_calls == ("call-2",)
            await totals_add_up(there, "t")
        finally:
            await here.close()
            await there.close()

    asyncio.run(main())


def test_due_marks_follow_the_stored_totals(pg_url: str) -> None:
    """The due mark an append writes is decided on the totals it was written on, whichever
    process saw what: a session is due exactly when its stored live tokens are over."""

    async def main() -> None:
        here, there = await stores(pg_url, 2)

        def due(stats: Any) -> datetime | None:
            return T0 if stats.live_tokens > 40 else None

        try:
            for r in range(5):  # 2 messages of 7 tokens each time, alternating processes
                store = here if r % 2 else there
                await store.append("d", [item(f"{r}u"), item(f"{r}a", "assistant")], T0,
                                   due=due)
                stats = await there.stats("d")
                assert stats is not None
                marked = [s for s, _ in await there.list_due()]
                assert marked == (["d"] if stats.live_tokens > 40 else [])
        finally:
            await here.close()
            await there.close()

    asyncio.run(main())


def test_an_append_takes_one_statement_once_the_session_is_known(pg_url: str) -> None:
    class Counting(PostgresStore):
        calls = 0

        async def _tx(self, fn: Any, *, single: bool = False) -> Any:
            self.calls += 1
            return await super()._tx(fn, single=single)

    async def main() -> None:
        store = Counting(pg_url, schema=fresh_schema())
        await store.setup()
        try:
            await store.append("k", [item("k0")], T0)
            for r in range(1, 5):
                before = store.calls
                await store.append("k", [item(f"k{r}u"), item(f"k{r}a", "assistant")], T0)
                assert store.calls - before == 1
            await totals_add_up(store, "k")
        finally:
            await store.close()

    asyncio.run(main())


class CountingCounter:
    """A token counter that remembers every text it counted."""

    name = "counting"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


def test_a_resent_history_counts_only_its_new_messages(pg_url: str) -> None:
    """A framework re-sending the whole history (ids stored, one new message) has only
    the new one counted, whichever process it reaches."""

    async def main() -> None:
        here, there = await stores(pg_url, 2)
        history = [Message(role="user" if n % 2 == 0 else "assistant",
                           content=f"message number {n}", id=f"h{n}") for n in range(30)]
        try:
            for n in range(1, len(history) + 1):
                counter = CountingCounter()
                batch = [PreparedMessage(m, counter=counter) for m in history[:n]]
                result = await (here if n % 3 else there).append("h", batch, T0)
                assert result.seqs == tuple(range(1, n + 1))
                assert result.duplicates == n - 1
                if n > 8:  # a small batch may be counted before its ids are looked up
                    assert counter.texts == [f"message number {n - 1}"]
            await totals_add_up(here, "h")
        finally:
            await here.close()
            await there.close()

    asyncio.run(main())
