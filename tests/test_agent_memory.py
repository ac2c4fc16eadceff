"""Agent memory through the front doors, on every store: a huge tool result or batch never
makes ``context()`` raise, masking stand-ins stay byte-identical from turn to turn, the
newest tool result is always visible, and folding waits until masking is not enough."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from contextfold import (
    AsyncMemory,
    Idle,
    Masking,
    Memory,
    Message,
    MessageCount,
    TokenBudget,
    ToolCall,
)
from contextfold.masking import STAND_IN_PREFIX
from contextfold.settings import AgentSettings
from contextfold.stores.base import Store
from contextfold.testing import FakeClock
from contextfold.testing.provider_rules import check_provider_rules
from contextfold.view_cache import STALE_USER_TURNS

from .test_fronts import KINDS, make_store


def agent_turns(rounds: int, big_every: int = 0) -> list[list[Message]]:
    """An agent run: each round one call (or a parallel pair) and its result(s)."""
    steps: list[list[Message]] = [[Message(role="user", content="Fix CI on branch fix-42.")]]
    for i in range(rounds):
        calls = [ToolCall(f"c{i}a", "run_tests", json.dumps({"target": f"suite_{i}"}))]
        if i % 4 == 3:
            calls.append(ToolCall(f"c{i}b", "read_file", json.dumps({"path": f"mod_{i}.py"})))
        size = 2500 if big_every and i % big_every == big_every - 1 else 15
        step = [Message(role="assistant", tool_calls=tuple(calls))]
        for c in calls:
            body = "\n".join(f"{c.name} {i} line {k}: ok" for k in range(size))
            step.append(Message(role="tool", tool_call_id=c.id,
                                content=f"build B-{1000 + i} status failed\n{body}\nEND-{i}"))
        steps.append(step)
        steps.append([Message(role="assistant", content=f"Round {i} done.")])
    return steps


@pytest.mark.parametrize("kind", KINDS)
def test_agent_run_on_every_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest
                                  ) -> None:
    store: Store = make_store(kind, tmp_path, request)
    stand_ins: dict[str, str] = {}
    with Memory(store, policy=TokenBudget(1500), masking=Masking(keep=2)) as memory:
        sid = f"agent-{uuid.uuid4().hex[:6]}"
        for step in agent_turns(16, big_every=5):
            memory.add(sid, *step)
            ctx = memory.context(sid)
            assert ctx.tokens <= 1500 and check_provider_rules(ctx) == []
            tools = [m for m in ctx.messages if m.role == "tool"]
            newest = [m for m in step if m.role == "tool"]
            if newest:  # the newest results are visible (cut, maybe, but there)
                assert {m.tool_call_id for m in newest} <= {m.tool_call_id for m in tools}
            for m in tools:
                if m.text.startswith(STAND_IN_PREFIX):
                    assert m.tool_call_id is not None
                    assert stand_ins.setdefault(m.tool_call_id, m.text) == m.text
        assert stand_ins
        assert len(memory.messages(sid)) == sum(len(s) for s in agent_turns(16, big_every=5))


def test_async_front_never_raises_for_a_batch_over_budget() -> None:
    async def main() -> None:
        async with AsyncMemory("memory://", policy=TokenBudget(600), masking=True) as memory:
            calls = tuple(ToolCall(f"c{i}", "search", json.dumps({"q": f"topic {i}"}))
                          for i in range(3))
            await memory.add("s", {"role": "user", "content": "search three topics"})
            await memory.add("s", Message(role="assistant", tool_calls=calls))
            for i in range(3):
                await memory.add("s", Message(role="tool", tool_call_id=f"c{i}",
                                              content=f"result {i}: " + "text " * 3000))
                ctx = await memory.context("s")
                assert ctx.tokens <= 600 and check_provider_rules(ctx) == []
            assert ctx.elided and len([m for m in ctx.messages if m.role == "tool"]) == 3

    asyncio.run(main())


def test_folding_waits_until_masking_is_not_enough() -> None:
    def folds(masking: Masking | None) -> int:
        with Memory("memory://", policy=TokenBudget(2000), masking=masking) as memory:
            for step in agent_turns(30):
                memory.add("s", *step)
                memory.context("s")
            return memory.usage("s").folds

    plain, masked = folds(None), folds(Masking(keep=2))
    assert masked < plain and plain > 0


def test_agent_settings_turn_masking_on() -> None:
    options = AgentSettings().options()
    assert options["masking"] == Masking(keep=3)
    assert AgentSettings.from_mapping({"keep_tool_results": None}).options()["masking"] is None


def test_an_idle_fold_takes_the_newest_tool_result_too_and_the_session_clears() -> None:
    """Masking keeps the newest tool result live while the agent loop runs; once the
    session is idle the loop is over: the idle fold takes everything, then it clears."""
    clock = FakeClock()
    policy = Idle(fold_after=60, clear_after=60)
    with Memory("memory://", policy=policy, masking=Masking(keep=1), clock=clock.now) as memory:
        for step in agent_turns(3):
            memory.add("s", *step)
        memory.add("s", *agent_turns(4)[-2])  # the run ends on tool results
        clock.advance(61)
        assert memory.fold("s").status == "committed"
        assert memory.context("s").live_count == 0
        clock.advance(61)
        assert memory.fold("s").status == "cleared"
        assert memory.stats("s") is None


def chat_after_one_call(turns: int) -> list[Message]:
    """One tool call early on, then a long chat with no tool at all."""
    msgs = [Message(role="user", content="Look up order ORD-123."),
            Message(role="assistant", tool_calls=(
                ToolCall("c1", "get_order", json.dumps({"id": "ORD-123"})),)),
            Message(role="tool", tool_call_id="c1",
                    content=json.dumps({"id": "ORD-123", "status": "shipped",
                                        "log": "scan ok " * 300}))]
    for i in range(turns):
        msgs.append(Message(role="user", content=f"Question {i}: tell me about topic T-{i}, "
                                                 "its history and a detail worth keeping."))
        msgs.append(Message(role="assistant", content=f"Answer {i}: T-{i} has a long history "
                                                      "with many details worth mentioning."))
    return msgs


@pytest.mark.parametrize("policy", [TokenBudget(600), MessageCount(12, fold=8)],
                         ids=["token_budget", "message_count"])
def test_a_tool_result_long_ago_does_not_stop_folding(policy: TokenBudget | MessageCount
                                                     ) -> None:
    """The newest tool result stays out of folds while the agent works; once the chat after
    it has moved on (16 user turns and more than the live limit), folds take it too —
    kept forever it would stop every fold and the turns after it would pile up live, left
    out of the view and never summarized."""
    msgs = chat_after_one_call(250)
    bound = 3 * 600  # the result (~900 tokens) and under 16 user turns of chat after it
    with Memory("memory://", policy=policy, masking=Masking()) as memory:
        visible_early = True
        for i, m in enumerate(msgs):
            memory.add("s", m)
            ctx = memory.context("s", max_tokens=600)
            assert ctx.tokens <= 600 and check_provider_rules(ctx) == []
            if 2 <= i <= 6:  # right after the call: the result is visible
                visible_early &= any(x.role == "tool" for x in ctx.messages)
            assert ctx.omitted <= 2 * STALE_USER_TURNS  # a gap of a few turns at most
            stats = memory.stats("s")
            assert stats is not None and stats.live_tokens <= bound, (
                f"folding stopped: {stats.live_tokens} live tokens at message {i}")
        assert visible_early
        assert memory.usage("s").folds > 3
        summary = memory.summary("s")
        assert summary is not None and "T-1" in summary.text
        assert len(memory.messages("s")) == len(msgs)  # every message is still stored
