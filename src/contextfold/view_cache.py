"""The per-session views of an engine: one :class:`~contextfold.context.LiveView` per
session, kept between calls so that ``context()`` costs O(1), least recently used evicted;
and what the fold policy sees of them with observation masking on (sizes as shown, the
newest tool result kept out of folds)."""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .bounded import LRU
from .context import Context, LiveView
from .masking import Masking
from .messages import StoredMessage
from .policy import FoldPlan, SessionStats, evolve
from .tokens import TokenCounter

__all__ = ["STALE_RESULT_FACTOR", "STALE_USER_TURNS", "ViewCache", "drop_folded", "shown_sizes"]

#: The newest tool result stays out of folds until the messages after it hold more than
#: ``STALE_RESULT_FACTOR`` times the live limit in tokens, or more than the live limit and
#: ``STALE_USER_TURNS`` user turns. Until then, turns that do not fit between the result and
#: the newest ones are left out of the view (``Context.omitted``), so the second bound keeps
#: that gap to a few turns. Chosen on the agent benchmark: at 8 / 16 the newest result is
#: shown in every context of every set at every budget (at 8 / 12 tau-bench had one context
#: without it at 500 and one at 1,000 tokens; at 4 / none, one; at 2 / none, 93).
STALE_RESULT_FACTOR = 8
STALE_USER_TURNS = 16


class ViewCache:
    """One :class:`LiveView` per session for an engine, least recently used evicted.

    Thread-safe: the sync front runs in its callers' threads, so each view has a lock
    (view code never awaits, so a thread lock is safe on the event loop too).
    """

    def __init__(self, counter: TokenCounter, masking: Masking | None, size: int = 1024) -> None:
        self.counter = counter
        self.masking = masking
        self._views: LRU[str, tuple[threading.Lock, LiveView]] = LRU(size)
        self._lock = threading.Lock()

    def _get(self, session_id: str, create: bool = True) -> tuple[threading.Lock, LiveView] | None:
        with self._lock:
            hit = self._views.get(session_id)
            if hit is None and create:
                hit = (threading.Lock(), LiveView(self.counter, self.masking))
                self._views.put(session_id, hit)
            return hit

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._views.pop(session_id, None)

    def build(self, session_id: str, live: Sequence[StoredMessage], **options: Any) -> Context:
        """Sync the session's view with ``live`` and build a context (see
        :meth:`LiveView.build` for ``options``)."""
        hit = self._get(session_id)
        assert hit is not None
        with hit[0]:
            if live:
                drop_folded(hit[1], live)
            hit[1].sync(live)
            return hit[1].build(**options)

    def extend(self, session_id: str, appended: Sequence[StoredMessage]) -> None:
        """Take in messages just appended, if the session's view is exactly one append
        behind (otherwise the next :meth:`build` re-syncs from the store)."""
        hit = self._get(session_id, create=False)
        if hit is None or not appended:
            return
        with hit[0]:
            view = hit[1]
            if view.items and view.items[-1].seq + 1 == appended[0].seq:
                for item in appended:
                    view._push(item)

    def masked_stats(self, session_id: str, stats: SessionStats, limit: int | None = None
                     ) -> SessionStats:
        """``stats`` with ``live_tokens`` as the live messages cost shown with masking (see
        :func:`shown_sizes` for ``limit``), when this process's view of the session is
        current; else ``stats`` unchanged."""
        if self.masking is None:
            return stats
        hit = self._get(session_id, create=False)
        if hit is None:
            return stats
        with hit[0]:
            view = hit[1]
            if (
                not view.items
                or view.items[-1].seq != stats.last_seq
                or view.items[0].seq != stats.through_seq + 1
                or view._full[-1] != stats.live_tokens
            ):
                return stats
            return evolve(stats, live_tokens=shown_sizes(view, limit)[3])

    def keep_newest_result(self, session_id: str, plan: FoldPlan | None,
                           live_limit: int | None = None) -> FoldPlan | None:
        """With masking on (agent mode), ``plan`` cut back so that the newest tool result's
        group, and everything after it, stays live and visible; None if nothing is left.

        Only while the conversation after that group is short: once the messages after it
        hold more than :data:`STALE_RESULT_FACTOR` times ``live_limit`` tokens (the token
        policy's live limit; for other policies, the tokens ``plan`` folds but the result's
        group), or more than ``live_limit`` tokens over :data:`STALE_USER_TURNS` user turns,
        the fold takes the result like any other message. Kept forever, it would stop every fold:
        the turns after it would pile up live, left out of the view and never summarized.
        """
        if self.masking is None or plan is None or plan.action != "fold" or plan.at_rest:
            return plan
        hit = self._get(session_id, create=False)
        if hit is None:
            return plan
        with hit[0]:
            view = hit[1]
            last = view._last_tool
            if last < 0 or not view.items or view.items[0].seq > plan.lo:
                return plan
            full = view._full
            unit = live_limit
            if unit is None:  # other policies: what the plan folds, but the result's group
                first, g = view.items[0].seq, view._group[last]
                lo, hi = (min(max(s - first, 0), len(view.items)) for s in (plan.lo, plan.hi + 1))
                unit = full[hi] - full[lo] - max(0, full[min(hi, last + 1)] - full[max(lo, g)])
            after = full[-1] - full[last + 1]
            users_after = len(view._user_cuts) - bisect_right(view._user_cuts, last)
            if after > STALE_RESULT_FACTOR * max(unit, 1) or (
                    after > unit and users_after >= STALE_USER_TURNS):
                return plan  # the conversation has moved on: the result is history now
            first_kept = view.items[view._group[last]].seq
        if plan.hi < first_kept:
            return plan
        return replace(plan, hi=first_kept - 1) if first_kept - 1 >= plan.lo else None

    def masked_plan_input(
        self, session_id: str, stats: SessionStats, live: Sequence[StoredMessage],
        limit: int | None = None,
    ) -> tuple[SessionStats, Sequence[StoredMessage]]:
        """(stats, live) as a policy should see them with masking on: sizes as shown (see
        :func:`shown_sizes` for ``limit``)."""
        if self.masking is None or not live:
            return stats, live
        hit = self._get(session_id)
        assert hit is not None
        with hit[0]:
            view = hit[1]
            view.sync(live)
            b, lo, hi, tokens = shown_sizes(view, limit)
            out = list(view.items)
            for i in range(b):
                if lo <= i < hi:
                    continue  # stand-in not made: at its stored size
                size = view._view[i + 1] - view._view[i] if i < len(view._shown) else (
                    view._form(i)[1])
                if size != out[i].tokens:
                    out[i] = replace(out[i], tokens=size)
            return evolve(stats, live_tokens=tokens), out


