"""Fold policies: pure code that decides *whether* to fold and *which* messages.

A policy answers two questions. :meth:`Policy.triggered` looks only at the session's
running totals (:class:`SessionStats`) and so costs O(1) per turn however long the
session is; only when it says yes does the engine load the live messages and ask
:meth:`Policy.plan` for the exact span. A plan always folds a prefix of the live messages
(the oldest) and always ends at a *safe cut*: never between an assistant message with
tool calls and its results, never over a call whose result has not arrived.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any, Literal, Protocol, runtime_checkable

from .errors import ConfigError
from .messages import StoredMessage, slots_maker
from .tokens import MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS

__all__ = [
    "FixedCells",
    "FoldPlan",
    "Idle",
    "MessageCount",
    "Policy",
    "ReportedUsage",
    "SessionStats",
    "TokenBudget",
    "all_of",
    "any_of",
    "safe_cuts",
]


@dataclass(frozen=True, slots=True)
class SessionStats:
    """Running totals a store keeps per session, so deciding costs O(1).

    ``reserved_tokens`` is what the system prompt and tool schemas cost,
    ``expected_summary_tokens`` what the next fold's summary is expected to cost in the
    context (None: unknown, plan with the cap), and ``summary_reread_tokens`` what a fold
    gives the summarizer of the current summary — its text, without the block that frames
    it in the context (None: ``summary_tokens``); the engine fills them in before asking
    a policy.
    """

    session_id: str
    last_seq: int = 0
    live_count: int = 0
    live_tokens: int = 0
    through_seq: int = 0
    summary_version: int = 0
    summary_tokens: int = 0
    pending_calls: tuple[str, ...] = ()
    last_activity: datetime | None = None
    reported_input_tokens: int | None = None
    reserved_tokens: int = 0
    expected_summary_tokens: int | None = None
    summary_reread_tokens: int | None = None

    @property
    def context_tokens(self) -> int:
        """Tokens of the full context: reserved + summary + every live message + priming."""
        return self.reserved_tokens + self.summary_tokens + self.live_tokens + REPLY_PRIMING_TOKENS


_STATS_INDEX = {f.name: i for i, f in enumerate(fields(SessionStats))}
_stats_values = attrgetter(*_STATS_INDEX)


#: ``SessionStats(*values)`` (every field, in order) at half the constructor's cost: every
#: append makes one (see :func:`~contextfold.messages.slots_maker`).
_make_stats = slots_maker(SessionStats)


def evolve(stats: SessionStats, **changes: Any) -> SessionStats:
    """``dataclasses.replace(stats, **changes)`` at half the cost: stores and the engine
    advance the totals on every append. Unknown field names raise ``TypeError``."""
    values = list(_stats_values(stats))
    for name, value in changes.items():
        index = _STATS_INDEX.get(name)
        if index is None:
            raise TypeError(f"SessionStats has no field {name!r}")
        values[index] = value
    return _make_stats(*values)


def advance(
    stats: SessionStats,
    last_seq: int,
    live_count: int,
    live_tokens: int,
    pending_calls: tuple[str, ...],
    last_activity: datetime | None,
) -> SessionStats:
    """``evolve(stats, last_seq=…, live_count=…, live_tokens=…, pending_calls=…,
    last_activity=…)``, the change every append makes, with every field passed by
    position (a keyword call and its loop cost as much as building the stats)."""
    s = stats
    return _make_stats(
        s.session_id,
        last_seq,
        live_count,
        live_tokens,
        s.through_seq,
        s.summary_version,
        s.summary_tokens,
        pending_calls,
        last_activity,
        s.reported_input_tokens,
        s.reserved_tokens,
        s.expected_summary_tokens,
        s.summary_reread_tokens,
    )


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """What to do: fold live messages ``lo..hi`` (seqs, inclusive), or clear the session.

    ``at_rest`` marks a plan made because the session went idle: the loop that used the
    view is over, so view-keeping adjustments (agent masking keeps the newest tool result
    live) do not apply and everything up to the last safe cut is folded.
    """

    lo: int
    hi: int
    reason: str
    action: Literal["fold", "clear"] = "fold"
    at_rest: bool = False

    @property
    def count(self) -> int:
        return self.hi - self.lo + 1 if self.action == "fold" else 0


@runtime_checkable
class Policy(Protocol):
    """Decides whether to fold (O(1), from stats) and which prefix of live messages."""

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        """True when the session may need a fold; must not look at messages."""
        ...

    def plan(
        self, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
    ) -> FoldPlan | None:
        """The fold to run now, or ``None``. ``live`` is every live message, oldest first."""
        ...


def safe_cuts(live: Sequence[StoredMessage]) -> list[int]:
    """Every ``c`` (0..len) such that folding ``live[:c]`` splits no tool-call group and
    folds no unanswered call: after ``live[:c]`` no call is open."""
    cuts = [0]
    open_calls: set[str] = set()
    for i, item in enumerate(live):
        msg = item.message
        if msg.role == "tool" and msg.tool_call_id is not None:
            open_calls.discard(msg.tool_call_id)
        open_calls.update(c.id for c in msg.tool_calls)
        if not open_calls:
            cuts.append(i + 1)
    return cuts


def _cut_at_most(cuts: Sequence[int], limit: int) -> int:
    best = 0
    for c in cuts:
        if c <= limit:
            best = c
        else:
            break
    return best


def _cut_at_least(cuts: Sequence[int], need: int) -> int | None:
    for c in cuts:
        if c >= need:
            return c
    return None


def _plan_prefix(live: Sequence[StoredMessage], cut: int, reason: str) -> FoldPlan | None:
    if cut <= 0:
        return None
    return FoldPlan(lo=live[0].seq, hi=live[cut - 1].seq, reason=reason)


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class TokenBudget:
    """Fold when the context exceeds ``max_tokens`` (high watermark); fold the oldest
    messages until the context, counting the new summary at its planned size, is at most
    ``target`` (low watermark). The gap between the two keeps folds rare.

    ``summary_max_tokens`` is the cap on the summary (default: 60% of the budget; the
    default ``target`` is 85%, so a fold leaves a quarter of the budget verbatim and the
    next fold comes after 15% more — measured in ``benchmarks/retention.py``, a larger
    summary keeps far more facts than more verbatim turns);
    ``keep_last`` messages always stay verbatim. Where it costs nothing the cut moves
    forward so the kept part starts at a user message.

    The planned summary size is the cap, unless the engine expects a smaller summary
    (``SessionStats.expected_summary_tokens``: an LLM's summaries are usually far below
    the cap, the extractive summarizer fills it). Then the fold keeps more verbatim — the
    budget is used — but still gives the summarizer at least ``min_fold_ratio`` times the
    summary text it re-reads (:meth:`min_fold_input`; messages counted without their
    framing, as the summarizer receives them), so summarizer input ≤ 1.2 × folded by
    default and a fold folds no more than that asks; and it never keeps less verbatim
    than planning with the cap would. A summary larger than planned is safe: the context
    view trims to the budget and the next fold comes sooner.
    """

    max_tokens: int
    target: int | None = None
    keep_last: int = 2
    summary_max_tokens: int | None = None
    min_fold_ratio: float = 5.0

    def __post_init__(self) -> None:
        _check_int("max_tokens", self.max_tokens, 16)
        _check_int("keep_last", self.keep_last, 0)
        if self.target is None:
            object.__setattr__(self, "target", int(self.max_tokens * 0.85))
        _check_int("target", self.target, 1)
        assert self.target is not None
        if self.target > self.max_tokens:
            raise ConfigError(f"target ({self.target}) must be <= max_tokens ({self.max_tokens})")
        if self.summary_max_tokens is None:
            object.__setattr__(self, "summary_max_tokens", max(16, self.max_tokens * 3 // 5))
        _check_int("summary_max_tokens", self.summary_max_tokens, 8)
        assert self.summary_max_tokens is not None
        if self.summary_max_tokens >= self.target:
            raise ConfigError(
                f"summary_max_tokens ({self.summary_max_tokens}) must be below target "
                f"({self.target}), or nothing verbatim fits after a fold"
            )
        ratio = self.min_fold_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not ratio >= 0:
            raise ConfigError(f"min_fold_ratio must be a number >= 0, got {ratio!r}")

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        return stats.context_tokens > self.max_tokens

    def live_limit(self, stats: SessionStats) -> int:
        """The live tokens above which :meth:`triggered` fires (the rest of the context,
        reserved + summary + priming, held as it is)."""
        return self.max_tokens - (stats.context_tokens - stats.live_tokens)

    def planned_summary(self, stats: SessionStats) -> int:
        """The summary size this fold plans with: the expected size, bounded by the cap."""
        assert self.summary_max_tokens is not None
        expected = stats.expected_summary_tokens
        if expected is None:
            return self.summary_max_tokens
        return max(0, min(expected, self.summary_max_tokens))

    def live_allowance(self, stats: SessionStats) -> int:
        """Tokens of live messages the fold may keep verbatim to reach ``target`` with the
        planned summary (before the ``min_fold_ratio`` rule, which :meth:`plan` applies
        message by message); never less than planning with the cap keeps."""
        assert self.target is not None and self.summary_max_tokens is not None
        base = stats.reserved_tokens + REPLY_PRIMING_TOKENS
        with_cap = self.target - base - self.summary_max_tokens
        planned = self.planned_summary(stats)
        if planned >= self.summary_max_tokens:
            return with_cap
        return max(with_cap, self.target - base - planned)

    def min_fold_input(self, stats: SessionStats) -> int:
        """What the folded messages must give the summarizer (their tokens less each
        message's framing) so that re-reading the current summary costs at most
        ``1/min_fold_ratio`` of it: summarizer input ≤ (1 + 1/ratio) × folded."""
        reread = stats.summary_reread_tokens
        if reread is None:
            reread = stats.summary_tokens
        return math.ceil(self.min_fold_ratio * reread)

    def plan(
        self, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
    ) -> FoldPlan | None:
        if not self.triggered(stats, now) or not live:
            return None
        assert self.target is not None and self.summary_max_tokens is not None
        limit = len(live) - self.keep_last
        if limit <= 0:
            return None
        cuts = safe_cuts(live)
        with_cap = self.target - stats.reserved_tokens - REPLY_PRIMING_TOKENS
        with_cap -= self.summary_max_tokens
        allowed_live = self.live_allowance(stats)
        remaining = sum(m.tokens for m in live)
        need = 0
        while need < len(live) and remaining > allowed_live:
            remaining -= live[need].tokens
            need += 1
        if allowed_live > with_cap:
            # a smaller summary than the cap is planned: fold at least enough to amortise
            # re-reading the summary, but never more than planning with the cap would
            want, given = self.min_fold_input(stats), 0
            for m in live[:need]:
                given += max(0, m.tokens - MESSAGE_OVERHEAD_TOKENS)
            while need < len(live) and given < want and remaining > with_cap:
                given += max(0, live[need].tokens - MESSAGE_OVERHEAD_TOKENS)
                remaining -= live[need].tokens
                need += 1
        cut = _cut_at_least(cuts, need)
        if cut is None or cut > limit:
            cut = _cut_at_most(cuts, limit)
        else:
            # fold a little more if that lets the kept part start at a user turn
            for c in cuts:
                if c >= cut and c <= limit and c < len(live) and live[c].role == "user":
                    cut = c
                    break
        reason = f"context {stats.context_tokens} > max_tokens {self.max_tokens}"
        return _plan_prefix(live, cut, reason)


@dataclass(frozen=True)
class MessageCount:
    """Fold when there are more than ``max_messages`` live messages and, if ``min_tokens``
    is set, the candidates hold more than ``min_tokens`` tokens (both strictly greater).
    The candidates are every live message but the newest ``keep_last``; a fold folds the
    oldest ``fold`` of them (default: all of them)."""

    max_messages: int
    fold: int | None = None
    keep_last: int = 0
    min_tokens: int | None = None

    def __post_init__(self) -> None:
        _check_int("max_messages", self.max_messages, 1)
        _check_int("keep_last", self.keep_last, 0)
        if self.fold is not None:
            _check_int("fold", self.fold, 1)
        if self.min_tokens is not None:
            _check_int("min_tokens", self.min_tokens, 0)
        if self.keep_last > self.max_messages:
            raise ConfigError(
                f"keep_last ({self.keep_last}) must be <= max_messages ({self.max_messages})"
            )

    summary_max_tokens = None

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        return stats.live_count > self.max_messages

    def plan(
        self, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
    ) -> FoldPlan | None:
        if len(live) <= self.max_messages:
            return None
        limit = len(live) - self.keep_last
        want = limit if self.fold is None else min(self.fold, limit)
        if self.min_tokens is not None and sum(m.tokens for m in live[:limit]) <= self.min_tokens:
            return None
        cuts = safe_cuts(live)
        cut = _cut_at_most(cuts, want)
        if cut == 0:
            cut = _cut_at_least(cuts, 1) or 0
            if cut > limit:
                return None
        return _plan_prefix(
            live, cut, f"{len(live)} live messages > max_messages {self.max_messages}"
        )


@dataclass(frozen=True)
class FixedCells:
    """Keep exactly ``k`` live messages (memory cells): fold the oldest beyond ``k``."""

    k: int

    def __post_init__(self) -> None:
        _check_int("k", self.k, 0)

    summary_max_tokens = None

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        return stats.live_count > self.k

    def plan(
        self, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
    ) -> FoldPlan | None:
        over = len(live) - self.k
        if over <= 0:
            return None
        cuts = safe_cuts(live)
        cut = _cut_at_least(cuts, over)
        if cut is None:
            cut = _cut_at_most(cuts, over)
        return _plan_prefix(live, cut, f"{len(live)} cells > k {self.k}")


@dataclass(frozen=True)
class ReportedUsage:
    """Fold everything but the last exchange when the provider-reported input tokens of
    the last model call exceed ``limit`` (record them with ``Memory.record_usage``)."""

    limit: int

    def __post_init__(self) -> None:
        _check_int("limit", self.limit, 1)

    summary_max_tokens = None

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        return stats.reported_input_tokens is not None and stats.reported_input_tokens > self.limit

    def plan(
        self, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
    ) -> FoldPlan | None:
        if not self.triggered(stats, now) or not live:
            return None
        last_user = max((i for i, m in enumerate(live) if m.role == "user"), default=len(live))
        cut = _cut_at_most(safe_cuts(live), last_user)
        reason = f"reported input tokens {stats.reported_input_tokens} > limit {self.limit}"
        return _plan_prefix(live, cut, reason)


@dataclass(frozen=True)
class Idle:
    """After ``fold_after`` seconds without activity fold every live message (up to the
    last safe cut); if the session stays idle ``clear_after`` seconds more, clear it."""

    fold_after: float
    clear_after: float | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.fold_after, (int, float)) and self.fold_after > 0):
            raise ConfigError(f"fold_after must be > 0 seconds, got {self.fold_after!r}")
        if self.clear_after is not None and not (
            isinstance(self.clear_after, (int, float)) and self.clear_after > 0
        ):
            raise ConfigError(f"clear_after must be > 0 seconds, got {self.clear_after!r}")

    summary_max_tokens = None

    def _idle_for(self, stats: SessionStats, now: datetime) -> float:
        if stats.last_activity is None:
            return 0.0
        return (now - stats.last_activity) / timedelta(seconds=1)

    def due_at(self, stats: SessionStats) -> datetime | None:
        """When this policy will next want to act, for schedulers (None: never)."""
        if stats.last_activity is None:
            return None
        if stats.live_count:
            return stats.last_activity + timedelta(seconds=self.fold_after)
        if self.clear_after is not None and stats.summary_version:
            return stats.last_activity + timedelta(seconds=self.fold_after + self.clear_after)
        return None

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        due = self.due_at(stats)
        return due is not None and now >= due

    def plan(
        self, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
    ) -> FoldPlan | None:
        idle = self._idle_for(stats, now)
        if live and idle >= self.fold_after:
            cut = _cut_at_most(safe_cuts(live), len(live))
            plan = _plan_prefix(live, cut, f"idle {idle:.0f}s >= fold_after {self.fold_after:g}s")
            return replace(plan, at_rest=True) if plan is not None else None
        if (
            not live
            and self.clear_after is not None
            and stats.summary_version
            and idle >= self.fold_after + self.clear_after
        ):
            return FoldPlan(lo=0, hi=0, reason=f"idle {idle:.0f}s: clear", action="clear")
        return None


@dataclass(frozen=True)
class _AnyOf:
    policies: tuple[Policy, ...]

    @property
    def summary_max_tokens(self) -> int | None:
        return _min_cap(self.policies)

    def due_at(self, stats: SessionStats) -> datetime | None:
        """The soonest time any timed member (``Idle``) will want to act (None: never)."""
        times = [
            t
            for p in self.policies
            if callable(due := getattr(p, "due_at", None)) and (t := due(stats)) is not None
        ]
        return min(times) if times else None

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        return any(p.triggered(stats, now) for p in self.policies)

    def plan(
        self, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
    ) -> FoldPlan | None:
        plans = [p.plan(stats, live, now) for p in self.policies if p.triggered(stats, now)]
        found = [p for p in plans if p is not None]
        if not found:
            return None
        clears = [p for p in found if p.action == "clear"]
        if clears:
            return clears[0]
        widest = max(found, key=lambda p: p.hi)
        return FoldPlan(
            widest.lo,
            widest.hi,
            "; ".join(p.reason for p in found),
            at_rest=any(p.at_rest for p in found),
        )


@dataclass(frozen=True)
class _AllOf:
    policies: tuple[Policy, ...]

    @property
    def summary_max_tokens(self) -> int | None:
        return _min_cap(self.policies)

    def triggered(self, stats: SessionStats, now: datetime) -> bool:
        return all(p.triggered(stats, now) for p in self.policies)

    def plan(
        self, stats: SessionStats, live: Sequence[StoredMessage], now: datetime
    ) -> FoldPlan | None:
        plans = [p.plan(stats, live, now) for p in self.policies]
        if any(p is None for p in plans) or not plans:
            return None
        found = [p for p in plans if p is not None]
        narrowest = min(found, key=lambda p: p.hi)
        return FoldPlan(
            narrowest.lo,
            narrowest.hi,
            " and ".join(p.reason for p in found),
            narrowest.action,
            at_rest=all(p.at_rest for p in found),
        )


def _min_cap(policies: Sequence[Policy]) -> int | None:
    caps = [c for p in policies if (c := getattr(p, "summary_max_tokens", None)) is not None]
    return min(caps) if caps else None


def any_of(*policies: Policy) -> Policy:
    """Fold when any policy fires; fold the union (the widest prefix) of their plans."""
    if not policies:
        raise ConfigError("any_of() needs at least one policy")
    return _AnyOf(tuple(policies))


def all_of(*policies: Policy) -> Policy:
    """Fold only when every policy fires; fold the narrowest of their plans."""
    if not policies:
        raise ConfigError("all_of() needs at least one policy")
    return _AllOf(tuple(policies))

