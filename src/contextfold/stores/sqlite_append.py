"""The SQLite store's append: one transaction that adds a session's new messages and
moves its running totals (the session row is created by its first append, with the
session's search key). The full-text index is not written here: the fold commit indexes
the messages it folds (see :mod:`.sqlite_search`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from ..policy import SessionStats
from .base import AppendResult, DueCheck, PreparedMessage, plan_append
from .rows import MessageDecoder, encode_time
from .sqlite_schema import SESSION_COLS, epoch, mark_due, session_stats

__all__ = ["append_messages"]


def append_messages(
    conn: sqlite3.Connection,
    decoder: MessageDecoder,
    session_id: str,
    items: Sequence[PreparedMessage],
    now: datetime,
    due: DueCheck | None = None,
) -> AppendResult:
    """Append ``items`` to ``session_id`` in the caller's write transaction (messages
    whose client id is stored already are not written again), with the due mark ``due``
    asks for (see :data:`~.base.DueCheck`)."""
    row = conn.execute(
        f"SELECT {SESSION_COLS} FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    stats = session_stats(row) if row else SessionStats(session_id=session_id)
    wanted = [i.message.id for i in items if i.message.id is not None]
    known: dict[str, int] = {}
    if wanted and row is not None:
        marks = ", ".join("?" for _ in wanted)
        known = dict(
            conn.execute(
                "SELECT client_id, seq FROM messages WHERE session_id = ? "
                f"AND client_id IN ({marks})",
                (session_id, *wanted),
            ).fetchall()
        )
    plan = plan_append(stats, items, known, now)
    if not plan.fresh:
        if row is not None:
            _mark(conn, session_id, plan.result, due)
        return plan.result
    fresh, new = plan.fresh, plan.result.stats
    stamp = encode_time(now)
    conn.executemany(
        "INSERT INTO messages (session_id, seq, client_id, role, body, tokens, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                session_id,
                s,
                i.message.id,
                i.message.role,
                decoder.encode(session_id, s, i.message, i.tokens),
                i.tokens,
                stamp,
            )
            for s, i in fresh
        ],
    )
    added = new.live_tokens - stats.live_tokens
    due_at = due(new) if due is not None else None
    if row is None:
        (key,) = conn.execute(
            "SELECT coalesce(max(search_key), 0) + 1 FROM sessions"
        ).fetchone()
        conn.execute(
            "INSERT INTO sessions (session_id, last_seq, live_count, live_tokens, "
            "pending_calls, last_activity, created_at, search_key, due_at, due_seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                new.last_seq,
                len(fresh),
                added,
                _calls_json(new.pending_calls),
                stamp,
                stamp,
                key,
                epoch(due_at),
                -1 if due_at is None else new.last_seq,
            ),
        )
        return plan.result
    values = {"sid": session_id, "last": new.last_seq, "count": len(fresh), "tokens": added,
              "calls": _calls_json(new.pending_calls), "at": stamp, "due": epoch(due_at)}
    conn.execute(
        "UPDATE sessions SET last_seq = :last, live_count = live_count + :count, "
        "live_tokens = live_tokens + :tokens, pending_calls = :calls, last_activity = :at"
        # the due mark, as mark_due sets it (unless a newer one is there)
        + ("" if due_at is None else
           ", due_at = CASE WHEN due_seq <= :last THEN :due ELSE due_at END"
           ", due_seq = CASE WHEN due_seq <= :last THEN :last ELSE due_seq END")
        + " WHERE session_id = :sid",
        values,
    )
    return plan.result


def _calls_json(calls: Sequence[str]) -> str:
    """The pending tool call ids as stored (JSON; most turns have none)."""
    return json.dumps(list(calls)) if calls else "[]"


def _mark(
    conn: sqlite3.Connection, session_id: str, result: AppendResult, due: DueCheck | None
) -> None:
    """Write the due mark ``due`` asks for after ``result`` (as of its last seq)."""
    if due is None:
        return
    due_at = due(result.stats)
    if due_at is not None:
        mark_due(conn, session_id, due_at, result.stats.last_seq)