def shown_sizes(view: LiveView, limit: int | None) -> tuple[int, int, int, int]:
    """How a fold check sees the live messages with masking on: (b, lo, hi, tokens). Items
    before ``b`` are masked; items ``lo..hi-1`` among them are counted at their stored size
    (their stand-ins not made), every other item as shown; ``tokens`` is the total.

    Stand-ins (the costly part of masking: key facts, counted) are made from the newest
    masked item back only until the messages shown after it cost more than ``limit``, the
    live tokens above which the policy fires: any fold then takes every older message, and
    the stand-ins of messages about to be folded are never shown. The total then exceeds
    ``limit`` as the all-shown total does, so the policy fires alike; ``TokenBudget``
    keeps at most ``limit`` live tokens, so it plans the same cut (only its amortisation
    rule, which sums what the summarizer reads, sees those messages at their stored size,
    which is what the summarizer reads). ``limit`` None: every item as shown."""
    b = view._mask_end()
    lo = len(view._shown)
    if limit is not None and lo < b:
        shown = view._full[-1] - view._full[b]
        i = b
        while i > lo and shown <= limit:
            i -= 1
            shown += view._form(i)[1]
        if i > lo:  # stopped early: the shown messages after i cost more than limit
            return b, lo, i, view._view[lo] + view._full[i] - view._full[lo] + shown
    b = view._boundary()
    return b, 0, 0, view._view[b] + view._full[-1] - view._full[b]


def drop_folded(view: LiveView, live: Sequence[StoredMessage]) -> None:
    """After a fold: when ``live`` is the view's messages from a safe cut on (new ones
    may follow), drop the folded ones from ``view`` by re-basing its running sums — list
    work at C speed — so that :meth:`LiveView.sync` only takes in the new ones instead of
    every live message again. Leaves the view as a rebuild from ``live[:n - k]`` would
    (the property tests compare the two). With masking, the shown forms settled so far are
    re-based too (a shown form depends only on its own message and call, never on its
    index). Anything else: nothing changes here."""
    items = view.items
    n = len(items)
    k = live[0].seq - items[0].seq if n else 0
    if not 0 < k < n or items[k].seq != live[0].seq or len(live) < n - k:
        return
    last = live[n - k - 1]
    if last.seq != items[-1].seq or not (
        last.message is view._orig[-1] or last.message == view._orig[-1]
    ):
        return
    j = bisect_left(view._cuts, k)
    if j == len(view._cuts) or view._cuts[j] != k:
        return  # not a safe cut (the general rebuild copes)
    base = view._full[k]
    del items[:k]
    view._orig = view._orig[k:]  # a new list: contexts handed out read the old one
    view._full = [t - base for t in view._full[k:]]
    view._cuts = [c - k for c in view._cuts[j:]]
    view._user_cuts = [c - k for c in view._user_cuts[bisect_left(view._user_cuts, k):]]
    view._group = [g - k for g in view._group[k:]]
    view._calls = {c.id: c for m in view._orig for c in m.tool_calls}
    view._call_for = {i - k: c for i, c in view._call_for.items() if i >= k}
    view._last_tool = view._last_tool - k if view._last_tool >= k else -1
    view._tools = [t - k for t in view._tools[bisect_left(view._tools, k):]]
    if len(view._shown) > k:
        view._shown = view._shown[k:]
        base = view._view[k]
        view._view = [t - base for t in view._view[k:]]
        base = view._nmask[k]
        view._nmask = [c - base for c in view._nmask[k:]]
    else:
        view._shown, view._view, view._nmask = [], [0], [0]
    first = live[0].seq
    view._forms = {seq: f for seq, f in view._forms.items() if seq >= first}
    view._notes = {seq: note for seq, note in view._notes.items() if seq >= first}
    view._cut_texts.clear()
