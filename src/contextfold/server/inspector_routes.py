"""``/v1`` read routes the inspector page needs beyond the service's own: a filterable,
sortable session list, a session overview, the context-size series, the timeline with
folded messages marked, fold attempts and one fold's summary diff, and the context the
model sees now with per-message tokens.

Tenant-scoped exactly like :mod:`contextfold.server.routes.sessions` (the same
dependencies: another tenant's session is a 404) and paginated: no route reads a whole
session's messages.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query

from ..context import _BRIDGE as BRIDGE
from ..context import Context
from ..engine import AsyncMemory
from ..recall import RECALL_HEADER
from ..stores.base import LedgerEntry, SummaryVersion, keeps_summary_text
from ..summarizers.fact_check import lost_facts
from ..tokens import TokenCounter, count_message
from .cursors import CURSOR_PATTERN, TEXT_PATTERN, Part, decode_cursor, encode_cursor
from .deps import PROBLEM_RESPONSES, current_tenant, get_state, tenant_session
from .inspector_data import (
    context_series,
    covering_version,
    fold_markers,
    needed_from,
    word_diff,
)
from .inspector_schemas import (
    ContextMessageOut,
    DiffOpOut,
    FoldDetail,
    FoldMarkerOut,
    FoldRow,
    FoldsPage,
    InspectContext,
    InspectSession,
    InspectSessionsPage,
    SeriesOut,
    SeriesPointOut,
    TimelineMessage,
    TimelinePage,
)
from .keys import Tenant
from .memories import ledger_totals
from .problems import ProblemError
from .tenancy import ScopedSession, ServerState, scoped_id

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["inspector"], responses=PROBLEM_RESPONSES)

State = Annotated[ServerState, Depends(get_state)]
Existing = Annotated[ScopedSession, Depends(tenant_session)]
CurrentTenant = Annotated[Tenant, Depends(current_tenant)]

SERIES_MAX = 5000


# -- sessions list ------------------------------------------------------------------------


@router.get("/inspect/sessions", response_model=InspectSessionsPage,
            summary="The tenant's sessions with fold totals (filter by id, sort, paginate)")
async def inspect_sessions(
    tenant: CurrentTenant,
    state: State,
    q: Annotated[str | None, Query(max_length=200, pattern=TEXT_PATTERN,
                                   description="Part of the session id")] = None,
    sort: Annotated[Literal["activity", "id"], Query(
        description="activity: most recent first; id: A to Z")] = "activity",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(pattern=CURSOR_PATTERN, description="next_cursor "
                                        "of the previous page")] = None,
) -> InspectSessionsPage:
    after = _decode(cursor, sort)
    rows, total = await state.catalog.search_sessions(
        tenant.name, contains=q, sort=sort, limit=limit + 1, after=after
    )
    more = len(rows) > limit
    rows = rows[:limit]
    ids = [r.session_id for r in rows]
    memory = state.memory(state.config.defaults)
    settings = [state.settings_of(r) for r in rows]
    stats, totals, contexts = await asyncio.gather(
        state.stats_many(tenant, ids),
        asyncio.gather(*(ledger_totals(memory.store, session_id=scoped_id(tenant.name, s))
                         for s in ids)),
        asyncio.gather(*(_received(state.memory(st), scoped_id(tenant.name, s), st.budget)
                         for s, st in zip(ids, settings, strict=True))),
    )
    sessions = [
        InspectSession.of(r.session_id, st, tot, se.budget, _utc(r.last_activity), ctx)
        for r, st, tot, se, ctx in zip(rows, stats, totals, settings, contexts, strict=True)
    ]
    next_cursor = None
    if more and rows:
        last = rows[-1]
        next_cursor = encode_cursor([last.last_activity, last.session_id] if sort == "activity"
                              else [last.session_id])
    return InspectSessionsPage(sessions=sessions, next_cursor=next_cursor, total=total)


async def _received(memory: AsyncMemory, store_id: str, budget: int | None) -> Context:
    """The context a client asking now (with no system prompt of its own) receives."""
    return await memory.context(store_id, max_tokens=budget)


# -- one session --------------------------------------------------------------------------


@router.get("/sessions/{session_id}/inspect", response_model=InspectSession,
            summary="One session's totals, settings and what the store keeps")
async def inspect_session(scoped: Existing, state: State) -> InspectSession:
    memory = scoped.memory
    stats, totals, context = await asyncio.gather(
        memory.stats(scoped.store_id),
        ledger_totals(memory.store, session_id=scoped.store_id),
        _received(memory, scoped.store_id, scoped.settings.budget),
    )
    last = _utc(scoped.row.last_activity) if scoped.row is not None else None
    info = InspectSession.of(scoped.session_id, stats, totals, scoped.settings.budget, last,
                             context)
    store = memory.store
    info.retention = store.retention
    info.summary_history = keeps_summary_text(store)
    info.policy = scoped.settings.policy
    return info


@router.get("/sessions/{session_id}/inspect/series", response_model=SeriesOut,
            summary="Context tokens after each message, fold markers and the summary's size")
async def inspect_series(
    scoped: Existing,
    before_seq: Annotated[int | None, Query(ge=1, le=2**62, description="End before this seq "
                                            "(default: the last message)")] = None,
    limit: Annotated[int, Query(ge=1, le=SERIES_MAX)] = 1000,
) -> SeriesOut:
    memory, sid = scoped.memory, scoped.store_id
    stats = await memory.stats(sid)
    last = stats.last_seq if stats else 0
    end = min(last, before_seq - 1) if before_seq is not None else last
    first = max(1, end - limit + 1)
    versions = await memory.store.summary_versions(sid, text=False)
    # from the cut of the summary active before ``first``: the points and the first fold
    # marker's "before" both need the live messages since then
    start = needed_from(versions, max(1, first - 1)) if end >= first else first
    rows = await memory.store.messages(sid, after_seq=start - 1, limit=end - start + 1)
    tokens = {m.seq: m.tokens for m in rows}
    seqs = list(range(first, end + 1)) if end >= first else []
    points = context_series(tokens, versions, seqs, scoped.settings.budget)
    if points and end == last:  # the newest point is no estimate: what context() gives now
        now = await _received(memory, sid, scoped.settings.budget)
        points[-1] = dataclasses.replace(points[-1], context_tokens=now.tokens)
    shown = [i for i, v in enumerate(versions) if first <= v.at_seq <= end]
    window = versions[max(0, shown[0] - 1): shown[-1] + 1] if shown else []
    skip = 1 if shown and shown[0] > 0 else 0
    markers = fold_markers(tokens, window)[skip:] if window else []
    return SeriesOut(
        session_id=scoped.session_id, budget=scoped.settings.budget, first_seq=first,
        last_seq=end, points=[SeriesPointOut.of(p) for p in points],
        folds=[FoldMarkerOut.of(m) for m in markers],
        next_before_seq=first if first > 1 else None,
    )


@router.get("/sessions/{session_id}/inspect/timeline", response_model=TimelinePage,
            summary="Stored messages, oldest first, each marked with the fold that covered it")
async def inspect_timeline(
    scoped: Existing,
    after_seq: Annotated[int, Query(ge=0, le=2**62, description="Start after this seq")] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> TimelinePage:
    memory, sid = scoped.memory, scoped.store_id
    stats = await memory.stats(sid)
    rows = await memory.store.messages(sid, after_seq=after_seq, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    versions = await memory.store.summary_versions(sid, text=False)
    through = stats.through_seq if stats else 0
    deleted = 0
    if memory.store.retention == "delete" and after_seq < through:
        deleted = through - after_seq  # folded and deleted (privacy retention)
    return TimelinePage(
        session_id=scoped.session_id,
        messages=[TimelineMessage.of(m, covering_version(versions, m.seq) if m.folded else None)
                  for m in rows],
        next_after_seq=rows[-1].seq if more and rows else None,
        deleted_before=deleted,
    )


@router.get("/sessions/{session_id}/inspect/folds", response_model=FoldsPage,
            summary="Fold attempts (committed and failed), newest first")
async def inspect_folds(
    scoped: Existing,
    before_id: Annotated[int | None, Query(ge=1, description="Rows with a smaller id")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> FoldsPage:
    memory, sid = scoped.memory, scoped.store_id
    rows = await memory.ledger(sid, limit=None)
    if before_id is not None:
        rows = [r for r in rows if r.id is not None and r.id < before_id]
    page, more = rows[:limit], len(rows) > limit
    versions = await memory.store.summary_versions(sid, text=False)
    by_hi = {v.through_seq: v.version for v in versions}
    return FoldsPage(
        session_id=scoped.session_id,
        folds=[FoldRow.of_version(r, by_hi.get(r.hi) if r.outcome == "committed" else None)
               for r in page],
        next_before_id=page[-1].id if more and page else None,
    )


@router.get("/sessions/{session_id}/inspect/folds/{version}", response_model=FoldDetail,
            summary="One committed fold: the summary before and after, as a diff, the facts "
            "it lost, and its ledger row")
async def inspect_fold(
    scoped: Existing,
    version: Annotated[int, Path(ge=1, le=2**62, description="The summary version it made")],
) -> FoldDetail:
    memory, sid = scoped.memory, scoped.store_id
    pair = await memory.store.summary_versions(sid, after_version=max(0, version - 2), limit=2)
    after = next((v for v in pair if v.version == version), None)
    if after is None:
        raise ProblemError(404, "not_found", f"session has no summary version {version}")
    before = next((v for v in pair if v.version == version - 1), None)
    after_text = after.text
    if after_text is None:  # no history kept: the current summary is still known
        current = await memory.summary(sid)
        if current is not None and current.version == version:
            after_text = current.text
    before_text = "" if version == 1 else (before.text if before is not None else None)
    ledger = await memory.ledger(sid, limit=None)
    row = _committed_row(ledger, after)
    both = before_text is not None and after_text is not None
    return FoldDetail(
        session_id=scoped.session_id, version=version, lo=after.lo,
        through_seq=after.through_seq, at_seq=after.at_seq, summary_tokens=after.tokens,
        before_tokens=before.tokens if before is not None else 0,
        before=before_text, after=after_text, history_kept=keeps_summary_text(memory.store),
        diff=[DiffOpOut(op=d.op, text=d.text) for d in word_diff(before_text or "",
                                                                  after_text or "")]
        if both else None,
        lost_facts=lost_facts(before_text or "", after_text or "") if both else None,
        ledger=FoldRow.of_version(row, version) if row is not None else None,
        created_at=after.created_at,
    )


def _committed_row(ledger: list[LedgerEntry], version: SummaryVersion) -> LedgerEntry | None:
    return next(
        (r for r in ledger if r.outcome == "committed" and r.hi == version.through_seq), None
    )


@router.get("/sessions/{session_id}/inspect/context", response_model=InspectContext,
            summary="What the model sees now: the context with per-message tokens")
async def inspect_context(
    scoped: Existing,
    system: Annotated[str | None, Query(
        max_length=1000, description="System prompt (a query string stays short)")] = None,
) -> InspectContext:
    memory = scoped.memory
    context = await memory.context(scoped.store_id, system=system,
                                   max_tokens=scoped.settings.budget)
    return InspectContext(
        session_id=scoped.session_id, tokens=context.tokens, budget=context.budget,
        omitted=context.omitted, omitted_seqs=list(context.omitted_seqs)
        if context.omitted_seqs else None, truncated=context.truncated,
        elided=list(context.elided), masked=context.masked, bridged=context.bridged,
        recalled=list(context.recalled),
        messages=_context_messages(context, memory.counter, system),
    )


def _context_messages(
    context: Context, counter: TokenCounter, system: str | None
) -> list[ContextMessageOut]:
    head = (["system"] if system else []) + (["summary"] if context.summary_included else [])
    out = []
    for i, m in enumerate(context.messages):
        kind = head[i] if i < len(head) else "bridge" if m == BRIDGE else "message"
        if kind == "message" and context.recalled and m.role == "user" and (
                m.text.startswith(RECALL_HEADER)):
            kind = "recalled"
        out.append(ContextMessageOut(kind=kind, tokens=count_message(counter, m),
                                     message=m.to_dict()))
    return out


# -- cursors ------------------------------------------------------------------------------


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc)


def _decode(cursor: str | None, sort: str) -> list[Any] | None:
    if cursor is None:
        return None
    shape: tuple[Part, ...] = ("time", "session_id") if sort == "activity" else ("session_id",)
    return decode_cursor(cursor, shape, hint=" for this sort")
