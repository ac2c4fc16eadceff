"""Concurrency: many writers appending to shared sessions while two engines (two store
objects on the same storage — two connections for SQLite and PostgreSQL) fold them with
``fold_many`` at the same time. Folds may lose the compare-and-set race (outcome
``conflict``), never corrupt: afterwards every session is exactly seq 1..N, every
acknowledged append is present once at the seq it was given, and every context obeys the
provider rules."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable

from conftest import StoreFactory
from contextfold import AsyncMemory, Message, MessageCount, ToolCall
from contextfold.testing import ConcatSummarizer, check_invariant
from contextfold.testing.provider_rules import check_provider_rules


def test_appends_and_competing_fold_batches(
    stores: StoreFactory, counts: Callable[[str, int, int], int]
) -> None:
    rounds = counts(f"append rounds per writer ({stores.kind})", 60, 600)
    sessions = [f"s{i}" for i in range(6)]

    async def main() -> None:
        key, store_a = stores.new()
        store_b = stores.reopen(key)
        engines = [
            AsyncMemory(store, summarizer=ConcatSummarizer(delay=0.001), fold="manual",
                        policy=MessageCount(5, keep_last=1), tokenizer="approx")
            for store in (store_a, store_b)
        ]
        acked: dict[str, dict[str, int]] = {s: {} for s in sessions}
        outcomes: Counter[str] = Counter()
        locks = {s: asyncio.Lock() for s in sessions}  # one writer per session at a time
        stop = asyncio.Event()

        async def writer(w: int) -> None:
            rng = random.Random(w)
            for r in range(rounds):
                sid = rng.choice(sessions)
                engine = engines[rng.randrange(2)]
                async with locks[sid]:
                    tag = f"w{w}r{r}"
                    msgs = [Message(role="user", content=tag, id=f"{tag}u")]
                    if rng.random() < 0.3:
                        call = ToolCall(f"{tag}c", "lookup")
                        msgs += [Message(role="assistant", tool_calls=(call,), id=f"{tag}a"),
                                 Message(role="tool", content="ok", tool_call_id=call.id,
                                         id=f"{tag}t")]
                    msgs.append(Message(role="assistant", content=f"re {tag}", id=f"{tag}z"))
                    result = await engine.add(sid, *msgs)
                    acked[sid].update(zip((m.id or "" for m in msgs), result.seqs, strict=True))
                await asyncio.sleep(0)

        async def folder(engine: AsyncMemory) -> None:
            while not stop.is_set():
                batch = await engine.fold_many(sessions, concurrency=3)
                outcomes.update(o.status for o in batch.outcomes.values())
                await asyncio.sleep(0.001)

        folders = [asyncio.create_task(folder(e)) for e in engines]
        await asyncio.gather(*(writer(w) for w in range(6)))
        stop.set()
        await asyncio.gather(*folders)
        for sid in sessions:
            await check_invariant(store_a, sid)
            rows = {m.message.id: m.seq for m in await engines[0].messages(sid)}
            assert rows == acked[sid], sid  # each acknowledged append once, at its seq
            for engine in engines:
                assert check_provider_rules(await engine.context(sid)) == []
        print(f"{stores.kind}: fold outcomes {dict(outcomes)}")
        assert outcomes["committed"] > 0
        for engine in engines:
            await engine.close()

    asyncio.run(main())
