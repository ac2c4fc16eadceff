"""``PostgresStore.search_turns``: a search's hits and the stored messages around them in
one statement are what ``search`` and ``fetch`` return — the same hits, order and
scores, and every message within reach of a hit as ``fetch`` reads it (blanked ones by
``delete`` retention left out; a ``reach`` per rank), also when some terms are broad
(two statements)."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from typing import Any

import pytest

from contextfold.errors import ValidationError
from contextfold.messages import Message
from contextfold.stores import search
from contextfold.stores.base import PreparedMessage, SearchesTurns
from contextfold.stores.postgres import PostgresStore

from .conftest import fresh_schema

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)
VOCAB = ["ferry", "bodrum", "orhan", "kayak", "lunch", "photo", "sister", "garden",
         "recipe", "concert", "museum", "turtle"]


def _talk(rng: random.Random, n: int) -> list[PreparedMessage]:
    return [PreparedMessage(Message(
        role="user" if i % 2 == 0 else "assistant",
        content=" ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 6))),
        timestamp=T0 + timedelta(minutes=i)), 8) for i in range(n)]


async def _check(store: PostgresStore, sid: str, rng: random.Random, queries: int,
                 exact: bool = True) -> int:
    """Compare ``queries`` random searches with ``search`` + ``fetch``; the hits checked."""
    checked = 0
    for _ in range(queries):
        terms = rng.sample(VOCAB, rng.randint(1, 5))
        kwargs: dict[str, Any] = {
            "limit": rng.choice([1, 3, 10, 40]), "min_matched": rng.randint(1, 3),
            "folded": rng.choice([True, None, False])}
        pairs = [(rng.randint(0, 4), rng.randint(0, 4)) for _ in range(rng.randint(1, 4))]
        got = await store.search_turns(sid, terms, reach=pairs, **kwargs)
        want = await store.search(sid, terms, snippets=False, **kwargs)
        assert got.hits == want
        ranked = sorted(want, key=lambda h: (-h.score, h.seq))  # ties: the older first
        reach = {s for i, h in enumerate(ranked)
                 for before, after in [pairs[min(i, len(pairs) - 1)]]
                 for s in range(max(1, h.seq - before), h.seq + after + 1)}
        # at least that; exactly when one statement reads them and each rank reaches at
        # least as far as the next
        assert reach <= got.covered
        if exact and all(a >= c and b >= d for (a, b), (c, d) in pairwise(pairs)):
            assert got.covered == reach
        fetched = {m.seq: m for m in await store.fetch(sid, sorted(got.covered))}
        for seq in sorted(got.covered | {min(reach, default=1) - 1, max(reach, default=0) + 1}):
            assert got.covers(seq) == (seq in got.covered)
            if got.covers(seq):
                assert got.get(seq) == fetched.get(seq)
        checked += len(want)
    return checked


@pytest.mark.parametrize("broad", [search.BROAD_MESSAGES, 20])
def test_search_turns_is_search_and_fetch(pg_url: str, broad: int,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "BROAD_MESSAGES", broad)  # 20: common words broad

    async def main() -> None:
        store = PostgresStore(pg_url, schema=fresh_schema(), pool_size=1)
        await store.setup()
        assert isinstance(store, SearchesTurns)
        rng = random.Random(broad)
        await store.append("s", _talk(rng, 300), T0)
        await store.commit_fold(*_fold_commit(store, "s", 260))
        async def analyze(conn: Any) -> None:  # statistics: broad terms
            await conn.execute(f"ANALYZE {store.schema}.messages")

        await store._tx(analyze, single=True)
        # (300 messages: no term is broad at the shipped threshold, one statement a search)
        assert await _check(store, "s", rng, 150, exact=broad > 300) > 500
        await store.close()

    asyncio.run(main())


def test_blanked_messages_are_left_out(pg_url: str) -> None:
    """With ``delete`` retention a fold blanks what it folded: no hit, nothing read."""

    async def main() -> None:
        store = PostgresStore(pg_url, schema=fresh_schema(), pool_size=1, retention="delete")
        await store.setup()
        rng = random.Random(3)
        await store.append("d", _talk(rng, 60), T0)
        await store.commit_fold(*_fold_commit(store, "d", 30))
        got = await store.search_turns("d", VOCAB, limit=40, reach=[(4, 4)])
        assert got.hits and all(h.seq > 30 for h in got.hits)
        assert all(got.get(s) is None for s in range(1, 31) if got.covers(s))
        assert await _check(store, "d", rng, 40) > 0
        await store.close()

    asyncio.run(main())


def test_no_hits_and_bad_reach(pg_url: str) -> None:
    async def main() -> None:
        store = PostgresStore(pg_url, schema=fresh_schema(), pool_size=1)
        await store.setup()
        await store.append("s", _talk(random.Random(4), 10), T0)
        for sid, terms in (("nobody", ["ferry"]), ("s", ["zzz"]), ("s", ["?!"]),
                           ("a\x00b", ["ferry"])):
            got = await store.search_turns(sid, terms, limit=5)
            assert got.hits == [] and not got.covers(1)
        for bad in ([], [(-1, 0)], [(1, True)], [(1.5, 1)], [(1, "2")], [(1, 2, 3)], [1],
                    None, "ab"):
            with pytest.raises(ValidationError):
                await store.search_turns("s", ["ferry"], reach=bad)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            await store.search_turns("s", ["ferry"], limit=0)
        await store.close()

    asyncio.run(main())


def _fold_commit(store: PostgresStore, sid: str, hi: int) -> tuple[Any, Any]:
    """A fold of seqs 1..``hi`` from the first summary (``commit_fold``'s arguments)."""
    from contextfold.stores.base import FoldCommit, LedgerEntry

    commit = FoldCommit(sid, 0, 1, hi, "Earlier turns.", 4)
    entry = LedgerEntry(sid, "committed", "test", 1, hi, hi, started_at=T0)
    return commit, entry
