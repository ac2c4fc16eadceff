"""Summarizer test doubles: deterministic, offline, scriptable."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..errors import SummarizationError
from ..summarizers.base import SummaryRequest, SummaryResult

__all__ = ["ConcatSummarizer", "FunctionSummarizer"]

SummaryFn = Callable[[SummaryRequest], str | SummaryResult | Awaitable[str | SummaryResult]]


class FunctionSummarizer:
    """A function plays the summarizer: it gets the request and returns text (or a
    ``SummaryResult``), sync or async. Every request is recorded in ``requests``."""

    def __init__(self, fn: SummaryFn, *, name: str = "function") -> None:
        self.fn = fn
        self._name = name
        self.requests: list[SummaryRequest] = []

    @property
    def name(self) -> str:
        return self._name

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        out = self.fn(request)
        if isinstance(out, Awaitable):
            out = await out
        if isinstance(out, SummaryResult):
            return out
        return SummaryResult(text=out, calls=1)


class ConcatSummarizer:
    """Keeps ``seq:role`` tags of every folded message (newest last), trimmed from the
    front to the cap: lets tests see exactly which messages a summary covers.

    ``fail_with``: raise this error on every call; ``delay``: seconds to sleep first
    (to hold a fold open while a test appends or folds concurrently).
    """

    def __init__(self, *, delay: float = 0.0, fail_with: BaseException | None = None) -> None:
        self.delay = delay
        self.fail_with = fail_with
        self.calls = 0

    @property
    def name(self) -> str:
        return "concat"

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_with is not None:
            raise self.fail_with
        tags = request.previous.split() + [f"{m.seq}:{m.role}" for m in request.messages]
        while tags and request.counter.count(" ".join(tags)) > request.max_tokens:
            tags.pop(0)
        text = " ".join(tags)
        if not text:
            raise SummarizationError("nothing fits under the cap")
        return SummaryResult(
            text=text,
            input_tokens=len(request.messages),
            output_tokens=len(tags),
            model="concat",
            calls=1,
        )
