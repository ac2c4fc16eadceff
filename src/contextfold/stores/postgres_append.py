"""The PostgreSQL store's append: one transaction that locks the session's row (creating
it on the first append), adds the new messages with their full-text ``search`` column
(:mod:`.postgres_search`) and moves the running totals.

Most appends take a shorter way (:func:`append_in_one_statement`): one statement
(:data:`FAST_APPEND`), with no transaction held open across round trips. The process plans
the append on the totals it last saw of the session (:class:`KnownStats`) — seqs,
sequence rules, new totals, the due mark — and the statement writes it only if the
session's row, locked, still holds exactly those totals and none of the batch's client
ids is stored; else it writes nothing and returns the row as it is, and the append is
planned again on that. A retried id, a first append, a batch the rules refuse, or totals
that moved twice go the transaction's way (which, once it holds the lock, writes new ids
through the same statement). The unique index on client ids stands behind the check: a
statement that would store an id twice fails whole.

Appends to one session run one at a time (the row lock). Within a process one at a time
holds a pooled connection (:class:`AppendTurns`); the rest wait here, and the next plans
on the totals the last one left, so within a process it is written at the first try. An
append waiting for the row lock held a connection the whole time, so a few busy sessions'
appends filled the pool and every other request — a context read, an append to a quiet
session — waited for a connection behind them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, NamedTuple

from ..bounded import LRU
from ..errors import ValidationError
from ..policy import SessionStats
from .base import AppendResult, DueCheck, PreparedMessage, plan_append
from .postgres_leases import mark_due
from .postgres_schema import SESSION_COLS
from .rows import MessageDecoder, encode_message, session_stats
from .search import index_text

__all__ = [
    "AppendTurns",
    "Encoded",
    "FastAppend",
    "KnownStats",
    "NothingToWrite",
    "append_in_one_statement",
    "append_messages",
    "encode_batch",
    "fast_append",
    "lock_session",
    "plan_fast_append",
]


class AppendTurns:
    """At most ``AT_ONCE`` appends per session and event loop of this process hold a
    connection; a session's entry lives while some append to it runs or waits."""

    AT_ONCE = 1

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
    new and the session did not exist: the caller rolls back. Once the row is locked, a
    batch of new messages is written by :data:`FAST_APPEND` planned on the row (one round
    trip; a batch over :data:`FAST_BATCH` only once its stored ids are looked up); else
    row by row, without the stored ones (which a large batch never counts)."""
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
    lookup = bool(wanted and stats.last_seq)
    known: dict[str, int] = {}
    if lookup and len(items) > FAST_BATCH:  # counted only once known to be new
        known = await _stored_ids(conn, session_id, wanted)
        lookup = False
    if not known:  # planned on the locked row, written in one statement unless stored
        encoded = encode_batch(items)
        fast = plan_fast_append(stats, encoded, search_config, items, now, due)
        if fast is not None:
            found = await fast_append(conn, fast.params)
            if found is not None and found[1]:
                encoded.remember(decoder, session_id, fast.result.seqs, items)
                return fast.result
        if lookup:
            known = await _stored_ids(conn, session_id, wanted)
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


async def _stored_ids(conn: Any, session_id: str, wanted: list[str]) -> dict[str, int]:
    """Client id -> seq of the ``wanted`` ids the session has stored."""
    cur = await conn.execute(
        "SELECT client_id, seq FROM messages WHERE session_id = %s AND client_id = ANY(%s)",
        (session_id, wanted),
    )
    return {cid: seq for cid, seq in await cur.fetchall()}


async def _mark(conn: Any, session_id: str, result: AppendResult, due: DueCheck | None) -> None:
    """Write the due mark ``due`` asks for after ``result`` (as of its last seq)."""
    if due is None:
        return
    due_at = due(result.stats)
    if due_at is not None:
        await mark_due(conn, session_id, due_at, result.stats.last_seq)


#: The largest batch appended in one statement before its stored ids are known: its
#: messages are counted up front, so a framework re-sending a long history (all but the
#: newest stored) goes the transaction's way, which counts only the new ones.
FAST_BATCH = 8


class KnownStats:
    """The totals this process last saw of each of the ``size`` most recent sessions: what
    :func:`fast_append` plans on. Stale is fine (the statement checks them); it only
    costs a second try."""

    def __init__(self, size: int = 4096) -> None:
        self._stats: LRU[str, SessionStats] = LRU(size)

    def get(self, session_id: str) -> SessionStats | None:
        return self._stats.get(session_id)

    def put(self, stats: SessionStats) -> None:
        self._stats.put(stats.session_id, stats)

    def forget(self, session_id: str) -> None:
        self._stats.pop(session_id, None)


#: The append in one statement: lock the session's row; write the planned rows (a JSON
#: array of [seq, client id, role, body, tokens, index text]), totals and due mark only
#: if the row holds the totals the plan was made on and no client id of the batch is
#: stored; return the row as it was (before the write) either way.
FAST_APPEND = f"""
WITH cur AS (
    SELECT {SESSION_COLS} FROM sessions WHERE session_id = %(sid)s FOR UPDATE
), v AS (
    SELECT (r->>0)::bigint AS seq, r->>1 AS client_id, r->>2 AS role, r->>3 AS body,
           (r->>4)::int AS tokens, r->>5 AS text
    FROM json_array_elements(%(rows)s::json) AS r
), known AS (
    SELECT EXISTS (SELECT 1 FROM messages WHERE session_id = %(sid)s
                   AND client_id = ANY(ARRAY(SELECT client_id FROM v))) AS k
), ok AS (
    SELECT 1 FROM cur, known WHERE NOT known.k
    AND cur.last_seq = %(e_last)s AND cur.live_count = %(e_count)s
    AND cur.live_tokens = %(e_tokens)s AND cur.through_seq = %(e_through)s
    AND cur.summary_version = %(e_version)s AND cur.summary_tokens = %(e_summary)s
    AND cur.pending_calls::jsonb = %(e_pending)s::jsonb
    AND cur.reported_input_tokens IS NOT DISTINCT FROM %(e_reported)s
), ins AS (
    INSERT INTO messages (session_id, seq, client_id, role, body, tokens, created_at, search)
    SELECT %(sid)s, v.seq, v.client_id, v.role, v.body, v.tokens, %(now)s,
           to_tsvector(%(config)s::regconfig, v.text)
    FROM ok, v
), upd AS (
    UPDATE sessions SET last_seq = %(last)s, live_count = %(count)s,
        live_tokens = %(live_tokens)s, pending_calls = %(pending)s, last_activity = %(now)s,
        due_at = CASE WHEN %(mark)s AND due_seq <= %(last)s THEN %(due_at)s ELSE due_at END,
        due_seq = CASE WHEN %(mark)s AND due_seq <= %(last)s THEN %(last)s ELSE due_seq END
    FROM ok WHERE session_id = %(sid)s
    RETURNING 1
)
SELECT cur.*, (SELECT count(*) FROM upd), (SELECT k FROM known) FROM cur
"""


class FastAppend(NamedTuple):
    """An append planned on known totals: the statement's parameters and its result."""

    params: dict[str, Any]
    result: AppendResult


