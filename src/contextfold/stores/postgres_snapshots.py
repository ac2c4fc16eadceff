"""Snapshots of PostgreSQL sessions from the rows of one statement: totals, summary and
live messages read together (:data:`~.postgres_schema.SNAPSHOT_AFTER` for one session,
only the live rows its :class:`~.live_cache.LiveCache` lacks; ``SNAPSHOT_MANY`` for a
``fold_many`` wave). Rows are (session columns, summary text, summary time, seq, body,
tokens[, generation]); a session without live rows is one row with no seq."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import StoredMessage
from .base import Snapshot, Summary
from .live_cache import LiveCache
from .rows import MessageDecoder, session_stats

__all__ = ["snapshot_from_rows", "snapshots_from_rows"]


def _head(row: Sequence[Any]) -> tuple[Any, Summary | None]:
    stats = session_stats(row)
    summary = None
    if row[10] is not None:
        summary = Summary(row[10], stats.through_seq, stats.summary_version,
                          stats.summary_tokens, row[11])
    return stats, summary


def snapshot_from_rows(
    rows: Sequence[Sequence[Any]], after: int, live: LiveCache, decoder: MessageDecoder
) -> Snapshot | None:
    """The snapshot of one session read with rows above ``after`` (not empty), its live
    list merged with ``live``'s; None when they do not make it up: read again from 0."""
    first = rows[0]
    sid = first[0]
    stats, summary = _head(first)
    decode = decoder.decode
    window = live.merge(sid, first[15], stats, after, (
        decode(sid, r[12], r[13], r[14]) for r in rows if r[12] is not None))
    return None if window is None else Snapshot(stats, summary, window)


def snapshots_from_rows(
    rows: Sequence[Sequence[Any]], decoder: MessageDecoder
) -> dict[str, Snapshot]:
    """The snapshots of the sessions whose rows these are (grouped by session)."""
    out: dict[str, Snapshot] = {}
    lives: dict[str, list[StoredMessage]] = {}
    for row in rows:
        sid = row[0]
        if sid not in out:
            stats, summary = _head(row)
            out[sid] = Snapshot(stats, summary, lives.setdefault(sid, []))
        if row[12] is not None:
            lives[sid].append(decoder.decode(sid, row[12], row[13], row[14]))
    return out
