"""Group commit: fold commits sent together as one statement behave exactly like the same
commits sent one by one — each fold keeps its own compare-and-set, lease fence, retention
step, summary version and ledger row, and one fold's failure is never another's."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import pytest

from contextfold.errors import ConflictError, StorageError
from contextfold.messages import Message
from contextfold.stores.base import FoldCommit, LedgerEntry, PreparedMessage, Retention
from contextfold.stores.postgres import PostgresStore
from contextfold.testing import check_invariant

from .conftest import fresh_schema

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)
SESSIONS = 30


def _msgs(sid: str) -> list[PreparedMessage]:
    # every third message carries a client id: with delete retention it stays as a tombstone
    return [
        PreparedMessage(
            Message(role="user", content=f"{sid} {i}", id=f"{sid}-{i}" if i % 3 == 0 else None),
            2 + i,
        )
        for i in range(6)
    ]


def _fold(sid: str, i: int, version: int = 0) -> tuple[FoldCommit, LedgerEntry]:
    hi = 2 + i % 3  # folds of different widths
    commit = FoldCommit(sid, version, 1, hi, f"summary of {sid}", 5 + i)
    entry = LedgerEntry(sid, "committed", "test", 1, hi, hi, 10, 5 + i, 7, 3, 1, "m",
                        1.5, started_at=T0, key=f"k-{sid}")
    return commit, entry


async def _seeded(pg_url: str, n: int) -> tuple[PostgresStore, list[str]]:
    store = PostgresStore(pg_url, schema=fresh_schema())
    await store.setup()
    sids = [f"s{i}" for i in range(n)]
    for sid in sids:
        await store.append(sid, _msgs(sid), T0)
    return store, sids


async def _state(store: PostgresStore, sid: str) -> tuple[Any, ...]:
    summary = await store.summary(sid)
    versions = await store.summary_versions(sid)
    ledger = await store.ledger(sid, limit=None)
    return (
        await store.stats(sid),
        summary and (summary.text, summary.through_seq, summary.version, summary.tokens),
        [(v.version, v.lo, v.through_seq, v.at_seq, v.tokens, v.live_tokens, v.text)
         for v in versions],
        [(m.seq, m.message, m.tokens, m.folded) for m in await store.messages(sid)],
        [(r.outcome, r.lo, r.hi, r.summary_tokens, r.key) for r in ledger],
    )


async def _commit_all(store: PostgresStore, bad: set[str], one_by_one: bool) -> dict[str, str]:
    await store.setup()
    sids = [f"s{i:02d}" for i in range(SESSIONS)]
    for sid in sids:
        await store.append(sid, _msgs(sid), T0)

    async def one(i: int, sid: str) -> str:
        commit, entry = _fold(sid, i, version=7 if sid in bad else 0)
        try:
            await store.commit_fold(commit, entry)
        except ConflictError:
            return "conflict"
        return "committed"

    if one_by_one:
        results = [await one(i, sid) for i, sid in enumerate(sids)]
    else:  # all handed over in the same tick: they go out in groups
        results = await asyncio.gather(*(one(i, sid) for i, sid in enumerate(sids)))
    return dict(zip(sids, results, strict=True))


@pytest.mark.parametrize("retention", ["archive", "delete"])
def test_grouped_commits_write_what_single_commits_write(
    pg_url: str, retention: Retention
) -> None:
    bad = {"s03", "s11", "s12", "s29"}  # stale summary version: each must conflict alone

    async def main() -> None:
        grouped = PostgresStore(pg_url, schema=fresh_schema(), retention=retention)
        single = PostgresStore(pg_url, schema=fresh_schema(), retention=retention)
        many: list[int] = []
        original = grouped._commit_many

        async def counting(params: dict[str, Any]) -> set[str]:
            many.append(len(params["sid"]))
            return await original(params)

        grouped._commits._many = counting
        try:
            got = await _commit_all(grouped, bad, one_by_one=False)
            want = await _commit_all(single, bad, one_by_one=True)
            assert got == want
            assert {s for s, r in got.items() if r == "conflict"} == bad
            assert many and max(many) > 1  # the commits really went out in groups
            for sid in got:
                assert await _state(grouped, sid) == await _state(single, sid)
                await check_invariant(grouped, sid)
        finally:
            await grouped.close()
            await single.close()

    asyncio.run(main())


def test_a_group_that_fails_as_a_whole_commits_its_folds_one_by_one(pg_url: str) -> None:
    """A summary PostgreSQL cannot store (a NUL character) fails the group's statement;
    that fold alone gets the error, the others in its group commit."""

    async def main() -> None:
        store, sids = await _seeded(pg_url, 8)
        try:

            async def one(i: int, sid: str) -> str:
                commit, entry = _fold(sid, i)
                if sid == "s5":
                    commit = FoldCommit(sid, 0, 1, 2, "bad \x00 summary", 5)
                try:
                    await store.commit_fold(commit, entry)
                except StorageError:
                    return "failed"
                return "committed"

            results = await asyncio.gather(*(one(i, s) for i, s in enumerate(sids)))
            assert results == ["failed" if s == "s5" else "committed" for s in sids]
            assert await store.summary("s5") is None
            for sid in sids:
                await check_invariant(store, sid)
                committed = [r for r in await store.ledger(sid) if r.outcome == "committed"]
                assert len(committed) == (0 if sid == "s5" else 1)
        finally:
            await store.close()

    asyncio.run(main())


def test_lease_fence_holds_inside_a_group(pg_url: str) -> None:
    """Grouped commits fenced by leases: the ones whose lease was taken over are refused."""

    async def main() -> None:
        store, sids = await _seeded(pg_url, 10)
        try:
            leases = {x.session_id: x for x in await store.claim_many(sids, "w1", lease_seconds=30)}
            stale = {"s2", "s7"}
            for sid in stale:  # expire and re-take: the first owner's token is stale
                await store.release(leases[sid], due_at=None, as_of_seq=-1)
                assert await store.claim(sid, "w2", lease_seconds=30) is not None

            async def one(i: int, sid: str) -> str:
                commit, entry = _fold(sid, i)
                fenced = FoldCommit(sid, 0, commit.lo, commit.hi, commit.text, commit.tokens,
                                    leases[sid])
                try:
                    await store.commit_fold(fenced, entry)
                except ConflictError as exc:
                    assert "lease" in str(exc)
                    return "fenced"
                return "committed"

            results = await asyncio.gather(*(one(i, s) for i, s in enumerate(sids)))
            assert results == ["fenced" if s in stale else "committed" for s in sids]
            for sid in sids:
                await check_invariant(store, sid)
        finally:
            await store.close()

    asyncio.run(main())
