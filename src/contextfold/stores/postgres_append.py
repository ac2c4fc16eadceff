"""The PostgreSQL store's append: one transaction that locks the session's row (creating
it on the first append), adds the new messages with their full-text ``search`` column
(:mod:`.postgres_search`) and moves the running totals.

Appends to one session run one at a time (the row lock). Within a process at most two of
them hold a pooled connection (:class:`AppendTurns`): the one holding the lock and the next,
already waiting for it in the database; the rest wait here. An append waiting for the row
lock held a connection the whole time, so a few busy sessions' appends filled the pool and
every other request — a context read, an append to a quiet session — waited for a
connection behind them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from .base import AppendResult, DueCheck, PreparedMessage, plan_append
from .postgres_leases import mark_due
from .postgres_schema import SESSION_COLS
from .rows import MessageDecoder, session_stats
from .search import index_text

__all__ = ["AppendTurns", "NothingToWrite", "append_messages", "lock_session"]


class AppendTurns:
    """At most ``AT_ONCE`` appends per session and event loop of this process hold a
    connection; a session's entry lives while some append to it runs or waits."""

    AT_ONCE = 2

    def __init__(self) -> None:
        self._turns: dict[tuple[object, str], tuple[asyncio.Semaphore, int]] = {}

    @asynccontextmanager
    async def turn(self, session_id: str) -> AsyncIterator[None]:
        key = (asyncio.get_running_loop(), session_id)
        lock, users = self._turns.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Semaphore(self.AT_ONCE)
        self._turns[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._turns[key]
            if users <= 1:
                del self._turns[key]
            else:
                self._turns[key] = (lock, users - 1)


class NothingToWrite(Exception):
    """Rolls back the placeholder session row of an append that wrote nothing."""

    def __init__(self, result: AppendResult) -> None:
        super().__init__("nothing to write")
        self.result = result


async def lock_session(conn: Any, session_id: str, cols: str) -> Any:
    """The session's row (``cols``), locked for the transaction; None if there is none."""
    cur = await conn.execute(
        f"SELECT {cols} FROM sessions WHERE session_id = %s FOR UPDATE", (session_id,)
    )
    return await cur.fetchone()


async def append_messages(
    conn: Any,
    decoder: MessageDecoder,
    search_config: str,
    session_id: str,
    items: Sequence[PreparedMessage],
    now: datetime,
    due: DueCheck | None = None,
) -> AppendResult:
    """Append ``items`` to ``session_id`` in the caller's transaction (messages whose
    client id is stored already are not written again), with the due mark ``due`` asks
    for (see :data:`~.base.DueCheck`). Raises :class:`NothingToWrite` when nothing was
    new and the session did not exist: the caller rolls back."""
    row = await lock_session(conn, session_id, SESSION_COLS)
    if row is None:  # a first append; a concurrent one may be creating it too
        await conn.execute(
            "INSERT INTO sessions (session_id, last_activity, created_at) "
            "VALUES (%s, %s, %s) ON CONFLICT (session_id) DO NOTHING",
            (session_id, now, now),
        )
        row = await lock_session(conn, session_id, SESSION_COLS)
    stats = session_stats(row)
    wanted = [i.message.id for i in items if i.message.id is not None]
    known: dict[str, int] = {}
    if wanted and stats.last_seq:
        cur = await conn.execute(
            "SELECT client_id, seq FROM messages WHERE session_id = %s "
            "AND client_id = ANY(%s)",
            (session_id, wanted),
        )
        known = {cid: seq for cid, seq in await cur.fetchall()}
    plan = plan_append(stats, items, known, now)
    if not plan.fresh:
        if stats.last_seq == 0:  # nothing stored: do not leave an empty session
            raise NothingToWrite(plan.result)
        await _mark(conn, session_id, plan.result, due)
        return plan.result
    fresh, new = plan.fresh, plan.result.stats
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO messages (session_id, seq, client_id, role, body, tokens, "
            "created_at, search) VALUES (%s, %s, %s, %s, %s, %s, %s, "
            "to_tsvector(%s::regconfig, %s))",
            [
                (
                    session_id,
                    s,
                    i.message.id,
                    i.message.role,
                    decoder.encode(session_id, s, i.message, i.tokens),
                    i.tokens,
                    now,
                    search_config,
                    index_text(i.message),
                )
                for s, i in fresh
            ],
        )
    added = new.live_tokens - stats.live_tokens
    await conn.execute(
        "UPDATE sessions SET last_seq = %s, live_count = live_count + %s, "
        "live_tokens = live_tokens + %s, pending_calls = %s, last_activity = %s "
        "WHERE session_id = %s",
        (new.last_seq, len(fresh), added, json.dumps(new.pending_calls), now, session_id),
    )
    await _mark(conn, session_id, plan.result, due)
    return plan.result


async def _mark(conn: Any, session_id: str, result: AppendResult, due: DueCheck | None) -> None:
    """Write the due mark ``due`` asks for after ``result`` (as of its last seq)."""
    if due is None:
        return
    due_at = due(result.stats)
    if due_at is not None:
        await mark_due(conn, session_id, due_at, result.stats.last_seq)
