"""Property: any sequence of adds, folds and queries keeps every context with recall within
its budget, its tool calls and results together, its recalled seqs folded, and — the
block taken out — exactly the context without recall. On all three stores."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from contextfold import Memory, Message
from contextfold.context import Context
from contextfold.errors import ConfigError
from contextfold.policy import TokenBudget
from contextfold.recall import RECALL_HEADER, Recall
from contextfold.stores import open_store
from contextfold.stores.base import Store
from contextfold.tokens import REPLY_PRIMING_TOKENS, count_message, get_counter
from tests.conftest import store_url_of
from tests.strategies import transcripts

QUERY_WORDS = ["alpha", "Bob", "Paris", "plan", "error", "tool", "lookup", "did", "when",
               "42", "May", "Привет", "nothing"]
queries = st.one_of(
    st.none(),
    st.lists(st.sampled_from(QUERY_WORDS), min_size=1, max_size=5).map(" ".join),
)
ops = st.lists(
    st.tuples(st.sampled_from(["add", "fold", "query"]), queries,
              st.integers(min_value=120, max_value=700)),
    min_size=1, max_size=8,
)


@pytest.fixture(scope="module", params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> str:
    return store_url_of(request.param, request, tmp_path_factory)


def unsplit(messages: Sequence[Message]) -> bool:
    """Every tool result right after its call's assistant message (or another result of
    the same batch), and nothing else inside a batch."""
    open_ids: set[str] = set()
    for m in messages:
        if m.role == "tool":
            if m.tool_call_id not in open_ids:
                return False
            open_ids.discard(m.tool_call_id)
            continue
        if open_ids:
            return False  # something came between a call and its results
        open_ids = {c.id for c in m.tool_calls}
    return True


def check(ctx: Context, plain: Context, budget: int, through: int, room: int) -> None:
    counter = get_counter(None)
    assert ctx.tokens <= budget
    assert ctx.tokens == REPLY_PRIMING_TOKENS + sum(count_message(counter, m)
                                                    for m in ctx.messages)
    assert unsplit(ctx.messages)
    blocks = [m for m in ctx.messages if m.text.startswith(RECALL_HEADER)]
    assert len(blocks) == (1 if ctx.recalled else 0)
    assert all(count_message(counter, b) <= room for b in blocks)  # within its share
    assert all(seq <= through for seq in ctx.recalled)
    assert tuple(m for m in ctx.messages if m not in blocks) == plain.messages


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(transcript=transcripts(max_turns=24), steps=ops,
       frame=st.tuples(st.integers(0, 5), st.integers(1, 3), st.integers(1, 2)))
def test_contexts_with_recall_stay_in_budget_and_whole(
        store_url: str, transcript: list[Message], steps: list[tuple[str, Any, int]],
        frame: tuple[int, int, int]) -> None:
    sid = f"p-{uuid.uuid4().hex[:12]}"
    store: Store = open_store(store_url)  # one store object shared by both memories
    # min_matched 2: hits of one term fill the room the others leave (the second tier)
    recall = Recall(gate="always", min_coverage=0.0, min_matched=frame[2], framed=frame[0],
                    frame_after=frame[1])
    with Memory(store, policy=TokenBudget(400, keep_last=1), recall=recall,
                fold="manual") as mem, Memory(store, recall=None, fold="manual") as bare:
        chunks = [transcript[i * len(transcript) // len(steps):
                             (i + 1) * len(transcript) // len(steps)]
                  for i in range(len(steps))]
        for (op, query, budget), chunk in zip(steps, chunks, strict=True):
            if chunk:
                mem.add(sid, *chunk)
            if op == "fold":
                mem.fold(sid, force=True)
            stats = mem.stats(sid)
            through = stats.through_seq if stats else 0
            try:
                plain = bare.context(sid, max_tokens=budget)
            except Exception as exc:  # the plain view cannot show the newest group at all
                with pytest.raises(type(exc)):
                    mem.context(sid, max_tokens=budget, query=query)
                continue
            ctx = mem.context(sid, max_tokens=budget, query=query)
            check(ctx, plain, budget, through, recall.room(budget))
            event(f"recalled: {bool(ctx.recalled)}")


@settings(max_examples=200, deadline=None)
@given(budget=st.integers(200, 200_000), share=st.floats(0.05, 0.7),
       target_share=st.floats(0.65, 1.0), cap_share=st.one_of(st.none(), st.floats(0.05, 0.6)))
def test_the_fold_policy_keeps_the_blocks_room_and_the_fold_gap(
    budget: int, share: float, target_share: float, cap_share: float | None
) -> None:
    """With recall the policy folds within ``1 - share`` of the budget, below its
    trigger by as many tokens as without recall (down to just above the summary cap)."""
    cap = None if cap_share is None else int(budget * cap_share)
    target = int(budget * target_share)
    if (cap is not None and cap >= target) or target < 1:
        return
    try:
        policy = TokenBudget(budget, target=target, summary_max_tokens=cap)
    except ConfigError:
        return  # (the default cap above this target)
    folded = Recall(share=share).fold_policy(policy)
    assert isinstance(folded, TokenBudget)
    assert folded.target is not None and folded.summary_max_tokens is not None
    assert folded.max_tokens == max(16, int(budget * (1 - share)))
    assert folded.max_tokens + Recall(share=share).room(budget) <= budget
    assert folded.summary_max_tokens < folded.target <= folded.max_tokens
    gap = budget - policy.target if policy.target is not None else 0
    assert folded.max_tokens - folded.target == min(
        gap, folded.max_tokens - folded.summary_max_tokens - 1)
