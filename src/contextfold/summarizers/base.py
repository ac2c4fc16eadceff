"""The summarizer extension point: one abstract method, :meth:`Summarizer.summarize`.

A summarizer turns (previous summary, the messages being folded) into a new summary under
a token cap. It does no storage: the engine calls it with no transaction or lock held,
validates what it returns (:func:`check_summary`), and commits. A summarizer that fails
raises :class:`~contextfold.errors.SummarizationError` (with ``__cause__``); the session is
then left unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import SummarizationError
from ..messages import StoredMessage
from ..tokens import TokenCounter

__all__ = ["Summarizer", "SummaryRequest", "SummaryResult", "check_summary"]


@dataclass(frozen=True)
class SummaryRequest:
    """Everything a summarizer may use. ``previous`` is the current summary text ("" when
    there is none); ``messages`` are the folded span, oldest first; the new summary must
    stay within ``max_tokens`` as counted by ``counter``."""

    session_id: str
    previous: str
    messages: Sequence[StoredMessage]
    max_tokens: int
    counter: TokenCounter
    reason: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SummaryResult:
    """A new summary and what it cost. ``input_tokens``/``output_tokens`` are the
    provider-reported usage summed over every call (0 for offline summarizers)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    calls: int = 0


@runtime_checkable
class Summarizer(Protocol):
    """Writes the new rolling summary.

    Optional attributes the engine reads: ``needs_redaction`` (False: it sends nothing
    anywhere) and ``runs_inline`` (True: ``summarize`` never awaits real I/O, so the
    synchronous ``Memory`` may run it in the caller's thread; otherwise the sync front
    runs it on its private event-loop thread, one hop per call) and ``fills_cap``
    (True: its summaries grow to the cap, so ``TokenBudget`` plans every fold with the
    cap; otherwise it plans with the summary size the engine expects from recent folds).
    """

    @property
    def name(self) -> str:
        """Recorded in the ledger as the model (e.g. ``extractive`` or ``openai:gpt-4o-mini``)."""
        ...

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Return the new summary, or raise ``SummarizationError``."""
        ...


def check_summary(result: object, request: SummaryRequest) -> SummaryResult:
    """Validate a summarizer's result before anything is committed.

    Rejects a non-result, empty text, text with NUL or lone surrogates, and text over the
    token cap. Raises ``SummarizationError``; the caller commits nothing.
    """
    from ..errors import ValidationError
    from ..messages import check_text
    from ..summary_tokens import count_summary

    if not isinstance(result, SummaryResult):
        raise SummarizationError(
            f"summarizer returned {type(result).__name__}, expected SummaryResult"
        )
    if not isinstance(result.text, str) or not result.text.strip():
        raise SummarizationError("summarizer returned an empty summary")
    try:
        check_text(result.text, "summary")
    except ValidationError as exc:
        raise SummarizationError(f"summarizer returned invalid text: {exc}") from exc
    tokens = count_summary(request.counter, result.text)
    if tokens > request.max_tokens:
        raise SummarizationError(
            f"summary has {tokens} tokens, over the cap of {request.max_tokens}"
        )
    return result
