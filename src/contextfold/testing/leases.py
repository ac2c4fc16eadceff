"""Conformance tests for due sessions and leases (part of :class:`StoreConformance`).

What workers rely on: a due mark from older stats never hides a newer one, concurrent
claimers never get the same session, and a lease that expired or was taken over cannot
commit a fold (fencing) — and changes nothing when it tries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, TypeVar

from ..errors import ConflictError
from ..messages import Message
from ..stores.base import FoldCommit, LedgerEntry, PreparedMessage, Retention, Store

__all__ = ["LeaseConformance"]

T = TypeVar("T")
PAST = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
FUTURE = datetime(2999, 1, 1, tzinfo=timezone.utc)


def _user(text: str) -> PreparedMessage:
    return PreparedMessage(Message(role="user", content=text), 10)


async def _session(store: Store, sid: str, n: int = 4) -> None:
    await store.append(sid, [_user(f"{sid}{i}") for i in range(n)], PAST)


class LeaseConformance:
    """Due marks, claims, leases and fencing, as tests (mixed into StoreConformance)."""

    if TYPE_CHECKING:
        def _run(
            self, body: Callable[[Store], Awaitable[T]], retention: Retention = "archive"
        ) -> T: ...

    def test_claim_takes_due_unleased_sessions_oldest_first(self) -> None:
        async def body(store: Store) -> None:
            for i, sid in enumerate(["a", "b", "c", "later", "never"]):
                await _session(store, sid)
                if sid != "never":
                    due = FUTURE if sid == "later" else PAST + timedelta(seconds=-i)
                    await store.mark_due(sid, due, as_of_seq=4)
            await store.mark_due("ghost", PAST, as_of_seq=1)  # no such session: ignored
            assert [s for s, _ in await store.list_due()] == ["c", "b", "a", "later"]
            first = await store.claim_due("w1", limit=2, lease_seconds=30)
            assert [(x.session_id, x.owner, x.token) for x in first] == [("c", "w1", 1),
                                                                          ("b", "w1", 1)]
            assert first[0].expires_at > datetime.now(timezone.utc) + timedelta(seconds=20)
            second = await store.claim_due("w2", limit=10, lease_seconds=30)
            assert [x.session_id for x in second] == ["a"]
            assert await store.claim_due("w3", limit=10, lease_seconds=30) == []

        self._run(body)

    def test_claim_one_session_excludes_other_folders(self) -> None:
        async def body(store: Store) -> None:
            assert await store.claim("ghost", "w1", lease_seconds=30) is None
            await _session(store, "s")
            first = await store.claim("s", "w1", lease_seconds=30)  # not due: still leased
            assert first is not None and (first.owner, first.token) == ("w1", 1)
            assert await store.claim("s", "w2", lease_seconds=30) is None
            await store.mark_due("s", PAST, as_of_seq=4)
            assert await store.claim_due("w3", limit=5, lease_seconds=30) == []
            assert await store.release(first, due_at=None, as_of_seq=-1)
            assert [s for s, _ in await store.list_due()] == ["s"]  # mark kept
            second = await store.claim("s", "w2", lease_seconds=0.2)
            assert second is not None and second.token == 2
            await asyncio.sleep(0.3)  # expired: another folder may take it, fencing the old
            third = await store.claim("s", "w1", lease_seconds=30)
            assert third is not None and third.token == 3
            assert await store.renew(second, lease_seconds=30) is None

        self._run(body)

    def test_wave_claims_snapshots_and_releases(self) -> None:
        async def body(store: Store) -> None:
            for sid in ("a", "b", "c"):
                await _session(store, sid, 3)
            held = await store.claim("b", "other", lease_seconds=30)
            assert held is not None
            got = await store.claim_many(["a", "b", "c", "ghost"], "w1", lease_seconds=30)
            assert sorted((x.session_id, x.owner) for x in got) == [("a", "w1"), ("c", "w1")]
            snaps = await store.snapshots(["a", "c", "ghost"])
            assert sorted(snaps) == ["a", "c"]
            for sid, snap in snaps.items():
                assert snap == await store.snapshot(sid)
                assert [m.seq for m in snap.live] == [1, 2, 3]
            assert await store.snapshots([]) == {}
            await store.release_many([*got, held])
            # every listed lease that was current is gone: anyone may claim again
            again = await store.claim_many(["a", "b", "c"], "w2", lease_seconds=30)
            assert sorted(x.session_id for x in again) == ["a", "b", "c"]
            await store.release_many(got)  # stale leases: nothing happens
            assert await store.claim("a", "w3", lease_seconds=30) is None

        self._run(body)

    def test_older_mark_never_overwrites_newer(self) -> None:
        async def body(store: Store) -> None:
            await _session(store, "s")
            await store.mark_due("s", FUTURE, as_of_seq=4)
            await store.mark_due("s", PAST, as_of_seq=3)
            assert await store.list_due() == [("s", FUTURE)]
            await store.mark_due("s", PAST, as_of_seq=4)
            assert await store.list_due() == [("s", PAST)]
            await store.mark_due("s", None, as_of_seq=5)
            assert await store.list_due() == []

        self._run(body)

    def test_release_ends_lease_and_keeps_newer_marks(self) -> None:
        async def body(store: Store) -> None:
            await _session(store, "s")
            await store.mark_due("s", PAST, as_of_seq=4)
            (lease,) = await store.claim_due("w1", limit=5, lease_seconds=30)
            assert await store.release(lease, due_at=None, as_of_seq=4)
            assert await store.list_due() == []
            assert not await store.release(lease, due_at=PAST, as_of_seq=4)
            assert await store.list_due() == []

            await store.mark_due("s", PAST, as_of_seq=4)
            (lease,) = await store.claim_due("w1", limit=5, lease_seconds=30)
            assert lease.token == 2
            await store.append("s", [_user("meanwhile")], PAST)
            await store.mark_due("s", PAST, as_of_seq=5)
            assert await store.release(lease, due_at=None, as_of_seq=4)
            (again,) = await store.claim_due("w2", limit=5, lease_seconds=30)
            assert (again.session_id, again.owner, again.token) == ("s", "w2", 3)

        self._run(body)

    def test_expired_lease_is_reclaimed_and_fenced(self) -> None:
        async def body(store: Store) -> None:
            await _session(store, "s")
            await store.mark_due("s", PAST, as_of_seq=4)
            (old,) = await store.claim_due("w1", limit=1, lease_seconds=0.2)
            assert await store.claim_due("w2", limit=1, lease_seconds=30) == []
            await asyncio.sleep(0.3)
            (new,) = await store.claim_due("w2", limit=1, lease_seconds=30)
            assert (new.owner, new.token) == ("w2", old.token + 1)
            entry = LedgerEntry(session_id="s", outcome="committed", lo=1, hi=2,
                                messages_folded=2, started_at=PAST)
            before = (await store.stats("s"), await store.summary("s"), await store.ledger("s"))
            try:
                await store.commit_fold(FoldCommit("s", 0, 1, 2, "stale", 3, old), entry)
            except ConflictError:
                pass
            else:
                raise AssertionError("a worker whose lease was taken over committed")
            assert (await store.stats("s"), await store.summary("s"),
                    await store.ledger("s")) == before
            assert not await store.release(old, due_at=None, as_of_seq=4)
            fenced = LedgerEntry(session_id="s", outcome="committed", lo=1, hi=2,
                                 messages_folded=2, started_at=PAST, owner="w2", lease_token=2)
            summary = await store.commit_fold(FoldCommit("s", 0, 1, 2, "ok", 3, new), fenced)
            assert summary.through_seq == 2
            (row,) = await store.ledger("s")
            assert (row.owner, row.lease_token) == ("w2", 2)
            assert await store.release(new, due_at=None, as_of_seq=4)

        self._run(body)

    def test_revoked_leases_are_free_at_once_and_fenced(self) -> None:
        async def body(store: Store) -> None:
            owners = {"a": "srv1/fold-1/g1", "b": "srv1/fold-1/g1", "c": "srv1/fold-1/g2",
                      "d": "srv1/fold-10/g1", "e": "srv2/fold-1/g1"}
            leases = {}
            for sid, owner in owners.items():
                await _session(store, sid)
                await store.mark_due(sid, PAST, as_of_seq=4)
                (leases[sid],) = await store.claim_due(owner, limit=1, lease_seconds=30)
            # the dead owners of slot 1 of server srv1, but the live one (g2): a, b
            assert await store.revoke_leases("srv1/fold-1/", except_owner="srv1/fold-1/g2") == 2
            assert await store.revoke_leases("srv1/fold-1/", except_owner="srv1/fold-1/g2") == 0
            assert [s for s, _ in await store.list_due()] == sorted(owners)  # marks kept
            got = await store.claim_due("srv1/fold-1/g2", limit=10, lease_seconds=30)
            assert sorted((x.session_id, x.token) for x in got) == [("a", 3), ("b", 3)]
            old = leases["a"]
            entry = LedgerEntry(session_id="a", outcome="committed", lo=1, hi=2, started_at=PAST)
            try:
                await store.commit_fold(FoldCommit("a", 0, 1, 2, "zombie", 3, old), entry)
            except ConflictError:
                pass
            else:
                raise AssertionError("a fold of a revoked lease committed")
            assert await store.summary("a") is None
            assert await store.renew(old, lease_seconds=30) is None
            assert not await store.release(old, due_at=None, as_of_seq=4)
            # the live owner's, another slot's and another server's leases still hold
            for sid in ("c", "d", "e"):
                assert await store.renew(leases[sid], lease_seconds=30) is not None
            # revoked but unclaimed: fenced too (the token moved on)
            assert await store.revoke_leases("srv2/") == 1
            try:
                await store.commit_fold(FoldCommit("e", 0, 1, 2, "zombie", 3, leases["e"]),
                                        LedgerEntry(session_id="e", outcome="committed",
                                                    lo=1, hi=2, started_at=PAST))
            except ConflictError:
                pass
            else:
                raise AssertionError("a fold of a revoked, unclaimed lease committed")

        self._run(body)

    def test_expired_lease_cannot_commit_even_if_unclaimed(self) -> None:
        async def body(store: Store) -> None:
            await _session(store, "s")
            await store.mark_due("s", PAST, as_of_seq=4)
            (lease,) = await store.claim_due("w1", limit=1, lease_seconds=0.1)
            await asyncio.sleep(0.2)
            entry = LedgerEntry(session_id="s", outcome="committed", lo=1, hi=2, started_at=PAST)
            try:
                await store.commit_fold(FoldCommit("s", 0, 1, 2, "late", 3, lease), entry)
            except ConflictError:
                pass
            else:
                raise AssertionError("an expired lease committed")
            assert await store.summary("s") is None

        self._run(body)

    def test_renewed_lease_stays_ours_and_commits(self) -> None:
        async def body(store: Store) -> None:
            await _session(store, "s")
            await store.mark_due("s", PAST, as_of_seq=4)
            (lease,) = await store.claim_due("w1", limit=1, lease_seconds=0.3)
            renewed = await store.renew(lease, lease_seconds=30)
            assert renewed is not None and (renewed.owner, renewed.token) == ("w1", lease.token)
            assert renewed.expires_at > lease.expires_at + timedelta(seconds=20)
            await asyncio.sleep(0.4)
            assert await store.claim_due("w2", limit=1, lease_seconds=30) == []
            entry = LedgerEntry(session_id="s", outcome="committed", lo=1, hi=2, started_at=PAST)
            # the lease object the fold started with still commits: fencing is by token
            await store.commit_fold(FoldCommit("s", 0, 1, 2, "ok", 3, lease), entry)
            assert await store.release(lease, due_at=None, as_of_seq=4)
            assert await store.renew(lease, lease_seconds=30) is None  # released

            await store.mark_due("s", PAST, as_of_seq=4)
            (short,) = await store.claim_due("w1", limit=1, lease_seconds=0.1)
            await asyncio.sleep(0.2)
            assert await store.renew(short, lease_seconds=30) is None  # expired: too late

        self._run(body)

    def test_concurrent_claimers_never_share_a_session(self) -> None:
        async def body(store: Store) -> None:
            sids = [f"s{i:02d}" for i in range(24)]
            for sid in sids:
                await _session(store, sid, 1)
                await store.mark_due(sid, PAST, as_of_seq=1)
            batches = await asyncio.gather(*(
                store.claim_due(f"w{i}", limit=5, lease_seconds=30) for i in range(6)
            ))
            claimed = [lease.session_id for batch in batches for lease in batch]
            assert sorted(claimed) == sids

        self._run(body)
