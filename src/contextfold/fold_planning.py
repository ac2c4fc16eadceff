"""Whether a session is folded now, and which span: the engine's checks before a fold.

Three things can make a fold due — the policy firing, the budget as a hard trigger (the
whole context would not fit ``max_tokens``: :mod:`contextfold.budget`), and, with
masking, either of them at the size the live messages are *shown* — and the stats they
are asked with are the store's, with what the engine adds: the fixed tokens (system
prompt, tools), the summary at the size the context shows it (a restored summary), the
expected size of the next summary. :func:`wants_fold` is the cheap check of every append
(O(1) without masking); :func:`plan_fold` reads the session and names the span.

Functions of the engine (:class:`~contextfold.engine.AsyncMemory`), like
:mod:`contextfold.folding`, which then runs the fold this plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from .budget import budget_plan, over_budget
from .context import bridge_turn_tokens
from .messages import StoredMessage
from .policy import FoldPlan, SessionStats, TokenBudget, evolve, safe_cuts
from .stores.base import Snapshot, Store

if TYPE_CHECKING:  # pragma: no cover
    from .engine import AsyncMemory

__all__ = [
    "due_at",
    "expected_summary_tokens",
    "over_budget_shown",
    "plan_fold",
    "wants_fold",
    "with_reserved",
]


def with_reserved(memory: AsyncMemory, stats: SessionStats) -> SessionStats:
    """``stats`` as the policy is asked with them: the memory's fixed tokens reserved, the
    summary at the size the context shows it."""
    if memory._restorer is not None:  # the summary at the size the context shows it
        stats = memory._restorer.adjust(stats)
    if stats.reserved_tokens == memory._reserved:
        return stats
    return evolve(stats, reserved_tokens=memory._reserved)


def expected_summary_tokens(memory: AsyncMemory, stats: SessionStats) -> int | None:
    """What the next fold's summary is expected to cost in the context, for the
    policy's plan (it bounds this by its cap): None for a summarizer that fills its
    cap (``fills_cap``, the extractive one) or before anything is known; else the
    larger of this session's current summary and the recent summaries this memory
    committed — a rolling summary rarely shrinks, and a bigger one than planned only
    makes the view trim and the next fold come sooner."""
    if getattr(memory.summarizer, "fills_cap", False) is True:
        return None
    known = [stats.summary_tokens] if stats.summary_version else []
    known.extend(memory._recent_summaries)
    return max(known) if known else None


def wants_fold(memory: AsyncMemory, stats: SessionStats, now: datetime | None = None) -> bool:
    """True when the policy or the budget makes a fold of this session due now."""
    stats, now = with_reserved(memory, stats), memory.clock() if now is None else now
    policy = memory.policy
    if not policy.triggered(stats, now) and not _over_budget(memory, stats):
        return False  # masked sizes are never larger: no stand-in needs making to know
    if memory.masking is None:
        return True
    # with masking, the policy sees the live messages at the size they are shown
    shown = memory._views.masked_stats(stats.session_id, stats, _live_limit(memory, stats))
    return policy.triggered(shown, now) or _over_budget(memory, shown)


def over_budget_shown(memory: AsyncMemory, stats: SessionStats) -> bool:
    """True when the whole context would not fit the budget, with masking at the size the
    live messages are shown (the budget's half of :func:`wants_fold`)."""
    stats = with_reserved(memory, stats)
    if not _over_budget(memory, stats):
        return False
    if memory.masking is None:
        return True
    shown = memory._views.masked_stats(stats.session_id, stats, _live_limit(memory, stats))
    return _over_budget(memory, shown)


def due_at(memory: AsyncMemory, stats: SessionStats) -> datetime | None:
    """When the policy next wants to fold this session: now if it fires, else its
    ``due_at(stats)`` (idle timeouts) if it has one, else None. Pure without masking
    (the append's :data:`~.stores.base.DueCheck`, run in the store's transaction)."""
    if wants_fold(memory, stats):
        return memory.clock()
    policy_due_at = getattr(memory.policy, "due_at", None)
    return policy_due_at(with_reserved(memory, stats)) if callable(policy_due_at) else None


async def plan_fold(
    memory: AsyncMemory, store: Store, sid: str, force: bool, snap: Snapshot | None = None
) -> tuple[Snapshot, FoldPlan] | None:
    """The session as read and the span to fold, or None when nothing is due (``force``:
    every live message but the policy's newest ``keep_last``, up to a safe cut)."""
    if snap is None:  # fold_many passes the snapshot it read for the whole wave
        snap = await store.snapshot(sid)
    if snap is None:
        return None
    stats = evolve(
        snap.stats,
        reserved_tokens=memory._reserved,
        expected_summary_tokens=expected_summary_tokens(memory, snap.stats),
        # what the summarizer re-reads: the summary text, not the block framing it
        summary_reread_tokens=max(0, snap.stats.summary_tokens - memory._summary_overhead)
        if snap.stats.summary_version
        else 0,
    )
    if memory._restorer is not None:  # the summary at the size the context shows it
        stats = memory._restorer.adjust(stats)
    live: Sequence[StoredMessage] = snap.live
    limit = _live_limit(memory, stats)  # independent of live_tokens: masking leaves it as is
    if not force:  # with masking: fold only when masking is not enough
        stats, live = memory._views.masked_plan_input(sid, stats, live, limit)
    now = memory.clock()
    fired = force or memory.policy.triggered(stats, now)
    if not fired and not _over_budget(memory, stats):
        return None
    plan: FoldPlan | None
    if force:  # everything but the policy's newest keep_last, up to a safe cut
        keep = memory._keep_last
        cut = max(c for c in safe_cuts(live) if c <= max(0, len(live) - keep))
        reason = f"forced (the newest {keep} kept)" if keep else "forced"
        plan = FoldPlan(live[0].seq, live[cut - 1].seq, reason) if cut else None
    else:
        plan = memory.policy.plan(stats, live, now) if fired else None
        over = _budget_plan(memory, stats, live, now)
        if over is not None and (plan is None or over.hi > plan.hi):
            plan = over if plan is None or plan.action == "fold" else plan
        # masking on: the newest result stays, until the conversation has moved on
        plan = memory._views.keep_newest_result(sid, plan, limit)
    return (snap, plan) if plan is not None else None


def _over_budget(memory: AsyncMemory, stats: SessionStats) -> bool:
    """The budget as a hard trigger: the whole context (a bridge turn counted) would
    not fit ``max_tokens``, so a view would have to leave live messages out."""
    budget = memory.max_tokens
    return budget is not None and over_budget(stats, budget, bridge_turn_tokens(memory.counter))


def _budget_plan(
    memory: AsyncMemory, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
) -> FoldPlan | None:
    """The fold the budget makes due (None: within it)."""
    if memory.max_tokens is None:
        return None
    bridged = evolve(stats, reserved_tokens=stats.reserved_tokens
                     + bridge_turn_tokens(memory.counter))
    return budget_plan(bridged, live, now, memory.max_tokens, keep_last=memory._keep_last,
                       summary_max_tokens=memory.summary_max_tokens)


def _live_limit(memory: AsyncMemory, stats: SessionStats) -> int | None:
    """With a ``TokenBudget``: the live tokens above which it fires (the fold check with
    masking makes no stand-in for messages older than that many shown tokens, which any
    fold takes); None for other policies."""
    if not isinstance(memory.policy, TokenBudget):
        return None
    return memory.policy.live_limit(stats)
