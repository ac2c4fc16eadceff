"""The fold check with masking makes no stand-in for a message every fold would take: the
policy fires and plans exactly as with every stand-in made, while the stand-ins of the
oldest masked results (shown tokens after them over the policy's limit) are never made."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold import Message, ToolCall, view_cache
from contextfold.masking import Masking
from contextfold.messages import StoredMessage
from contextfold.policy import SessionStats, TokenBudget
from contextfold.tokens import REPLY_PRIMING_TOKENS, count_message, get_counter
from contextfold.view_cache import ViewCache

from .test_agent_view import agent_transcripts

COUNTER = get_counter("o200k")
NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)


def stored(messages: list[Message]) -> list[StoredMessage]:
    return [StoredMessage(1 + i, m, count_message(COUNTER, m)) for i, m in enumerate(messages)]


def stats_of(live: list[StoredMessage], summary_tokens: int, **more: Any) -> SessionStats:
    return SessionStats(session_id="s", last_seq=live[-1].seq, through_seq=live[0].seq - 1,
                        live_tokens=sum(m.tokens for m in live), live_count=len(live),
                        summary_tokens=summary_tokens, summary_version=int(summary_tokens > 0),
                        **more)


def limit_of(policy: TokenBudget, stats: SessionStats) -> int:
    """What the engine passes: the live tokens above which ``policy`` fires."""
    return policy.max_tokens - (stats.context_tokens - stats.live_tokens)


def check_and_plan(masking: Masking, live: list[StoredMessage], policy: TokenBudget,
                   stats: SessionStats, lazy: bool) -> tuple[bool, object, ViewCache]:
    cache = ViewCache(COUNTER, masking)
    cache.build("s", live, summary_text=None)  # the view as context() left it
    limit = limit_of(policy, stats) if lazy else None
    fired = policy.triggered(cache.masked_stats("s", stats, limit), NOW)
    plan_stats, plan_live = cache.masked_plan_input("s", stats, live, limit)
    assert plan_stats.live_tokens == sum(m.tokens for m in plan_live)
    assert policy.triggered(plan_stats, NOW) == fired
    plan = policy.plan(plan_stats, plan_live, NOW)
    plan = cache.keep_newest_result("s", plan)
    return fired, plan, cache


def cut_of(plan: Any) -> object:
    return None if plan is None else (plan.lo, plan.hi, plan.action, plan.at_rest)


@settings(max_examples=80, deadline=None)
@given(
    msgs=agent_transcripts(),
    budget=st.sampled_from([300, 600, 1200, 4000]),
    keep=st.sampled_from([0, 1, 3]),
    keep_args=st.booleans(),
    summary=st.sampled_from([0, 40]),
    cut=st.integers(1, 40),
)
def test_the_fold_check_fires_and_plans_as_with_every_stand_in_made(
    msgs: list[Message], budget: int, keep: int, keep_args: bool, summary: int, cut: int
) -> None:
    masking = Masking(keep=keep, keep_call_args=keep_args)
    live = stored(msgs[: max(1, len(msgs) - cut)] if cut < len(msgs) else msgs)
    policy = TokenBudget(budget)
    stats = stats_of(live, summary)
    lazy = check_and_plan(masking, live, policy, stats, True)
    full = check_and_plan(masking, live, policy, stats, False)
    assert lazy[0] == full[0]
    assert cut_of(lazy[1]) == cut_of(full[1])  # (its reason's context figure may be larger)
    # the stand-ins made are the ones a full check makes (never a different one)
    made, every = lazy[2]._get("s")[1]._forms, full[2]._get("s")[1]._forms  # type: ignore[index]
    assert all(every[seq][1:] == form[1:] for seq, form in made.items())


def test_no_stand_in_is_made_for_results_any_fold_takes() -> None:
    out = [Message(role="user", content="find the failing build")]
    for i in range(12):
        out.append(Message(role="assistant", tool_calls=(ToolCall(f"c{i}", "read", "{}"),)))
        rows = [{"id": f"R-{i}-{k}", "status": "ok", "amount": k} for k in range(40)]
        out.append(Message(role="tool", tool_call_id=f"c{i}", content=json.dumps(rows)))
    live = stored(out)
    policy = TokenBudget(3200)
    stats = stats_of(live, 0)
    fired, plan, cache = check_and_plan(Masking(), live, policy, stats, True)
    assert fired and plan is not None
    view = cache._get("s")[1]  # type: ignore[index]
    made = {seq for seq, (src, shown, _) in view._forms.items() if shown is not src}
    # shown sizes as a full check sees them: a stand-in was made only if the messages
    # shown after it cost at most the limit
    _, full_live = check_and_plan(Masking(), live, policy, stats, False)[2].masked_plan_input(
        "s", stats, live)
    after = {m.seq: sum(x.tokens for x in full_live[i + 1:]) for i, m in enumerate(full_live)}
    limit = limit_of(policy, stats)
    assert made and all(after[seq] <= limit for seq in made)
    assert any(after[m.seq] > limit for m in live if m.role == "tool")  # some were skipped
    folded = set(range(plan.lo, plan.hi + 1))
    assert {m.seq for m in live if m.role == "tool" and after[m.seq] > limit} <= folded
    # without the limit (other policies) the plan is the same, every stand-in made
    assert cut_of(check_and_plan(Masking(), live, policy, stats, False)[1]) == cut_of(plan)
    assert limit == 3200 - REPLY_PRIMING_TOKENS


class _Delegating:
    """``TokenBudget`` behind another type: the engine then makes every stand-in."""

    def __init__(self, policy: TokenBudget) -> None:
        self.policy = policy
        self.max_tokens = policy.max_tokens
        self.summary_max_tokens = policy.summary_max_tokens

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        return self.policy.triggered(stats, now)

    def plan(self, stats: SessionStats, live: Any, now: datetime) -> Any:
        return self.policy.plan(stats, live, now)


def test_an_agent_session_folds_and_shows_the_same_as_with_every_stand_in_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from contextfold import Memory
    from contextfold.stores import MemoryStore

    # when the newest result goes stale is measured in the token policy's live limit, and
    # for other policies in what the plan folds: not what this test compares
    monkeypatch.setattr(view_cache, "STALE_RESULT_FACTOR", 10**9)

    from .test_agent_view import agent_run

    def run(policy: Any) -> list[object]:
        seen: list[object] = []
        with Memory(MemoryStore(), policy=policy, masking=Masking(keep=2), tokenizer=COUNTER,
                    system="You are an agent.") as memory:
            for msg in agent_run(40):
                memory.add("s", msg)
                ctx = memory.context("s")
                seen.append((ctx.to_openai(), ctx.tokens, ctx.omitted, ctx.masked))
            seen.append([(e.lo, e.hi, e.outcome) for e in memory.ledger("s", limit=None)])
        return seen

    for budget in (600, 1500):
        assert run(TokenBudget(budget)) == run(_Delegating(TokenBudget(budget)))


@pytest.mark.parametrize("limit", [20, 1000])
def test_the_newest_result_stays_out_of_folds_until_the_chat_after_it_outgrows_the_limit(
    limit: int,
) -> None:
    from contextfold.policy import FoldPlan

    call = ToolCall("c1", "get_order", json.dumps({"id": "ORD-1"}))
    head = [Message(role="user", content="Look up ORD-1."),
            Message(role="assistant", tool_calls=(call,)),
            Message(role="tool", tool_call_id="c1", content="status: shipped " * 50)]
    chat = [Message(role="user" if i % 2 == 0 else "assistant", content=f"chat turn {i} " * 8)
            for i in range(90)]
    released = set()
    for n in range(1, 90):
        live = stored(head + chat[:n])
        cache = ViewCache(COUNTER, Masking())
        cache.build("s", live, summary_text=None)
        after = sum(m.tokens for m in live[3:])
        users = sum(1 for m in live[3:] if m.message.role == "user")
        plan = FoldPlan(1, live[-1].seq, "test")
        kept = cache.keep_newest_result("s", plan, limit)
        if after > view_cache.STALE_RESULT_FACTOR * limit:
            released.add("tokens")
            assert kept == plan  # the chat has moved on: the result folds like the rest
        elif after > limit and users >= view_cache.STALE_USER_TURNS:
            released.add("turns")
            assert kept == plan
        else:  # cut back to before the call (seq 2); a plan that starts there is dropped
            assert kept is not None and (kept.lo, kept.hi) == (1, 1)
            assert cache.keep_newest_result("s", FoldPlan(2, live[-1].seq, "t"), limit) is None
    assert released == ({"tokens"} if limit == 20 else {"turns"})
