"""Live messages kept between snapshots of a session, so a context read costs its new rows.

Stored messages never change once written (a fold only moves the session's ``through_seq``
cursor past them, or deletes them with ``retention="delete"``), so the live list of the last
snapshot stays right for a later one with the same session ``created_at`` (not a deleted and
re-created session): drop what was folded since (a bisection), add the rows appended since
(``seq`` above the cached ``last_seq``) — whichever process wrote them. The cached list is
only appended to (a fold starts a new one), so a snapshot gets a
:class:`~contextfold.stores.base.LiveWindow` on it instead of a copy.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

from ..messages import StoredMessage
from ..policy import SessionStats
from .base import LiveWindow

__all__ = ["LiveCache"]


class LiveCache:
    """The live lists of the ``size`` most recently read sessions."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._lists: OrderedDict[str, tuple[Any, int, list[StoredMessage]]] = OrderedDict()

    def after(self, session_id: str) -> int:
        """Read the session's rows with ``seq`` above this (0: all its live rows)."""
        cached = self._lists.get(session_id)
        return cached[1] if cached is not None else 0

    def merge(
        self, session_id: str, created: Any, stats: SessionStats, after: int,
        rows: Iterable[StoredMessage],
    ) -> LiveWindow | None:
        """The live window from the cached list and ``rows`` (the live rows with ``seq``
        above ``after``); None when the cache no longer fits the session (re-created, or
        read with a stale ``after``): read all its live rows again (``after`` 0)."""
        cached = self._lists.get(session_id)
        live: list[StoredMessage] = []
        if after:
            if cached is None or cached[0] != created or cached[1] != after or (
                    after > stats.last_seq):
                self._lists.pop(session_id, None)
                return None
            old = cached[2]
            k = bisect_right(old, stats.through_seq, key=attrgetter("seq"))
            live = old[k:] if k else old
        live.extend(rows)
        self._lists[session_id] = (created, stats.last_seq, live)
        self._lists.move_to_end(session_id)
        if len(self._lists) > self.size:
            self._lists.popitem(last=False)
        return LiveWindow(live, len(live))

    def forget(self, session_id: str) -> None:
        self._lists.pop(session_id, None)
