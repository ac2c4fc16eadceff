"""Response bodies of the inspector's ``/v1`` routes (:mod:`.inspector_routes`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from ..context import Context
from ..messages import StoredMessage
from ..policy import SessionStats
from ..stores.base import LedgerEntry
from ..stores.rows import LedgerTotals
from .inspector_data import FoldMarker, SeriesPoint
from .schemas import LedgerRow

__all__ = [
    "ContextMessageOut",
    "DiffOpOut",
    "FoldDetail",
    "FoldMarkerOut",
    "FoldRow",
    "FoldsPage",
    "InspectContext",
    "InspectSession",
    "InspectSessionsPage",
    "SeriesOut",
    "SeriesPointOut",
    "TimelineMessage",
    "TimelinePage",
    "ledger_row",
]


class InspectSession(BaseModel):
    """A session's totals as the inspector lists them."""

    session_id: str
    messages: int = Field(description="Messages stored so far (last seq)")
    live: int = Field(description="Live (not yet folded) messages")
    folded: int = Field(description="Messages covered by the summary")
    folds: int = Field(description="Committed folds (the summary's version)")
    failed_folds: int
    context_tokens: int = Field(
        description="Tokens of the context the model receives now (the summary and the live "
        "messages that fit the budget, without the client's system prompt): never over the "
        "budget"
    )
    stored_tokens: int = Field(
        description="Summary + every live message stored, in tokens (over the budget while "
        "messages wait to fold)"
    )
    waiting_messages: int = Field(
        default=0,
        description="Live messages stored but left out of the context to honour the budget, "
        "waiting for a fold to take them",
    )
    summary_tokens: int
    budget: int | None
    summarizer_tokens: int = Field(description="Summarizer input + output tokens spent")
    last_activity: datetime | None
    retention: str | None = Field(default=None, description="archive or delete")
    summary_history: bool | None = Field(
        default=None, description="Whether older summaries' text is kept (fold diffs)"
    )
    policy: str | None = None

    @classmethod
    def of(
        cls,
        session_id: str,
        stats: SessionStats | None,
        totals: Sequence[LedgerTotals],
        budget: int | None,
        last_activity: datetime | None,
        context: Context | None = None,
    ) -> InspectSession:
        s = stats or SessionStats(session_id=session_id)
        stored = s.summary_tokens + s.live_tokens
        return cls(
            session_id=session_id,
            messages=s.last_seq,
            live=s.live_count,
            folded=s.through_seq,
            folds=s.summary_version,
            failed_folds=sum(t.attempts for t in totals if t.outcome == "failed"),
            context_tokens=context.tokens if context is not None else stored,
            stored_tokens=stored,
            waiting_messages=context.omitted if context is not None else 0,
            summary_tokens=s.summary_tokens,
            budget=budget,
            summarizer_tokens=sum(t.input_tokens + t.output_tokens for t in totals),
            last_activity=s.last_activity or last_activity,
        )


class InspectSessionsPage(BaseModel):
    sessions: list[InspectSession]
    next_cursor: str | None = Field(description="Pass as cursor for the next page")
    total: int = Field(description="Sessions matching the filter")


class SeriesPointOut(BaseModel):
    seq: int
    context_tokens: int | None = Field(
        description="The context the model received after this message: the summary and the "
        "newest live messages that fit the budget, whole (null: deleted by retention)"
    )
    stored_tokens: int | None = Field(
        default=None, description="Summary + every live message stored after this message "
        "(above context_tokens while messages wait to fold; null: deleted by retention)"
    )
    summary_tokens: int

    @classmethod
    def of(cls, p: SeriesPoint) -> SeriesPointOut:
        return cls(seq=p.seq, context_tokens=p.context_tokens, stored_tokens=p.stored_tokens,
                   summary_tokens=p.summary_tokens)


class FoldMarkerOut(BaseModel):
    version: int
    at_seq: int = Field(description="The fold ran after this message")
    lo: int
    through_seq: int
    summary_tokens: int
    before_tokens: int | None
    after_tokens: int

    @classmethod
    def of(cls, m: FoldMarker) -> FoldMarkerOut:
        return cls(
            version=m.version, at_seq=m.at_seq, lo=m.lo, through_seq=m.through_seq,
            summary_tokens=m.summary_tokens, before_tokens=m.before_tokens,
            after_tokens=m.after_tokens,
        )


class SeriesOut(BaseModel):
    session_id: str
    budget: int | None
    first_seq: int
    last_seq: int
    points: list[SeriesPointOut]
    folds: list[FoldMarkerOut]
    next_before_seq: int | None = Field(description="Pass as before_seq for earlier messages")


class TimelineMessage(BaseModel):
    seq: int
    tokens: int
    folded: bool
    fold_version: int | None = Field(description="The fold (summary version) that covered it")
    message: dict[str, Any]

    @classmethod
    def of(cls, m: StoredMessage, version: int | None) -> TimelineMessage:
        return cls(seq=m.seq, tokens=m.tokens, folded=m.folded, fold_version=version,
                   message=m.message.to_dict())


class TimelinePage(BaseModel):
    session_id: str
    messages: list[TimelineMessage]
    next_after_seq: int | None
    deleted_before: int = Field(
        description="Folded messages before this page that delete retention removed"
    )


class FoldRow(LedgerRow):
    """One fold attempt (a ledger row) and the summary version it made, if it committed."""

    version: int | None
    error: str | None = Field(description="Redacted one-line error of a failed fold")

    @classmethod
    def of_version(cls, e: LedgerEntry, version: int | None) -> FoldRow:
        return cls(**LedgerRow.of(e).model_dump(), version=version, error=e.error)


def ledger_row(e: LedgerEntry) -> FoldRow:
    return FoldRow.of_version(e, None)


class FoldsPage(BaseModel):
    session_id: str
    folds: list[FoldRow]
    next_before_id: int | None


class DiffOpOut(BaseModel):
    op: str = Field(description="equal, insert or delete")
    text: str


class FoldDetail(BaseModel):
    session_id: str
    version: int
    lo: int
    through_seq: int
    at_seq: int
    summary_tokens: int
    before_tokens: int
    before: str | None = Field(description="The summary before (null: history not kept)")
    after: str | None
    history_kept: bool
    diff: list[DiffOpOut] | None
    lost_facts: list[str] | None = Field(
        description="Names, numbers, dates and ids of the summary before that the new one "
        "no longer mentions (the fact check)"
    )
    ledger: FoldRow | None
    created_at: datetime | None


class ContextMessageOut(BaseModel):
    kind: str = Field(description="system, summary, bridge, recalled (the block of folded "
                      "turns recall brought back) or message")
    tokens: int
    message: dict[str, Any]


class InspectContext(BaseModel):
    session_id: str
    tokens: int
    budget: int | None
    omitted: int
    omitted_seqs: list[int] | None
    truncated: bool
    elided: list[int] = Field(description="Seqs of messages shown cut (head + tail)")
    masked: int = Field(description="Older tool results shown as stand-ins")
    bridged: bool
    recalled: list[int] = Field(
        default_factory=list, description="Seqs of folded messages shown in the recalled block"
    )
    messages: list[ContextMessageOut]
