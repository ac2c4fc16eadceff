"""What the engine's operations report: fold outcomes, add results, batch and usage totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .stores.base import Summary

__all__ = ["AddResult", "BatchResult", "FoldOutcome", "FoldStatus", "Usage"]

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
    """Seqs given to the appended messages; the inline fold's outcome if one ran."""

    seqs: tuple[int, ...]
    fold: FoldOutcome | None = None
    duplicates: int = 0


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
