"""The budget is a hard fold trigger for every policy: a view that has to leave live
messages out makes a fold due, so trimming is never a steady state; and the HTTP guide's
``message_count`` recipe folds an ordinary chat."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold import (
    ConfigError,
    FixedCells,
    Idle,
    Memory,
    MessageCount,
    Policy,
    ReportedUsage,
    TokenBudget,
    any_of,
)
from contextfold.messages import Message, StoredMessage
from contextfold.policy import SessionStats
from contextfold.server.session_settings import SessionSettings
from contextfold.testing import check_invariant

NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)

#: docs/http-service.md, "The macOS assistant flow", word for word.
GUIDE_RECIPE = {"policy": "message_count", "max_messages": 30, "fold_messages": 20,
                "min_tokens": 15000, "keep_last": 10, "budget": 16000,
                "preset": "conversation"}

_PHRASE = ("we talked about the trip to Lisbon and the budget for the flat the dentist moved "
           "to Friday and Ana asked about the concert tickets for next month")
WORDS = tuple(_PHRASE.split())


def _text(rnd: random.Random, words: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(words)) + "."


def test_the_guides_recipe_folds_an_ordinary_chat_and_never_trims() -> None:
    """80 messages of ~300 tokens (~25,000 tokens) under the guide's recipe: folds happen,
    and no view after any add leaves a live message out."""
    options = SessionSettings.model_validate(GUIDE_RECIPE).memory_options(None)
    rnd = random.Random(25)
    with Memory("memory://", **options) as memory:
        folds = 0
        for i in range(80):
            added = memory.add("conv-42", {"role": "user" if i % 2 == 0 else "assistant",
                                           "content": _text(rnd, 305)})
            if added.fold is not None and added.fold.status == "committed":
                folds += 1
            ctx = memory.context("conv-42")
            assert ctx.omitted == 0, (i, ctx.omitted, ctx.tokens)
            assert ctx.tokens <= 16000
        stored_tokens = sum(m.tokens for m in memory.messages("conv-42"))
        asyncio.run(check_invariant(memory.store, "conv-42"))
    assert 24_000 < stored_tokens < 26_000  # the chat really is bigger than the budget
    assert folds >= 2


def test_message_count_candidates_are_all_but_keep_last() -> None:
    """min_tokens is compared with every live message but the newest keep_last, not with
    the ``fold`` messages a fold takes."""
    policy = MessageCount(30, fold=20, keep_last=10, min_tokens=15000)
    live = [StoredMessage(i, Message(role="user" if i % 2 else "assistant", content="x"), 500)
            for i in range(1, 42)]
    stats = SessionStats("s", last_seq=41, live_count=41, live_tokens=41 * 500)
    # the oldest 20 hold 10,000 tokens; all but the newest 10 hold 15,500
    plan = policy.plan(stats, live, NOW)
    assert plan is not None and (plan.lo, plan.hi) == (1, 20)
    assert policy.plan(stats, live[:40], NOW) is None  # 30 candidates: 15,000, not more


def test_a_min_tokens_that_can_never_fire_within_the_budget_is_rejected() -> None:
    policy = MessageCount(30, fold=20, keep_last=10, min_tokens=16000)
    with pytest.raises(ConfigError, match=r"min_tokens \(16000\) can never be exceeded"):
        Memory("memory://", policy=policy, max_tokens=16000)
    with pytest.raises(ConfigError, match="min_tokens"):
        settings_ = SessionSettings.model_validate({**GUIDE_RECIPE, "min_tokens": 20000})
        Memory("memory://", **settings_.memory_options(None))
    # below the budget by more than the framing of keep_last messages: accepted
    Memory("memory://", policy=MessageCount(30, keep_last=10, min_tokens=15900),
           max_tokens=16000).close()


def test_a_summary_cap_over_the_budget_is_rejected() -> None:
    with pytest.raises(ConfigError, match="summary_max_tokens"):
        Memory("memory://", policy=FixedCells(4), max_tokens=500, summary_max_tokens=600)


def _policies(budget: int) -> st.SearchStrategy[Policy]:
    keep = st.integers(0, 3)
    return st.one_of(
        st.builds(lambda k: TokenBudget(budget, keep_last=k), keep),
        st.builds(lambda n, f, k, mt: MessageCount(max(n, k), fold=f, keep_last=k,
                                                   min_tokens=mt),
                  st.integers(1, 40), st.none() | st.integers(1, 20), keep,
                  st.none() | st.integers(0, budget // 2)),
        st.builds(FixedCells, st.integers(0, 40)),
        st.builds(ReportedUsage, st.integers(1, 100_000)),
        st.just(Idle(3600)),
        st.builds(lambda n, k, lim: any_of(MessageCount(max(n, k), keep_last=k),
                                           ReportedUsage(lim)),
                  st.integers(1, 40), keep, st.integers(1, 100_000)),
    )


@st.composite
def _cases(draw: st.DrawFn) -> tuple[int, Policy, list[int]]:
    budget = draw(st.integers(300, 2000))
    policy = draw(_policies(budget))
    sizes = draw(st.lists(st.integers(budget // 40, budget // 12), min_size=10, max_size=40))
    return budget, policy, sizes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases(), seed=st.integers(0, 1000))
def test_under_any_policy_a_steady_view_never_leaves_live_messages_out(
    case: tuple[int, Policy, list[int]], seed: int
) -> None:
    budget, policy, sizes = case
    rnd = random.Random(seed)
    with Memory("memory://", policy=policy, max_tokens=budget) as memory:
        for i, words in enumerate(sizes):
            added = memory.add("s", {"role": "user" if i % 2 == 0 else "assistant",
                                     "content": _text(rnd, words)})
            asyncio.run(check_invariant(memory.store, "s"))
            if added.fold is not None and added.fold.status == "failed":
                continue  # a failed fold: the view trims for a moment, and says so
            ctx = memory.context("s")
            assert ctx.tokens <= budget
            assert ctx.omitted == 0, (i, policy, ctx.omitted, ctx.tokens, budget)


def test_a_policy_fold_whose_summary_outgrows_what_it_folded_folds_again_within_budget() -> None:
    """``FixedCells`` folds one short message into a summary longer than it was, which
    leaves the whole context over the budget: the same fold call folds again, as the
    budget plans it, so the next view leaves nothing out (found by the property above)."""
    sizes = [38, 23, 31, 16, 30, 36, 27, 16, 21, 20, 16, 38, 31, 24]
    rnd = random.Random(908)
    with Memory("memory://", policy=FixedCells(13), max_tokens=478) as memory:
        outcome = None
        for i, words in enumerate(sizes):
            outcome = memory.add("s", {"role": "user" if i % 2 == 0 else "assistant",
                                       "content": _text(rnd, words)}).fold
        assert outcome is not None and outcome.status == "committed"
        assert outcome.reason.endswith("then the budget")  # one fold was not enough
        assert outcome.messages_folded > 1
        assert [e.outcome for e in memory.ledger("s")] == ["committed", "committed"]
        ctx = memory.context("s")
        assert ctx.omitted == 0 and ctx.tokens <= 478
        asyncio.run(check_invariant(memory.store, "s"))