class Encoded(NamedTuple):
    """What a batch writes besides its seqs, made once however many times it is planned:
    per message (client id, role, row body, tokens, index text)."""

    rows: list[tuple[str | None, str, str, int, str]]

    def remember(self, decoder: MessageDecoder, session_id: str, seqs: Sequence[int],
                 items: Sequence[PreparedMessage]) -> None:
        """Tell ``decoder`` the rows as written at ``seqs`` (the next read decodes none)."""
        for seq, item, row in zip(seqs, items, self.rows, strict=True):
            decoder.written(session_id, seq, row[2], item.message, row[3])


def encode_batch(items: Sequence[PreparedMessage]) -> Encoded:
    return Encoded([(i.message.id, i.message.role, encode_message(i.message), i.tokens,
                     index_text(i.message)) for i in items])


def plan_fast_append(
    expect: SessionStats,
    encoded: Encoded,
    search_config: str,
    items: Sequence[PreparedMessage],
    now: datetime,
    due: DueCheck | None,
) -> FastAppend | None:
    """The append of ``items`` (``encoded``) to a session holding ``expect``, for
    :data:`FAST_APPEND`; None when it is not one for the short way (a client id repeated
    in the batch, or a batch the sequence rules refuse on ``expect``: the transaction
    decides, as stored)."""
    try:
        plan = plan_append(expect, items, {}, now)
    except ValidationError:
        return None
    if len(plan.fresh) != len(items):
        return None
    new = plan.result.stats
    due_at = due(new) if due is not None else None
    rows = [(seq, *row) for (seq, _), row in zip(plan.fresh, encoded.rows, strict=True)]
    params = {
        "sid": expect.session_id,
        "rows": json.dumps(rows, ensure_ascii=False, separators=(",", ":")),
        "e_last": expect.last_seq,
        "e_count": expect.live_count,
        "e_tokens": expect.live_tokens,
        "e_through": expect.through_seq,
        "e_version": expect.summary_version,
        "e_summary": expect.summary_tokens,
        "e_pending": json.dumps(expect.pending_calls),
        "e_reported": expect.reported_input_tokens,
        "now": now,
        "config": search_config,
        "last": new.last_seq,
        "count": new.live_count,
        "live_tokens": new.live_tokens,
        "pending": json.dumps(new.pending_calls),
        "mark": due_at is not None,
        "due_at": due_at,
    }
    return FastAppend(params, plan.result)


async def fast_append(conn: Any, params: dict[str, Any]) -> tuple[SessionStats, bool, bool] | None:
    """Run :data:`FAST_APPEND` (its own transaction): the session's totals as they were,
    whether the append was written, and whether a client id of the batch is stored;
    None when the session does not exist."""
    cur = await conn.execute(FAST_APPEND, params)
    row = await cur.fetchone()
    if row is None:
        return None
    return session_stats(row), bool(row[-2]), bool(row[-1])


async def append_in_one_statement(
    conn: Any,
    known: KnownStats,
    decoder: MessageDecoder,
    search_config: str,
    session_id: str,
    items: Sequence[PreparedMessage],
    now: datetime,
    due: DueCheck | None,
) -> AppendResult | None:
    """The append as :data:`FAST_APPEND` on ``conn`` (autocommit: each statement its own
    transaction), planned on the totals ``known`` holds of the session — read first if it
    holds none — or on the ones the statement found when they had moved; None: the
    transaction's way (a stored client id, a first append, a batch over
    :data:`FAST_BATCH` or refused as planned, or the totals moving twice)."""
    if len(items) > FAST_BATCH:
        return None
    expect = known.get(session_id)
    if expect is None:
        cur = await conn.execute(
            f"SELECT {SESSION_COLS} FROM sessions WHERE session_id = %s", (session_id,))
        row = await cur.fetchone()
        expect = session_stats(row) if row is not None else None
    encoded = encode_batch(items)
    for _ in range(2):
        if expect is None:
            return None
        plan = plan_fast_append(expect, encoded, search_config, items, now, due)
        if plan is None:
            return None
        found = await fast_append(conn, plan.params)
        if found is None:
            known.forget(session_id)
            return None
        expect, written, stored_ids = found
        if written:
            encoded.remember(decoder, session_id, plan.result.seqs, items)
            return plan.result
        known.put(expect)
        if stored_ids:
            return None
    return None
