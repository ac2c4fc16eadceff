"""The JSON shapes of the HTTP API (request bodies and responses), as pydantic models.

They are the OpenAPI document's schemas, so the committed ``openapi.json`` and the
TypeScript client's types come from here. Messages are the OpenAI-style dicts the library
accepts; the shape is checked here (422 ``validation_error`` with per-field errors) and the
content by the library (422 ``validation_error`` naming the message index).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..messages import StoredMessage
from ..outcomes import FoldOutcome
from ..policy import SessionStats
from ..stores.base import LedgerEntry, Summary

__all__ = [
    "AppendRequest",
    "AppendResponse",
    "ContextRequest",
    "ContextResponse",
    "FoldRequest",
    "FoldResult",
    "LedgerResponse",
    "MessageIn",
    "MessagesPage",
    "SessionInfo",
    "SessionsPage",
    "SummaryOut",
    "SummaryResponse",
    "UsageRequest",
    "UsageResponse",
    "UsageTotals",
]


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class MessageIn(BaseModel):
    """An OpenAI-style chat message, plus optional ``id`` (makes retries idempotent),
    ``timestamp`` (ISO 8601 or epoch seconds) and ``metadata``."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    id: str | None = Field(default=None, min_length=1, max_length=512)
    timestamp: str | float | None = None
    metadata: dict[str, Any] | None = None

    def to_library(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class AppendRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    messages: list[MessageIn] = Field(
        min_length=1, description="Appended in order, all or none (at least one)"
    )


class StatsOut(BaseModel):
    last_seq: int
    live_count: int
    live_tokens: int
    through_seq: int
    summary_version: int
    summary_tokens: int
    pending_tool_calls: list[str]
    last_activity: datetime | None
    reported_input_tokens: int | None

    @classmethod
    def of(cls, s: SessionStats) -> StatsOut:
        # built from the store's own values (of these types): constructed, not validated
        return cls.model_construct(
            last_seq=s.last_seq,
            live_count=s.live_count,
            live_tokens=s.live_tokens,
            through_seq=s.through_seq,
            summary_version=s.summary_version,
            summary_tokens=s.summary_tokens,
            pending_tool_calls=list(s.pending_calls),
            last_activity=s.last_activity,
            reported_input_tokens=s.reported_input_tokens,
        )


class SummaryOut(BaseModel):
    text: str
    through_seq: int
    version: int
    tokens: int
    updated_at: datetime | None

    @classmethod
    def of(cls, s: Summary | None) -> SummaryOut | None:
        if s is None:
            return None
        return cls.model_construct(  # the store's own values: not validated again
            text=s.text,
            through_seq=s.through_seq,
            version=s.version,
            tokens=s.tokens,
            updated_at=s.updated_at,
        )


class FoldResult(BaseModel):
    """What a fold did: ``committed``, ``skipped`` (nothing to do), ``failed`` (summarizer
    or store error; nothing changed), ``conflict`` or ``cleared``."""

    status: Literal["committed", "skipped", "failed", "conflict", "cleared"]
    reason: str
    lo: int
    hi: int
    messages_folded: int
    tokens_folded: int
    summary: SummaryOut | None
    error_class: str | None
    input_tokens: int
    output_tokens: int
    calls: int
    latency_ms: float
    folded_ids: list[str]

    @classmethod
    def of(cls, o: FoldOutcome | None) -> FoldResult | None:
        if o is None:
            return None
        error = o.error
        return cls(
            status=o.status,
            reason=o.reason if o.status != "failed" else "",
            lo=o.lo,
            hi=o.hi,
            messages_folded=o.messages_folded,
            tokens_folded=o.tokens_folded,
            summary=SummaryOut.of(o.summary),
            error_class=type(error.__cause__ or error).__name__ if error is not None else None,
            input_tokens=o.input_tokens,
            output_tokens=o.output_tokens,
            calls=o.calls,
            latency_ms=round(o.latency_ms, 3),
            folded_ids=list(o.folded_ids),
        )


class Appended(BaseModel):
    index: int = Field(description="Position in the request's messages")
    seq: int
    id: str | None


class AppendResponse(BaseModel):
    session_id: str
    appended: list[Appended]
    duplicates: list[Appended] = Field(description="Already stored (same id): not written again")
    fold: FoldResult | None = Field(description="The inline fold's outcome, if one ran")
    stats: StatsOut


class ContextRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    system: str | None = Field(default=None, max_length=200_000, description="System prompt")
    format: Literal["openai", "anthropic", "gemini"] = "openai"
    max_tokens: int | None = Field(
        default=None, ge=64, le=2_000_000, description="Budget (default: the session's)"
    )
    query: str | None = Field(
        default=None, min_length=1, max_length=4000,
        description="Recall folded turns matching this text into the context (with the "
        "session's recall on and no query: the newest user message)",
    )


class ContextResponse(BaseModel):
    session_id: str
    format: Literal["openai", "anthropic", "gemini"]
    system: str | None = Field(
        description="anthropic/gemini: the system text (system prompt + summary block); "
        "openai: null (system messages are in messages)"
    )
    messages: list[dict[str, Any]] = Field(description="The provider-ready messages")
    tokens: int
    budget: int | None
    trimmed: bool = Field(description="Older live messages were left out of this view")
    omitted: int = Field(description="Live messages left out of this view (still stored)")
    omitted_seqs: tuple[int, int] | None = Field(
        description="The first and the last seq left out (null: none)"
    )
    truncated: bool = Field(description="Some message is shown cut (see elided)")
    elided: list[int] = Field(
        description="Seqs of messages shown cut, head + tail with a marker naming the "
        "stored seq (a tool result too big for the budget)"
    )
    masked: int = Field(
        description="Older tool results shown as stand-ins (observation masking): tool "
        "name, key facts and the stored seq; each stand-in is the same on every call"
    )
    bridged: bool = Field(description="A one-line user turn was put before an assistant-first view")
    recalled: list[int] = Field(
        description="Seqs of folded messages shown in the recalled block (a labelled user "
        "turn just before the newest user message; empty: no block)",
    )
    summary: SummaryOut | None


class SummaryResponse(BaseModel):
    session_id: str
    summary: SummaryOut | None


class StoredMessageOut(BaseModel):
    seq: int
    tokens: int
    folded: bool
    message: dict[str, Any]

    @classmethod
    def of(cls, m: StoredMessage) -> StoredMessageOut:
        return cls(seq=m.seq, tokens=m.tokens, folded=m.folded, message=m.message.to_dict())


class MessagesPage(BaseModel):
    session_id: str
    messages: list[StoredMessageOut]
    next_after_seq: int | None = Field(description="Pass as after_seq for the next page")


class LedgerRow(BaseModel):
    id: int | None
    outcome: str
    reason: str
    lo: int
    hi: int
    messages_folded: int
    tokens_folded: int
    summary_tokens: int
    input_tokens: int
    output_tokens: int
    calls: int
    model: str | None
    latency_ms: float
    error_class: str | None
    started_at: datetime | None

    @classmethod
    def of(cls, e: LedgerEntry) -> LedgerRow:
        return cls(
            id=e.id,
            outcome=e.outcome,
            reason=e.reason,
            lo=e.lo,
            hi=e.hi,
            messages_folded=e.messages_folded,
            tokens_folded=e.tokens_folded,
            summary_tokens=e.summary_tokens,
            input_tokens=e.input_tokens,
            output_tokens=e.output_tokens,
            calls=e.calls,
            model=e.model,
            latency_ms=round(e.latency_ms, 3),
            error_class=e.error_class,
            started_at=e.started_at,
        )


class LedgerResponse(BaseModel):
    session_id: str
    entries: list[LedgerRow]


class FoldRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: bool = Field(
        default=False,
        description="Fold every live message but the newest keep_last (the session's "
        "setting), up to the last safe cut",
    )


class UsageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_tokens: int = Field(ge=0, le=100_000_000, description="Provider-reported input tokens")


class UsageResponse(BaseModel):
    session_id: str
    input_tokens: int
    fold: FoldResult | None


class SessionInfo(BaseModel):
    session_id: str
    created_at: datetime
    last_activity: datetime
    stats: StatsOut | None = Field(description="null: settings stored, no message yet")
    custom_settings: bool


class SessionsPage(BaseModel):
    sessions: list[SessionInfo]
    next_cursor: str | None = Field(description="Pass as cursor for the next page")


class UsageTotals(BaseModel):
    folds: int
    failed: int
    calls: int
    input_tokens: int
    output_tokens: int
    messages_folded: int
    tokens_folded: int
    by_model: dict[str, int]


class Status(BaseModel):
    status: Literal["ok", "ready"]
