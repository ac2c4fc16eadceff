"""A fold worker's warm-up: the first-use costs of the offline summarizer and the redactor
are paid before the first claim, leaving no trace in the store, the privacy state or any
later summary, and never calling a model."""

from __future__ import annotations

import asyncio
import logging

import pytest

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.server.fold_workers import warm_up
from contextfold.stores.memory import MemoryStore
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.summarizers.extractive import ExtractiveSummarizer

TURNS = [
    {"role": "user", "content": f"Turn {i}: Dana Reyes moved the launch to Friday; "
     f"call +1 415 555 01{i:02d} about invoice {4400 + i}. " + "The plan stands. " * 8}
    for i in range(12)
]


async def _folded(warm: bool) -> tuple[str, AsyncMemory]:
    memory = AsyncMemory(MemoryStore(), policy=TokenBudget(400), fold="deferred",
                         summarizer=ExtractiveSummarizer())
    if warm:
        await warm_up(memory)
    for turn in TURNS:
        await memory.add("chat", turn)
    outcome = await memory.fold("chat")
    assert outcome.status == "committed" and outcome.summary is not None
    return outcome.summary.text, memory


def test_the_warm_up_leaves_no_trace_and_changes_no_summary() -> None:
    async def body() -> None:
        cold, _ = await _folded(warm=False)
        warmed, memory = await _folded(warm=True)
        assert warmed == cold
        assert [s.session_id for s in await memory.store.list_sessions()] == ["chat"]
        assert set(memory.privacy._clean_lines) <= {"chat"}  # the warm-up's session forgotten

    asyncio.run(body())


class _Model:
    """A summarizer standing for a model: warming up must never call it."""

    name = "model"
    runs_inline = False

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        raise AssertionError("the warm-up called a model")


def test_the_warm_up_never_calls_a_model() -> None:
    memory = AsyncMemory(MemoryStore(), fold="deferred", summarizer=_Model())  # type: ignore[arg-type]
    asyncio.run(warm_up(memory))


class _Broken(ExtractiveSummarizer):
    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        raise RuntimeError("boom")


def test_a_failed_warm_up_is_logged_and_the_worker_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = AsyncMemory(MemoryStore(), fold="deferred", summarizer=_Broken())
    with caplog.at_level(logging.WARNING, "contextfold.server.folds"):
        asyncio.run(warm_up(memory))
    assert "warm-up failed" in caplog.text
