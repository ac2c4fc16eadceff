"""Use case 1: simulation characters that remember (K memory cells + a summary per character)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from contextfold import SummarizationError
from contextfold.cells import MemoryCells
from contextfold.summarizers.base import SummaryRequest
from contextfold.summarizers.llm import LLMSummarizer
from contextfold.testing import FakeChat, FunctionSummarizer

K = 3


def summarize(request: SummaryRequest) -> str:
    """Old summary + folded cells, so tests can read exactly what was folded."""
    parts = [request.previous] if request.previous else []
    return " | ".join(parts + [m.text or "(empty)" for m in request.messages])


def failing_for(*ids: str) -> FunctionSummarizer:
    def fn(request: SummaryRequest) -> str:
        if request.session_id in ids:
            raise TimeoutError(f"model timed out for {request.session_id}")
        return summarize(request)

    return FunctionSummarizer(fn)


async def fill(cells: MemoryCells, cid: str, n: int, tag: str = "m") -> None:
    for i in range(1, n + 1):
        await cells.tick({cid: f"{tag}{i}"})


T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_new_character_gains_cells_without_model_calls() -> None:
    async def main() -> None:
        fn = FunctionSummarizer(summarize)
        async with MemoryCells("memory://", k=K, summarizer=fn) as cells:
            result = await cells.tick({"ann": "I woke up in the village"})
            assert result.added == ("ann",) and result.requests == 0 and result.batch is None
            mem = await cells.recall("ann")
            assert mem.cells == ("I woke up in the village",) and mem.summary == ""
            await fill(cells, "ann", K - 1, "x")
            assert len((await cells.recall("ann")).cells) == K
            assert fn.requests == []

    run(main())


def test_full_character_folds_oldest_cell_then_gains_the_new_one_newest_first() -> None:
    async def main() -> None:
        fn = FunctionSummarizer(summarize)
        async with MemoryCells("memory://", k=K, summarizer=fn) as cells:
            await fill(cells, "ann", K)
            result = await cells.tick({"ann": "m4"})
            assert result.folded == ("ann",) and result.requests == 1
            mem = await cells.recall("ann")
            assert mem.cells == ("m4", "m3", "m2")  # newest first, still K
            assert mem.summary == "m1"
            await cells.tick({"ann": "m5"})
            mem = await cells.recall("ann")
            assert mem.cells == ("m5", "m4", "m3") and mem.summary == "m1 | m2"
            # old summary + only the oldest cell went to the summarizer
            assert fn.requests[-1].previous == "m1"
            assert [m.text for m in fn.requests[-1].messages] == ["m2"]

    run(main())


def test_all_none_and_some_full_and_model_call_count() -> None:
    async def main() -> None:
        fn = FunctionSummarizer(summarize)
        async with MemoryCells("memory://", k=K, summarizer=fn, concurrency=2) as cells:
            ids = [f"c{i}" for i in range(6)]
            for _ in range(K):  # nobody is full yet: zero model calls
                result = await cells.tick({c: "memory" for c in ids})
                assert result.requests == 0 and result.total_tokens == 0
            assert fn.requests == []
            result = await cells.tick({c: "all full" for c in ids})  # all full
            assert sorted(result.folded) == ids and result.requests == len(ids)
            assert len(fn.requests) == len(ids)
            some = {"c0": "again", "c1": "again"}  # some full; the others untouched
            before = {c: await cells.recall(c) for c in ids[2:]}
            result = await cells.tick(some)
            assert sorted(result.folded) == ["c0", "c1"] and result.requests == 2
            assert {c: await cells.recall(c) for c in ids[2:]} == before
            result = await cells.tick({})  # nobody at all
            assert result.requests == 0 and result.batch is None

    run(main())


def test_batch_ledger_keys_and_totals() -> None:
    async def main() -> None:
        async with MemoryCells("memory://", k=1, summarizer=character_summarizer(),
                               concurrency=3) as cells:
            await cells.tick({"a": "one", "b": "two", "c": "three"})
            result = await cells.tick({"a": "uno", "b": "dos", "c": "tres"})
            assert result.batch is not None and result.requests == 3
            assert result.input_tokens > 0 and result.output_tokens > 0
            assert result.total_tokens == result.input_tokens + result.output_tokens
            keys = sorted(e.key or "" for e in await cells.memory.ledger(limit=None))
            assert keys == ["memory:a", "memory:b", "memory:c"]

    run(main())


def character_summarizer() -> LLMSummarizer:
    return LLMSummarizer(FakeChat(), preset="character")


def test_character_not_in_the_tick_is_untouched_and_empty_memory_is_a_cell() -> None:
    async def main() -> None:
        async with MemoryCells("memory://", k=K, summarizer=FunctionSummarizer(summarize)) as cells:
            await fill(cells, "bob", K)
            before = await cells.recall("bob")
            stats_before = await cells.memory.stats("bob")
            await cells.tick({"ann": ""})
            assert await cells.recall("bob") == before
            assert await cells.memory.stats("bob") == stats_before
            assert (await cells.recall("ann")).cells == ("",)
            await fill(cells, "ann", K - 1)
            await cells.tick({"ann": "next"})
            assert (await cells.recall("ann")).summary == "(empty)"

    run(main())


def test_partial_failure_keeps_memory_logs_and_retries_next_tick(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    db = f"sqlite:///{tmp_path / 'world.db'}"

    async def main() -> None:
        async with MemoryCells(db, k=K, summarizer=failing_for("bob")) as cells:
            await fill(cells, "ann", K)
            await fill(cells, "bob", K)
            before = await cells.recall("bob")
            with caplog.at_level(logging.WARNING, logger="contextfold.cells"):
                result = await cells.tick({"ann": "a4", "bob": "b4"})
            assert result.folded == ("ann",) and dict(result.failed) == {"bob": "TimeoutError"}
            assert any("bob" in r.getMessage() and "TimeoutError" in r.getMessage()
                       for r in caplog.records)
            after = await cells.recall("bob")
            assert (after.cells, after.summary) == (before.cells, before.summary)
            assert after.pending == ("b4",)
            assert (await cells.recall("ann")).cells == ("a4", "m3", "m2")
            failed = [e for e in await cells.memory.ledger("bob") if e.outcome == "failed"]
            assert failed and failed[0].key == "memory:bob"

        # A new process: the pending memory survived on disk and is retried next tick,
        # even for a character with no new memory this tick.
        fn = FunctionSummarizer(summarize)
        async with MemoryCells(db, k=K, summarizer=fn) as cells:
            result = await cells.tick({})
            assert result.folded == ("bob",) and result.requests == 1
            mem = await cells.recall("bob")
            assert mem.cells == ("b4", "m3", "m2") and mem.summary == "m1" and mem.pending == ()

    run(main())


def test_failed_fold_twice_then_one_call_folds_both() -> None:
    async def main() -> None:
        failing = {"on": True}

        def fn(request: SummaryRequest) -> str:
            if failing["on"]:
                raise SummarizationError("provider down")
            return summarize(request)

        summarizer = FunctionSummarizer(fn)
        async with MemoryCells("memory://", k=2, summarizer=summarizer) as cells:
            await fill(cells, "c", 2)
            await cells.tick({"c": "p1"})
            await cells.tick({"c": "p2"})
            mem = await cells.recall("c")
            assert mem.cells == ("m2", "m1") and mem.pending == ("p1", "p2")
            failing["on"] = False
            calls = len(summarizer.requests)
            result = await cells.tick({"c": "p3"})
            assert result.requests == 1 and len(summarizer.requests) == calls + 1
            mem = await cells.recall("c")
            assert mem.cells == ("p3", "p2") and mem.summary == "m1 | m2 | p1"

    run(main())


def test_cyrillic_memories_go_to_the_character_preset_with_a_script_hint() -> None:
    async def main() -> None:
        chat = FakeChat(["Я помню, как встретила кузнеца на рынке."])
        summarizer = LLMSummarizer(chat, preset="character")
        async with MemoryCells("memory://", k=1, summarizer=summarizer,
                               names={"anya": "Аня"}) as cells:
            await cells.tick({"anya": "Я встретила кузнеца на рынке."})
            await cells.tick({"anya": "Кузнец обещал починить мой меч."})
            mem = await cells.recall("anya")
            assert mem.summary == "Я помню, как встретила кузнеца на рынке."
            prompt = chat.requests[0]
            assert "Cyrillic" in prompt.system and "Аня" in prompt.system
            assert "Я встретила кузнеца на рынке." in prompt.user

    run(main())


def test_invalid_input_writes_nothing() -> None:
    async def main() -> None:
        async with MemoryCells("memory://", k=K) as cells:
            with pytest.raises(Exception, match="memory of 'b'"):
                await cells.tick({"a": "fine", "b": "bad\x00"})
            assert await cells.memory.stats("a") is None

    run(main())
