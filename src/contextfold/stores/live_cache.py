"""Live messages kept between snapshots of a session, so a context read costs its new rows.

Stored messages never change once written (a fold only moves the session's ``through_seq``
cursor past them, or deletes them with ``retention="delete"``), and a seq is never written
twice in one generation of a session (the sessions row's ``generation``, new each time
the session is created: a deleted and re-created one has another). So the live list of
the last snapshot stays right for a later, or an earlier, one of the same generation:
drop what was folded since (a bisection), add the rows appended since (``seq`` above the
cached ``last_seq``) — whichever process wrote them. The cached list is only appended to
(a fold starts a new one), so a snapshot gets a :class:`~contextfold.stores.base.LiveWindow`
on it instead of a copy. Both SQL stores keep one per store object.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from operator import attrgetter

from ..bounded import LRU
from ..messages import StoredMessage
from ..policy import SessionStats
from .base import LiveWindow

__all__ = ["LiveCache"]


class LiveCache:
    """The live lists of the ``size`` most recently read sessions."""

    def __init__(self, size: int = 1024) -> None:
        self._lists: LRU[str, tuple[int | None, int, list[StoredMessage]]] = LRU(size)

    def after(self, session_id: str) -> int:
        """Read the session's rows with ``seq`` above this (0: all its live rows)."""
        cached = self._lists.get(session_id)
        return cached[1] if cached is not None else 0

    def merge(
        self, session_id: str, generation: int | None, stats: SessionStats, after: int,
        rows: Iterable[StoredMessage],
    ) -> LiveWindow | None:
        """The live window of a snapshot (``stats``, of the session's ``generation``: None
        for a PostgreSQL session made before generations, never for one made since) from
        the cached list and ``rows`` (its live rows with ``seq`` above ``after``); None
        when they do not make it up (another generation, a fold or rows the cache does not
        hold): read all its live rows again (``after`` 0).

        Reads of one session overlap (several requests, one process): the list may have
        moved since ``after`` was taken from it. The window is seqs ``through_seq + 1 ..
        last_seq``, every one once, so cached rows up to the list's last seq and read rows
        above it make it up whenever they join without a gap; a read older than the list
        takes its part of the list and leaves the list as it is."""
        cached = self._lists.get(session_id)
        if not after:
            live = list(rows)
            self._keep(session_id, generation, stats.last_seq, live)
            return LiveWindow(live, len(live))
        if cached is None or cached[0] != generation:
            self._lists.pop(session_id, None)
            return None
        last, old = cached[1], cached[2]
        lo, hi = stats.through_seq, stats.last_seq
        k = bisect_right(old, lo, key=attrgetter("seq"))
        if hi < last:  # an older snapshot than the list's: its prefix, the list unchanged
            n = bisect_right(old, hi, key=attrgetter("seq"))
            live = old[k:n]
            return LiveWindow(live, len(live)) if _spans(live, lo, hi) else None
        live = old[k:] if k else old
        start = len(live)
        live.extend(r for r in rows if r.seq > last)
        if not _spans(live, lo, hi):
            del live[start:]  # (the list itself when ``k`` is 0: leave it as it was)
            return None
        self._keep(session_id, generation, hi, live)
        return LiveWindow(live, len(live))

    def _keep(self, session_id: str, generation: int | None, last: int,
              live: list[StoredMessage]) -> None:
        self._lists.put(session_id, (generation, last, live))

    def forget(self, session_id: str) -> None:
        self._lists.pop(session_id, None)


def _spans(live: list[StoredMessage], lo: int, hi: int) -> bool:
    """True when ``live`` is exactly seqs ``lo + 1 .. hi`` (sorted, so its ends and its
    length tell)."""
    if not live:
        return hi <= lo
    return live[0].seq == lo + 1 and live[-1].seq == hi and len(live) == hi - lo
