"""What the engine's operations report: fold outcomes, add results, batch and usage totals;
and the ledger rows of fold attempts that did not commit."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from .errors import ContextFoldError, SummarizationError
from .policy import SessionStats
from .privacy.guard import redact_log_text
from .stores.base import LedgerEntry, Store, Summary
from .stores.rows import LedgerTotals

__all__ = [
    "AddResult",
    "BatchResult",
    "FoldOutcome",
    "FoldStatus",
    "Usage",
    "error_text",
    "record_cancelled",
    "record_failure",
]

log = logging.getLogger("contextfold")

FoldStatus = Literal["committed", "skipped", "failed", "conflict", "cleared"]


@dataclass(frozen=True)
class FoldOutcome:
    """What a fold did. ``status`` is committed, skipped (nothing to do), failed
    (summarizer or store error; nothing changed), conflict (the session changed under the
    fold; nothing written) or cleared (an idle session was cleared)."""

    session_id: str
    status: FoldStatus
    reason: str = ""
    lo: int = 0
    hi: int = 0
    messages_folded: int = 0
    tokens_folded: int = 0
    summary: Summary | None = None
    error: BaseException | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    latency_ms: float = 0.0
    folded_ids: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status in ("committed", "skipped", "cleared")


@dataclass(frozen=True)
class AddResult:
    """Seqs given to the appended messages; the inline fold's outcome if one ran;
    ``stats``: the session as the append left it (before that fold)."""

    seqs: tuple[int, ...]
    fold: FoldOutcome | None = None
    duplicates: int = 0
    stats: SessionStats | None = None


@dataclass(frozen=True)
class BatchResult:
    """Per-session outcomes of :meth:`AsyncMemory.fold_many` and the batch's totals."""

    outcomes: dict[str, FoldOutcome]
    requests: int
    input_tokens: int
    output_tokens: int
    elapsed_s: float

    @property
    def committed(self) -> int:
        return sum(o.status == "committed" for o in self.outcomes.values())

    @property
    def failed(self) -> list[str]:
        return [s for s, o in self.outcomes.items() if o.status in ("failed", "conflict")]


@dataclass(frozen=True)
class Usage:
    """Summarizer usage totals from the ledger."""

    folds: int = 0
    failed: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    messages_folded: int = 0
    tokens_folded: int = 0
    by_model: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_ledger(cls, rows: list[LedgerEntry]) -> Usage:
        """Totals over ledger rows (every attempt's cost counts; folds are committed)."""
        return cls.from_totals([LedgerTotals.of(r) for r in rows])

    @classmethod
    def from_totals(cls, totals: Sequence[LedgerTotals]) -> Usage:
        """The same totals from the sums a store's database made (``ledger_totals``)."""
        by_model: dict[str, int] = {}
        for t in totals:
            model = t.model or "?"
            by_model[model] = by_model.get(model, 0) + t.input_tokens + t.output_tokens
        done = [t for t in totals if t.outcome == "committed"]
        return cls(
            folds=sum(t.attempts for t in done),
            failed=sum(t.attempts for t in totals if t.outcome != "committed"),
            calls=sum(t.calls for t in totals),
            input_tokens=sum(t.input_tokens for t in totals),
            output_tokens=sum(t.output_tokens for t in totals),
            messages_folded=sum(t.messages_folded for t in done),
            tokens_folded=sum(t.tokens_folded for t in done),
            by_model=by_model,
        )


# -- recording attempts that did not commit ------------------------------------------------


def error_text(exc: BaseException) -> str:
    """A one-line description of an error for the ledger and logs (bounded length), with
    personal data redacted: provider errors may quote the request."""
    text = redact_log_text(" ".join(str(exc).split()))
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


async def record_cancelled(store: Store, entry: LedgerEntry, started: float) -> None:
    """A fold cancelled before its commit wrote nothing; its attempt still gets its
    ledger row (best effort, shielded from a second cancellation)."""
    entry = replace(
        entry,
        outcome="cancelled",
        error_class="CancelledError",
        latency_ms=(time.perf_counter() - started) * 1000,
    )
    try:
        await asyncio.shield(store.record_attempt(entry))
    except (ContextFoldError, asyncio.CancelledError):
        log.warning("could not record the cancelled fold of %s", entry.session_id)


async def record_failure(
    store: Store,
    entry: LedgerEntry,
    started: float,
    exc: ContextFoldError,
    outcome: Literal["failed", "conflict"] = "failed",
    *,
    raise_errors: bool = False,
) -> FoldOutcome:
    """Record a failed or conflicting fold attempt in the ledger (best effort) and return
    its outcome — or raise ``exc`` with ``raise_errors``."""
    if isinstance(exc, SummarizationError):
        entry = replace(
            entry,
            calls=1 if exc.calls is None else exc.calls,
            input_tokens=exc.input_tokens,
            output_tokens=exc.output_tokens,
        )
    entry = replace(
        entry,
        outcome=outcome,
        error_class=type(exc.__cause__ or exc).__name__,
        error=error_text(exc),
        latency_ms=(time.perf_counter() - started) * 1000,
    )
    try:
        await store.record_attempt(entry)
    except ContextFoldError as rec_exc:
        log.warning(
            "could not record the failed fold of %s: %s",
            entry.session_id,
            type(rec_exc).__name__,
        )
    log.warning("fold of session %s %s: %s", entry.session_id, outcome, entry.error_class)
    if raise_errors:
        raise exc
    return FoldOutcome(
        entry.session_id,
        outcome,
        entry.reason,
        entry.lo,
        entry.hi,
        0,
        0,
        None,
        exc,
        entry.input_tokens,
        entry.output_tokens,
        entry.calls,
        entry.latency_ms,
    )
