"""Property tests of the engine over random transcripts with tool calls.

After every add: every message is live or covered by the summary exactly once; the
context never exceeds the budget (unless one message alone does, and then the view says
so); no tool result is ever separated from its call.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold import AsyncMemory, Context, Message, MessageCount, TokenBudget, ValidationError
from contextfold.policy import safe_cuts
from contextfold.stores import MemoryStore
from contextfold.stores.sqlite import SQLiteStore
from contextfold.testing import ConcatSummarizer, check_invariant
from contextfold.tokens import REPLY_PRIMING_TOKENS

from .strategies import transcripts


def assert_tool_pairs_intact(ctx: Context, pending: tuple[str, ...] = ()) -> None:
    """Every tool result in the view follows the assistant message that called it, and
    every call in the view has all its results in the view (unless still pending)."""
    open_calls: set[str] = set()
    for msg in ctx.messages:
        if msg.role == "tool":
            assert msg.tool_call_id in open_calls, f"orphan tool result {msg.tool_call_id}"
            open_calls.discard(msg.tool_call_id)
        else:
            assert not open_calls, f"calls {open_calls} cut off before a {msg.role} message"
            open_calls.update(c.id for c in msg.tool_calls)
    assert open_calls <= set(pending), (open_calls, pending)


async def _replay(memory: AsyncMemory, messages: list[Message], budget: int) -> None:
    covered_before = 0
    for msg in messages:
        await memory.add("s", msg)
        await check_invariant(memory.store, "s")
        stats = await memory.stats("s")
        assert stats is not None and stats.through_seq >= covered_before
        covered_before = stats.through_seq
        try:
            ctx = await memory.context("s", max_tokens=budget)
        except ValidationError:
            # allowed only when the newest tool-call group alone is over the budget
            live = await memory.store.live("s")
            starts = [c for c in safe_cuts(live) if c < len(live)]
            newest_group = live[starts[-1]:] if starts else live
            assert len(newest_group) > 1
            assert sum(m.tokens for m in newest_group) + REPLY_PRIMING_TOKENS > budget
            continue
        assert ctx.tokens <= budget, (ctx.tokens, budget)
        assert_tool_pairs_intact(ctx, stats.pending_calls)
    everything = await memory.messages("s")
    assert [m.seq for m in everything] == list(range(1, len(messages) + 1))
    assert [m.message.text for m in everything] == [m.text for m in messages]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=transcripts(), budget=st.integers(min_value=150, max_value=900),
       keep_last=st.integers(min_value=0, max_value=4))
def test_token_budget_invariants_memory_store(
    messages: list[Message], budget: int, keep_last: int
) -> None:
    memory = AsyncMemory(MemoryStore(), summarizer=ConcatSummarizer(),
                         policy=TokenBudget(budget, keep_last=keep_last))
    asyncio.run(_replay(memory, messages, budget))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=transcripts(), max_messages=st.integers(min_value=1, max_value=8),
       keep_last=st.integers(min_value=0, max_value=3))
def test_message_count_invariants_sqlite(
    messages: list[Message], max_messages: int, keep_last: int
) -> None:
    path = Path(tempfile.mkdtemp(prefix="cf-prop-")) / "p.db"
    policy = MessageCount(max_messages, keep_last=min(keep_last, max_messages))

    async def main() -> None:
        memory = AsyncMemory(SQLiteStore(path), summarizer=ConcatSummarizer(), policy=policy)
        try:
            await _replay(memory, messages, 100_000)
            live = await memory.store.live("s")
            stats = await memory.stats("s")
            assert stats is not None
            # the policy leaves at most max_messages live, unless a tool group blocks a cut
            if not stats.pending_calls and len(live) > max_messages:
                assert any(m.role == "tool" or m.message.tool_calls for m in live)
        finally:
            await memory.close()

    asyncio.run(main())


@settings(max_examples=40, deadline=None)
@given(messages=transcripts(max_turns=25))
def test_folded_prefix_is_exactly_the_summarized_messages(messages: list[Message]) -> None:
    """The concat double records which seqs each summary covers: together with the live
    messages they are 1..N, each once, in order."""

    async def main() -> None:
        memory = AsyncMemory(MemoryStore(), summarizer=ConcatSummarizer(),
                             policy=MessageCount(3, keep_last=1), summary_max_tokens=100_000)
        for msg in messages:
            await memory.add("s", msg)
        summary = await memory.summary("s")
        covered = [int(tag.split(":")[0]) for tag in summary.text.split()] if summary else []
        live = [m.seq for m in await memory.store.live("s")]
        assert covered + live == list(range(1, len(messages) + 1))

    asyncio.run(main())
