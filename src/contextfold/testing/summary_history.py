"""Conformance tests for summary versions (part of :class:`StoreConformance`).

What the inspector relies on: every committed fold leaves one version row (numbers always,
text only when the store keeps summary history), a conflicting fold leaves none, pages of
versions come back in order, and deleting a session deletes its versions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, TypeVar

from ..errors import ConflictError
from ..messages import Message
from ..stores.base import (
    FoldCommit,
    LedgerEntry,
    PreparedMessage,
    Retention,
    Store,
    SummaryVersion,
    keeps_summary_text,
)

__all__ = ["SummaryHistoryConformance"]

T = TypeVar("T")
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _msgs(n: int, start: int = 0) -> list[PreparedMessage]:
    return [PreparedMessage(Message(role="user", content=f"m{start + i}"), 10) for i in range(n)]


def _entry(sid: str, lo: int, hi: int) -> LedgerEntry:
    return LedgerEntry(sid, "committed", lo=lo, hi=hi, messages_folded=hi - lo + 1, started_at=T0)


async def _fold(store: Store, sid: str, version: int, lo: int, hi: int, text: str) -> None:
    commit = FoldCommit(sid, version, lo, hi, text, 5 + version)
    await store.commit_fold(commit, _entry(sid, lo, hi))


class SummaryHistoryConformance:
    """``summary_versions`` and the ``summary_history`` switch, as tests."""

    if TYPE_CHECKING:

        def _run(
            self, body: Callable[[Store], Awaitable[T]], retention: Retention = "archive"
        ) -> T: ...

    def _check_versions(self, retention: Retention, history: bool | None) -> None:
        async def body(store: Store) -> None:
            store.summary_history = history
            keeps = keeps_summary_text(store)
            assert keeps == (history if history is not None else retention == "archive")
            assert await store.summary_versions("s") == []
            await store.append("s", _msgs(6), T0)
            await _fold(store, "s", 0, 1, 2, "first")
            await store.append("s", _msgs(2, 6), T0)
            await _fold(store, "s", 1, 3, 5, "second")
            await store.append("t", _msgs(3), T0)
            await _fold(store, "t", 0, 1, 1, "other")
            versions = await store.summary_versions("s")
            assert versions == [
                SummaryVersion("s", 1, 1, 2, 6, 5, 40, "first" if keeps else None, T0),
                SummaryVersion("s", 2, 3, 5, 8, 6, 30, "second" if keeps else None, T0),
            ]
            assert await store.summary_versions("s", after_version=1) == versions[1:]
            assert await store.summary_versions("s", limit=1) == versions[:1]
            assert await store.summary_versions("s", after_version=2) == []
            numbers = await store.summary_versions("s", text=False)
            assert [v.text for v in numbers] == [None, None]
            assert [(v.version, v.at_seq, v.tokens) for v in numbers] == [(1, 6, 5), (2, 8, 6)]
            assert [v.text for v in await store.summary_versions("t")] == [
                "other" if keeps else None
            ]
            # the newest version is always the current summary
            current = await store.summary("s")
            assert current is not None
            assert (current.version, current.through_seq, current.tokens) == (2, 5, 6)

        self._run(body, retention)

    def test_summary_versions_archive_keep_text(self) -> None:
        self._check_versions("archive", None)

    def test_summary_versions_delete_keep_numbers_only(self) -> None:
        self._check_versions("delete", None)

    def test_summary_history_is_configurable(self) -> None:
        self._check_versions("archive", False)
        self._check_versions("delete", True)

    def test_conflicting_fold_leaves_no_version(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", _msgs(4), T0)
            await _fold(store, "s", 0, 1, 2, "first")
            try:
                await _fold(store, "s", 0, 1, 3, "stale")
            except ConflictError:
                pass
            else:
                raise AssertionError("a stale fold committed")
            assert [v.text for v in await store.summary_versions("s")] == ["first"]

        self._run(body)

    def test_versions_go_with_the_session(self) -> None:
        async def body(store: Store) -> None:
            await store.append("s", _msgs(4), T0)
            await _fold(store, "s", 0, 1, 2, "first")
            await store.append("t", _msgs(2), T0)
            await _fold(store, "t", 0, 1, 1, "kept")
            assert await store.delete("s")
            assert await store.summary_versions("s") == []
            await store.append("s", _msgs(3), T0)
            await _fold(store, "s", 0, 1, 1, "new life")
            assert [(v.version, v.text) for v in await store.summary_versions("s")] == [
                (1, "new life")
            ]
            assert [v.text for v in await store.summary_versions("t")] == ["kept"]

        self._run(body)
