"""Conformance tests for the due mark an append writes (part of :class:`StoreConformance`).

``append(..., due=check)`` writes the mark ``check`` asks for in the append's own
transaction, exactly as ``mark_due(session, due_at, as_of_seq=<the append's last seq>)``
would: a newer mark still wins, a worker's release as of older stats does not clear it,
None leaves the mark alone, and a check that raises leaves nothing of the append.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, TypeVar

from ..messages import Message
from ..policy import SessionStats
from ..stores.base import PreparedMessage, Retention, Store

__all__ = ["DueMarkConformance"]

T = TypeVar("T")
PAST = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
FUTURE = datetime(2999, 1, 1, tzinfo=timezone.utc)


class PolicyBroke(Exception):
    """What a due check that fails raises in these tests."""


def _user(text: str, id: str | None = None) -> PreparedMessage:
    return PreparedMessage(Message(role="user", content=text, id=id), 10)


def _batch(prefix: str, n: int) -> list[PreparedMessage]:
    return [_user(f"{prefix}{i}", id=f"{prefix}{i}") for i in range(n)]


class DueMarkConformance:
    """The due check of an append, as tests (mixed into StoreConformance)."""

    if TYPE_CHECKING:
        def _run(
            self, body: Callable[[Store], Awaitable[T]], retention: Retention = "archive"
        ) -> T: ...

    def test_append_writes_the_due_mark_as_of_its_last_seq(self) -> None:
        async def body(store: Store) -> None:
            seen: list[SessionStats] = []

            def due(stats: SessionStats) -> datetime:
                seen.append(stats)
                return PAST

            result = await store.append("s", _batch("a", 3), PAST, due=due)
            assert [s.last_seq for s in seen] == [3] and seen[0] == result.stats
            assert await store.list_due() == [("s", PAST)]
            await store.mark_due("s", None, as_of_seq=2)  # older stats: ignored
            assert await store.list_due() == [("s", PAST)]
            await store.mark_due("s", None, as_of_seq=3)  # same stats: replaces it
            assert await store.list_due() == []

        self._run(body)

    def test_none_leaves_the_mark_and_a_newer_mark_wins(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", _batch("a", 2), PAST)
            await store.mark_due("s", FUTURE, as_of_seq=2)
            await store.append("s", _batch("b", 2), PAST, due=lambda stats: None)
            assert await store.list_due() == [("s", FUTURE)]
            await store.mark_due("s", None, as_of_seq=100)  # a mark from newer stats
            await store.append("s", _batch("c", 2), PAST, due=lambda stats: PAST)
            assert await store.list_due() == []
            assert (await store.stats("s")).last_seq == 6  # type: ignore[union-attr]

        self._run(body)

    def test_release_as_of_older_stats_keeps_the_appends_mark(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", _batch("a", 4), PAST, due=lambda stats: PAST)
            (lease,) = await store.claim_due("w", limit=1, lease_seconds=30)
            # a fold worker is busy; an append meanwhile makes the session due again
            await store.append("s", _batch("b", 2), PAST, due=lambda stats: PAST)
            assert await store.release(lease, due_at=None, as_of_seq=4)
            assert await store.list_due() == [("s", PAST)]
            (again,) = await store.claim_due("w", limit=1, lease_seconds=30)
            assert again.token > lease.token

        self._run(body)

    def test_a_resent_batch_marks_as_of_the_stored_last_seq(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", _batch("a", 3), PAST)
            result = await store.append("s", _batch("a", 3), PAST, due=lambda stats: PAST)
            assert result.duplicates == 3 and result.stats.last_seq == 3
            assert await store.list_due() == [("s", PAST)]
            await store.mark_due("s", None, as_of_seq=3)
            assert await store.list_due() == []

        self._run(body)

    def test_a_due_check_that_raises_leaves_nothing_of_the_append(self) -> None:
        async def body(store: Store) -> None:
            def broken(stats: SessionStats) -> datetime:
                raise PolicyBroke("the policy failed")

            for attempt in range(2):  # a new session, then an existing one
                before = await store.stats("s")
                try:
                    await store.append("s", _batch(f"x{attempt}", 2), PAST, due=broken)
                except PolicyBroke:
                    pass
                else:
                    raise AssertionError("the due check's error was swallowed")
                assert await store.stats("s") == before
                assert await store.list_due() == []
                await store.append("s", _batch(f"x{attempt}", 2), PAST)  # retried: stored
                assert (await store.stats("s")).last_seq == 2 * (attempt + 1)  # type: ignore[union-attr]
            assert [m.message.id for m in await store.messages("s")] == [
                "x00", "x01", "x10", "x11"]

        self._run(body)
