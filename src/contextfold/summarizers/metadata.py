"""Per-session metadata for a summarizer: who the character is, what the agent's task is.

The engine builds every :class:`~contextfold.summarizers.base.SummaryRequest` the same way;
presets that need to know something about the session (the ``character`` preset's name,
the ``agent`` preset's active task context) read it from ``request.metadata``.
:class:`WithMetadata` fills it in from a function of the session id, at fold time, so the
value is current when the fold runs (a task context that changed since the last fold).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from .base import Summarizer, SummaryRequest, SummaryResult

__all__ = ["WithMetadata"]


class WithMetadata:
    """Wraps ``summarizer``: each request gets ``metadata(session_id)`` merged over its own
    metadata. Keys the presets read: ``character`` (character), ``task_context`` (agent)."""

    def __init__(
        self, summarizer: Summarizer, metadata: Callable[[str], Mapping[str, Any]]
    ) -> None:
        self.summarizer = summarizer
        self.metadata = metadata

    @property
    def name(self) -> str:
        return self.summarizer.name

    def __repr__(self) -> str:
        return f"WithMetadata({self.summarizer!r})"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        extra = dict(self.metadata(request.session_id))
        return await self.summarizer.summarize(
            replace(request, metadata={**request.metadata, **extra}))
