"""Cancellation and retries, on every store.

* A fold cancelled before its commit writes nothing (and the session can fold again).
* A fold cancelled after its commit: the commit stands.
* A fold cancelled at any moment leaves the session either exactly as before or exactly
  folded — never in between.
* Retrying an acknowledged append with the same client message id (``Message.id``) does
  not duplicate it — also when the first attempt's caller was cancelled, and after the
  message was folded.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from conftest import StoreFactory
from contextfold import AsyncMemory, Message, MessageCount
from contextfold.stores.base import FoldCommit, LedgerEntry, Retention, Store, Summary
from contextfold.testing import ConcatSummarizer, check_invariant

T = TypeVar("T")


class SlowCommitStore:
    """Delegates to a store; ``commit_fold`` lingers before and/or after the real commit,
    so a test can cancel a fold on either side of it."""

    def __init__(self, inner: Store, before: float = 0.0, after: float = 0.0) -> None:
        self.inner, self.before, self.after = inner, before, after
        self.committed = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def commit_fold(self, commit: FoldCommit, entry: LedgerEntry) -> Summary:
        await asyncio.sleep(self.before)
        summary = await self.inner.commit_fold(commit, entry)
        self.committed.set()
        await asyncio.sleep(self.after)
        return summary


def _user(i: int, **kw: Any) -> Message:
    return Message(role="user" if i % 2 == 0 else "assistant", content=f"message {i}", **kw)


async def _snapshot(memory: AsyncMemory, sid: str) -> tuple[Any, ...]:
    return (await memory.stats(sid), await memory.summary(sid), await memory.messages(sid))


def _run(stores: StoreFactory, body: Callable[[StoreFactory, Store], Awaitable[T]],
         retention: Retention = "archive") -> T:
    async def main() -> T:
        _, store = stores.new(retention)
        await store.setup()
        try:
            return await body(stores, store)
        finally:
            await store.close()

    return asyncio.run(main())


def _memory(store: Any, summarizer: ConcatSummarizer | None = None) -> AsyncMemory:
    return AsyncMemory(store, summarizer=summarizer or ConcatSummarizer(), fold="manual",
                       policy=MessageCount(4, keep_last=1), tokenizer="approx")


def test_fold_cancelled_before_commit_writes_nothing(stores: StoreFactory) -> None:
    async def body(_: StoreFactory, store: Store) -> None:
        memory = _memory(store, ConcatSummarizer(delay=5))
        await memory.add("s", *(_user(i) for i in range(8)))
        before = await _snapshot(memory, "s")
        task = asyncio.create_task(memory.fold("s"))
        await asyncio.sleep(0.05)  # the summarizer is running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await _snapshot(memory, "s") == before
        assert [r.outcome for r in await memory.ledger("s")] == ["cancelled"]
        memory.summarizer = ConcatSummarizer()
        assert (await memory.fold("s")).status == "committed"  # not stuck "in flight"
        await check_invariant(store, "s")

    _run(stores, body)


def test_fold_cancelled_after_commit_stands(stores: StoreFactory) -> None:
    async def body(_: StoreFactory, store: Store) -> None:
        slow = SlowCommitStore(store, after=5)
        memory = _memory(slow)
        await memory.add("s", *(_user(i) for i in range(8)))
        task = asyncio.create_task(memory.fold("s"))
        await asyncio.wait_for(slow.committed.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        summary = await memory.summary("s")
        assert summary is not None and summary.version == 1 and summary.through_seq == 7
        assert [m.seq for m in await memory.messages("s", include_folded=False)] == [8]
        assert [r.outcome for r in await memory.ledger("s")] == ["committed"]
        await check_invariant(store, "s")

    _run(stores, body)


def test_fold_cancelled_at_any_moment_is_all_or_nothing(
    stores: StoreFactory, counts: Callable[[str, int, int], int]
) -> None:
    n = counts("cancel points", 40, 400)

    async def body(_: StoreFactory, store: Store) -> None:
        rng = random.Random(3)
        outcomes: dict[str, int] = {"before": 0, "folded": 0}
        for round_ in range(n):
            sid = f"s{round_}"
            memory = _memory(store, ConcatSummarizer(delay=rng.choice([0, 0.002])))
            await memory.add(sid, *(_user(i) for i in range(8)))
            before = await _snapshot(memory, sid)
            task = asyncio.create_task(memory.fold(sid))
            await asyncio.sleep(rng.uniform(0, 0.01))
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await asyncio.sleep(0.02)  # let a commit already handed to a driver finish
            after = await _snapshot(memory, sid)
            if after == before:
                outcomes["before"] += 1
            else:
                stats, summary, _ = after
                assert summary is not None and summary.version == 1
                assert stats.through_seq == summary.through_seq == 7
                outcomes["folded"] += 1
            await check_invariant(store, sid)
        print(f"{stores.kind}: cancelled folds {outcomes}")

    _run(stores, body)


@pytest.mark.parametrize("retention", ["archive", "delete"])
def test_retried_append_with_the_same_client_id_is_not_duplicated(
    stores: StoreFactory, retention: Retention
) -> None:
    async def body(_: StoreFactory, store: Store) -> None:
        memory = _memory(store)
        first = await memory.add("s", _user(0, id="m0"), _user(1, id="m1"))
        again = await memory.add("s", _user(1, id="m1"), _user(2, id="m2"), _user(1, id="m1"))
        assert first.seqs == (1, 2) and again.seqs == (2, 3, 2) and again.duplicates == 2
        # the caller gave up waiting (cancelled) but the write may have gone through
        task = asyncio.create_task(memory.add("s", _user(3, id="m3")))
        await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.05)
        await memory.add("s", _user(3, id="m3"))  # the retry
        await memory.add("s", *(_user(i, id=f"m{i}") for i in range(4, 8)))
        assert (await memory.fold("s", force=True)).status == "committed"
        retry = await memory.add("s", _user(0, id="m0"), _user(7, id="m7"))  # both folded now
        assert retry.duplicates == 2, retry
        stats = await memory.stats("s")
        assert stats is not None and stats.last_seq == 8
        ids = [m.message.id for m in await memory.messages("s")]
        assert len(ids) == len(set(ids))
        await check_invariant(store, "s")

    _run(stores, body, retention)
