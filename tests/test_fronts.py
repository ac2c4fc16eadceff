"""The two fronts share every step: ``Memory`` (sync) drives ``AsyncMemory``'s coroutines
in the caller's thread, with no event loop and no thread hop per call, on every store."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from contextfold import AsyncMemory, Memory, MessageCount, TokenBudget
from contextfold.inline import Ready, run_elsewhere, run_inline
from contextfold.stores import MemoryStore
from contextfold.stores.base import Store
from contextfold.stores.sqlite import SQLiteStore
from contextfold.testing.summarizers import ConcatSummarizer


def make_store(kind: str, tmp: Path, request: pytest.FixtureRequest) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(tmp / f"{uuid.uuid4().hex[:8]}.db")
    from contextfold.stores.postgres import PostgresStore

    url = request.getfixturevalue("pg_database")
    return PostgresStore(url, schema=f"f_{uuid.uuid4().hex[:10]}", pool_size=2)


KINDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def turns(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"turn {i}: Alice paid invoice {1000 + i} on May {i % 28 + 1}."
        out.append({"role": role, "content": text, "id": f"m{i}"})
    return out


def script(memory: Memory, sid: str) -> list[Any]:
    """Operations on the sync front; ``drive`` below does the same awaiting."""
    seen: list[Any] = []
    for msg in turns(40):
        result = memory.add(sid, msg)
        seen.append((result.seqs, result.fold.status if result.fold else None))
        ctx = memory.context(sid)
        seen.append((ctx.tokens, [m.text for m in ctx.messages]))
    seen.append(memory.fold(sid, force=True).status)
    summary = memory.summary(sid)
    assert summary is not None
    seen.append(summary.text)
    seen.append([(e.outcome, e.lo, e.hi) for e in memory.ledger(sid)])
    seen.append(len(memory.messages(sid)))
    st = memory.stats(sid)
    assert st is not None
    seen.append((st.last_seq, st.live_count, st.through_seq))
    seen.append(memory.add(sid, turns(1)[0]).duplicates)  # idempotent by id
    return seen


@pytest.mark.parametrize("kind", KINDS)
def test_sync_front_matches_async_front_without_thread_hops(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    policy = TokenBudget(400, summary_max_tokens=150)
    sync_store = make_store(kind, tmp_path, request)
    threads_before = {t.ident for t in threading.enumerate()}
    with Memory(sync_store, policy=policy) as memory:
        got = script(memory, "s")
        # no loop thread was started and no store worker thread did the work
        assert memory._loop._thread is None
        if isinstance(sync_store, SQLiteStore):
            assert not sync_store._executor._threads
        if kind == "postgres":
            assert sync_store._pools._pool is None  # type: ignore[attr-defined]
    new_threads = {t.name for t in threading.enumerate() if t.ident not in threads_before}
    assert not {n for n in new_threads if "contextfold" in n and "pool" not in n}

    async def drive() -> list[Any]:
        async with AsyncMemory(make_store(kind, tmp_path, request), policy=policy) as amem:
            seen: list[Any] = []
            for msg in turns(40):
                result = await amem.add("s", msg)
                seen.append((result.seqs, result.fold.status if result.fold else None))
                ctx = await amem.context("s")
                seen.append((ctx.tokens, [m.text for m in ctx.messages]))
            seen.append((await amem.fold("s", force=True)).status)
            summary = await amem.summary("s")
            assert summary is not None
            seen.append(summary.text)
            seen.append([(e.outcome, e.lo, e.hi) for e in await amem.ledger("s")])
            seen.append(len(await amem.messages("s")))
            st = await amem.stats("s")
            assert st is not None
            seen.append((st.last_seq, st.live_count, st.through_seq))
            seen.append((await amem.add("s", turns(1)[0])).duplicates)
            return seen

    assert asyncio.run(drive()) == got


@pytest.mark.parametrize("kind", KINDS)
def test_sync_front_inside_a_running_loop_with_a_loop_bound_summarizer(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Jupyter: a running loop in the caller's thread. A summarizer that really awaits
    (sleeps on the loop) runs on the Memory's loop thread; everything else inline."""
    store = make_store(kind, tmp_path, request)
    summarizer = ConcatSummarizer(delay=0.001)

    async def notebook_cell() -> None:
        with Memory(store, policy=MessageCount(6, fold=4), summarizer=summarizer) as memory:
            for msg in turns(12):
                memory.add("nb", msg)
            assert summarizer.calls >= 2
            assert memory._loop._thread is not None  # the summarizer's hop
            ctx = memory.context("nb")
            assert ctx.messages
            batch = memory.fold_many(["nb"], force=True)
            assert batch.outcomes["nb"].status in ("committed", "skipped")
            stats = memory.stats("nb")
            assert stats is not None and stats.last_seq == 12

    asyncio.run(notebook_cell())


def test_closed_memory_refuses_calls(tmp_path: Path) -> None:
    memory = Memory(SQLiteStore(tmp_path / "c.db"))
    memory.add("s", {"role": "user", "content": "hi"})
    memory.close()
    memory.close()  # idempotent
    with pytest.raises(Exception, match="closed"):
        memory.add("s", {"role": "user", "content": "again"})


def test_run_inline_refuses_a_step_that_suspends() -> None:
    async def suspends() -> int:
        await asyncio.sleep(0)
        return 1

    from contextfold.inline import LoopThread

    loop = LoopThread()
    with pytest.raises(RuntimeError, match="suspended"):
        run_inline(suspends(), loop)

    async def ready() -> int:
        return await Ready(41) + 1

    assert run_inline(ready(), loop) == 42

    async def hops() -> str:
        async def on_loop() -> str:
            await asyncio.sleep(0)
            return threading.current_thread().name

        return await run_elsewhere(on_loop())

    assert run_inline(hops(), loop) == "contextfold-loop"
    loop.stop()
    assert asyncio.run(hops()) == threading.current_thread().name


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_one_memory_shared_by_threads_loses_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Steps now run in their callers' threads: the stores serialise their own I/O."""
    memory = Memory(make_store(kind, tmp_path, request), policy=MessageCount(8, fold=4))
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(30):
                sid = "shared" if i % 2 else f"own{w}"
                memory.add(sid, {"role": "user", "content": f"w{w} i{i} note {i * 7}"})
                memory.context(sid)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for sid, expected in [("shared", 60), *((f"own{w}", 15) for w in range(4))]:
        stats = memory.stats(sid)
        assert stats is not None and stats.last_seq == expected
        stored = memory.messages(sid)
        assert [m.seq for m in stored] == list(range(1, expected + 1))
        assert stats.live_count == sum(not m.folded for m in stored)
    memory.close()
