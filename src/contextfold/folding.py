"""A fold from its plan to its commit (DESIGN.md, "The fold, step by step", steps 3-6).

:func:`run_fold` takes the snapshot and the plan the engine made, gives the summarizer
the span — personal data redacted when the summarizer may send it anywhere — with no
transaction or lock held, validates the result, and commits summary + ledger row in one
compare-and-set transaction (fenced by the fold lease when there is one). Any failure
leaves the session as it was and is recorded in the ledger; the caller gets a typed
:class:`~contextfold.outcomes.FoldOutcome`, or the error with ``raise_errors``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import replace
from operator import attrgetter
from typing import TYPE_CHECKING

from .errors import ConflictError, ContextFoldError, SummarizationError
from .exclusive import fresh_lease
from .fold_planning import over_budget_shown, plan_fold
from .outcomes import FoldOutcome, FoldStatus, error_text, record_cancelled, record_failure
from .policy import FoldPlan
from .stores.base import FoldCommit, Lease, LedgerEntry, Snapshot, Store
from .summarizers.base import SummaryRequest, check_summary
from .summary_tokens import summary_block_tokens

if TYPE_CHECKING:
    from .engine import AsyncMemory

__all__ = ["run_fold"]

log = logging.getLogger("contextfold")
_seq = attrgetter("seq")


async def run_fold(
    memory: AsyncMemory,
    store: Store,
    sid: str,
    snap: Snapshot,
    plan: FoldPlan,
    key: str | None,
    lease: Lease | None,
    summarized: Callable[[], None] | None = None,
) -> FoldOutcome:
    """Carry out ``plan`` (made from ``snap`` of session ``sid``): clear an idle
    session, or fold ``plan.lo..plan.hi`` into a new summary and commit it."""
    stats, live, previous = snap.stats, snap.live, snap.summary
    if plan.action == "clear":
        cleared = await store.delete(sid, if_last_seq=stats.last_seq)
        if cleared:
            memory.privacy.forget(sid)
            memory._views.forget(sid)
        status: FoldStatus = "cleared" if cleared else "skipped"
        log.info("session %s %s after idle", sid, status)
        return FoldOutcome(sid, status, plan.reason)
    # live is in seq order: the span by bisection, not a scan of the live window
    span = live[bisect_left(live, plan.lo, key=_seq) : bisect_right(live, plan.hi, key=_seq)]
    base = LedgerEntry(
        session_id=sid,
        outcome="failed",
        reason=plan.reason,
        lo=plan.lo,
        hi=plan.hi,
        messages_folded=len(span),
        tokens_folded=sum(m.tokens for m in span),
        model=memory.summarizer.name,
        started_at=memory.clock(),
        key=key,
        owner=lease.owner if lease else None,
        lease_token=lease.token if lease else None,
    )
    privacy = memory.privacy
    previous_text = previous.text if previous else ""
    if privacy.summarizer_input or privacy.summary:
        await privacy.begin(sid)
    if privacy.summarizer_input:
        span = [privacy.stored(m, sid, memory.counter) for m in span]
        previous_text = privacy.text(previous_text, sid)
    request = SummaryRequest(
        session_id=sid,
        previous=previous_text,
        messages=span,
        max_tokens=memory.summary_max_tokens - memory._summary_overhead,
        counter=memory.counter,
        reason=plan.reason,
    )
    started = time.perf_counter()
    try:
        try:
            answer = await memory._summarize(request)
        finally:
            if summarized is not None:  # fold_many: its slot bounds summarizer calls
                summarized()
        result = check_summary(answer, request)
        if privacy.summary:
            clean = privacy.summary_text(result.text, sid)
            if clean != result.text:  # placeholders change the length: check again
                result = check_summary(replace(result, text=clean), request)
    except asyncio.CancelledError:
        await record_cancelled(store, base, started)
        raise
    except Exception as exc:
        err = exc if isinstance(exc, SummarizationError) else SummarizationError(error_text(exc))
        if err is not exc:
            err.__cause__ = exc
        return await record_failure(store, base, started, err, raise_errors=memory.raise_errors)
    tokens = summary_block_tokens(memory.counter, result.text)
    entry = replace(
        base,
        outcome="committed",
        summary_tokens=tokens,
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        calls=result.calls,
        model=result.model or memory.summarizer.name,
        latency_ms=(time.perf_counter() - started) * 1000,
    )
    try:
        await privacy.end(sid)  # the mapping is written before any text that uses it
        lease = await fresh_lease(memory, store, lease)
        commit = FoldCommit(
            sid, stats.summary_version, plan.lo, plan.hi, result.text, tokens, lease
        )
        summary = await store.commit_fold(commit, entry)
    except ConflictError as exc:
        return await record_failure(
            store, entry, started, exc, "conflict", raise_errors=memory.raise_errors
        )
    except ContextFoldError as exc:
        return await record_failure(store, entry, started, exc, raise_errors=memory.raise_errors)
    memory._recent_summaries.append(tokens)
    log.info(
        "folded session %s: seq %d..%d (%d messages, %d tokens) in %.0f ms",
        sid,
        plan.lo,
        plan.hi,
        len(span),
        entry.tokens_folded,
        entry.latency_ms,
    )
    return FoldOutcome(
        sid,
        "committed",
        plan.reason,
        plan.lo,
        plan.hi,
        len(span),
        entry.tokens_folded,
        summary,
        None,
        result.input_tokens,
        result.output_tokens,
        result.calls,
        entry.latency_ms,
        tuple(m.message.id for m in span if m.message.id),
    )


#: Most extra folds one fold call makes to bring the context back within the budget.
MAX_BUDGET_REFOLDS = 2


async def refold_over_budget(
    memory: AsyncMemory, store: Store, sid: str, outcome: FoldOutcome, lease: Lease | None
) -> FoldOutcome:
    """After a committed fold whose new summary left the whole context over the budget — a
    policy that folds a few short messages into a summary longer than they were (say
    ``FixedCells``) — fold again at once, as the budget plans it (at most
    :data:`MAX_BUDGET_REFOLDS` times), so no view has to leave live messages out until the
    next append. The outcome returned covers every fold made; a further fold that fails is
    in the ledger and leaves the committed one as it is."""
    for _ in range(MAX_BUDGET_REFOLDS):
        if outcome.status != "committed" or memory.max_tokens is None:
            return outcome
        stats = await store.stats(sid)  # the counters only: a snapshot when a fold is due
        if stats is None or not over_budget_shown(memory, stats):
            return outcome
        planned = await plan_fold(memory, store, sid, False)
        if planned is None:
            return outcome
        try:
            more = await run_fold(memory, store, sid, *planned, None, lease)
        except ContextFoldError as exc:  # raise_errors: the first fold still stands
            log.warning("session %s: a fold to get back within the budget failed: %s",
                        sid, error_text(exc))
            return outcome
        if more.status != "committed":
            return outcome
        outcome = replace(
            outcome,
            reason=f"{outcome.reason}; then the budget",
            hi=more.hi,
            messages_folded=outcome.messages_folded + more.messages_folded,
            tokens_folded=outcome.tokens_folded + more.tokens_folded,
            summary=more.summary,
            input_tokens=outcome.input_tokens + more.input_tokens,
            output_tokens=outcome.output_tokens + more.output_tokens,
            calls=outcome.calls + more.calls,
            latency_ms=outcome.latency_ms + more.latency_ms,
            folded_ids=outcome.folded_ids + more.folded_ids,
        )
    return outcome
