"""The PostgreSQL store reads only the live rows a process has not read before; whatever
another process does to the session in between (appends, folds, deleting it and starting it
again under the same id), the next snapshot is the session as stored."""

from __future__ import annotations

import asyncio
import uuid

from contextfold import AsyncMemory, TokenBudget


def msg(text: str, mid: str) -> dict[str, str]:
    return {"role": "user", "content": text + " and some more words" * 20, "id": mid}


def test_snapshots_follow_other_processes(pg_url: str) -> None:
    sid = f"live-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        policy = TokenBudget(1000, keep_last=2)
        async with AsyncMemory(pg_url, policy=policy, fold="manual") as here, \
                AsyncMemory(pg_url, policy=policy, fold="manual") as there:

            async def live_ids() -> list[str | None]:
                snap = await here.store.snapshot(sid)
                assert snap is not None
                fresh = await there.store.messages(sid, include_folded=False)
                assert [m.seq for m in snap.live] == [m.seq for m in fresh]
                return [m.message.id for m in snap.live]

            await here.add(sid, *(msg(f"a{i}", f"a{i}") for i in range(3)))
            assert await live_ids() == ["a0", "a1", "a2"]
            await there.add(sid, *(msg(f"b{i}", f"b{i}") for i in range(6)))  # elsewhere
            assert await live_ids() == ["a0", "a1", "a2"] + [f"b{i}" for i in range(6)]
            folded = await there.fold(sid, force=True)
            assert folded.status == "committed"
            left = await live_ids()  # what the fold left live: the newest, if any
            assert len(left) < 9 and left == [f"b{i}" for i in range(6)][6 - len(left):]
            await there.add(sid, msg("b6", "b6"))
            assert await live_ids() == [*left, "b6"]
            context = await here.context(sid)
            assert context.summary is not None and context.summary == await there.summary(sid)
            assert await there.delete(sid)
            assert await here.store.snapshot(sid) is None
            await there.add(sid, msg("c0", "c0"))  # the same id, a new session
            assert await live_ids() == ["c0"]
            assert await there.delete(sid)
            await there.add(sid, *(msg(f"d{i}", f"d{i}") for i in range(12)))
            assert await live_ids() == [f"d{i}" for i in range(12)]  # not the cached c0

    asyncio.run(main())
