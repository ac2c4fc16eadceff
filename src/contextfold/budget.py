"""The budget as a hard fold trigger, for every policy.

Whatever the policy says, a context view that has to leave live messages out to fit its
budget makes a fold due: trimming is a moment's state (a fold pending or failed), never a
steady one. Pure code, like :mod:`contextfold.policy`; the engine asks it beside the
policy (``AsyncMemory(max_tokens=…)``, by default the policy's own budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from .errors import ConfigError
from .messages import StoredMessage
from .policy import FoldPlan, MessageCount, Policy, SessionStats, TokenBudget
from .tokens import MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS

__all__ = ["budget_plan", "check_budget", "over_budget", "policy_keep_last"]



def over_budget(stats: SessionStats, max_tokens: int, bridge_tokens: int = 0) -> bool:
    """True when a view of the whole session cannot fit ``max_tokens``: it would have to
    leave live messages out, so a fold is due whatever the policy says. ``bridge_tokens``
    (the one-line user turn a view opening on an assistant turn gets) is counted always:
    folding a turn early is harmless, a view trimmed in steady state is not."""
    return stats.context_tokens + bridge_tokens > max_tokens


def budget_plan(
    stats: SessionStats,
    live: Sequence[StoredMessage],
    now: datetime,
    max_tokens: int,
    *,
    keep_last: int,
    summary_max_tokens: int,
) -> FoldPlan | None:
    """The fold the budget makes due: the oldest messages until the context, with the new
    summary at ``summary_max_tokens`` (the planned size), is at most 85% of ``max_tokens``
    (as :class:`TokenBudget` plans it), never folding the newest ``keep_last``. None when
    the context fits or nothing may be folded."""
    if max_tokens < 16 or not over_budget(stats, max_tokens):
        return None
    cap = max(8, min(summary_max_tokens, max_tokens * 3 // 5))
    target = max(int(max_tokens * 0.85), cap + 1)
    if target > max_tokens:
        return None
    guard = TokenBudget(max_tokens, target=target, keep_last=keep_last, summary_max_tokens=cap)
    plan = guard.plan(stats, live, now)
    if plan is None:
        return None
    return replace(plan, reason=f"context {stats.context_tokens} > budget {max_tokens}")


def check_budget(policy: Policy, max_tokens: int | None) -> None:
    """Reject a policy whose own trigger can never fire before a context of ``max_tokens``
    has to leave live messages out: a ``MessageCount`` whose ``min_tokens`` is at least the
    budget less the smallest newest ``keep_last`` messages (every message costs at least
    its framing). The budget would do all the folding and the setting would only mislead.
    Combinators are checked member by member."""
    if max_tokens is None:
        return
    members = getattr(policy, "policies", None)
    if isinstance(members, tuple):
        for member in members:
            check_budget(member, max_tokens)
        return
    if isinstance(policy, MessageCount) and policy.min_tokens is not None:
        least = policy.min_tokens + 1 + policy.keep_last * MESSAGE_OVERHEAD_TOKENS
        least += REPLY_PRIMING_TOKENS
        if least > max_tokens:
            raise ConfigError(
                f"min_tokens ({policy.min_tokens}) can never be exceeded before the context "
                f"exceeds its budget ({max_tokens}): the oldest messages would only be left "
                f"out of the view. Set min_tokens below "
                f"{max_tokens - REPLY_PRIMING_TOKENS - policy.keep_last * MESSAGE_OVERHEAD_TOKENS}"
                f" or raise the budget"
            )


def policy_keep_last(policy: Policy) -> int:
    """The newest messages ``policy`` always keeps verbatim (a combinator: the most any
    member keeps), which a budget fold keeps too."""
    members = getattr(policy, "policies", None)
    if isinstance(members, tuple):
        return max((policy_keep_last(m) for m in members), default=0)
    keep = getattr(policy, "keep_last", 0)
    return keep if isinstance(keep, int) and not isinstance(keep, bool) else 0
