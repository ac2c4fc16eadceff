"""Due sessions and fold leases on PostgreSQL: the statements, and one function per store
method that runs its statement on a connection (the store wraps each in ``_tx``).

Leases use the server clock (skewed worker clocks agree on expiry). Every claim bumps the
session's ``lease_token`` (its lease epoch), which fences the fold commit of a worker whose
lease expired and was taken again. Workers claim with ``FOR UPDATE SKIP LOCKED``, so two
claimers never wait on each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from .base import Lease

__all__ = [
    "claim",
    "claim_due",
    "claim_many",
    "list_due",
    "mark_due",
    "release",
    "release_many",
    "renew",
    "revoke_leases",
]

#: Lease up to N due, unleased sessions, most overdue first; concurrent claimers skip.
CLAIM_DUE = (
    "WITH due AS ("
    " SELECT session_id FROM sessions WHERE due_at <= now()"
    " AND (lease_expires IS NULL OR lease_expires <= now())"
    " ORDER BY due_at, session_id LIMIT %s FOR UPDATE SKIP LOCKED)"
    " UPDATE sessions s SET lease_owner = %s,"
    " lease_expires = now() + make_interval(secs => %s),"
    " lease_token = s.lease_token + 1"
    " FROM due WHERE s.session_id = due.session_id"
    " RETURNING s.session_id, s.lease_token, s.lease_expires, s.due_at"
)

#: Lease one session (due or not) unless its lease is unexpired.
CLAIM_SESSION = (
    "UPDATE sessions SET lease_owner = %s, lease_expires = now() + make_interval(secs => %s), "
    "lease_token = lease_token + 1 WHERE session_id = %s "
    "AND (lease_expires IS NULL OR lease_expires <= now()) RETURNING lease_token, lease_expires"
)

#: The same for many sessions at once (a ``fold_many`` wave).
CLAIM_MANY = (
    "UPDATE sessions SET lease_owner = %s, lease_expires = now() + make_interval(secs => %s), "
    "lease_token = lease_token + 1 WHERE session_id = ANY(%s) "
    "AND (lease_expires IS NULL OR lease_expires <= now()) "
    "RETURNING session_id, lease_token, lease_expires"
)

#: End the listed leases that are still current (arrays of session id, owner, token).
RELEASE_MANY = (
    "UPDATE sessions s SET lease_owner = NULL, lease_expires = NULL "
    "FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS l(sid, owner, token) "
    "WHERE s.session_id = l.sid AND s.lease_owner = l.owner AND s.lease_token = l.token"
)

#: End one lease and, unless a later append marked the session again, set its due time.
RELEASE = (
    "UPDATE sessions SET lease_owner = NULL, lease_expires = NULL, "
    "due_at = CASE WHEN due_seq <= %s THEN %s ELSE due_at END, "
    "due_seq = greatest(due_seq, %s) "
    "WHERE session_id = %s AND lease_owner = %s AND lease_token = %s"
)

#: End every lease of the owners a prefix names (but one), expired or not, fencing them.
REVOKE = (
    "UPDATE sessions SET lease_owner = NULL, lease_expires = NULL, "
    "lease_token = lease_token + 1 WHERE starts_with(lease_owner, %s) "
    "AND lease_owner IS DISTINCT FROM %s"
)

RENEW = (
    "UPDATE sessions SET lease_expires = now() + make_interval(secs => %s) "
    "WHERE session_id = %s AND lease_owner = %s AND lease_token = %s "
    "AND lease_expires > now() RETURNING lease_expires"
)

#: A later mark (higher ``as_of_seq``) is never overwritten by an earlier one.
MARK_DUE = (
    "UPDATE sessions SET due_at = %s, due_seq = %s WHERE session_id = %s AND due_seq <= %s"
)

LIST_DUE = (
    "SELECT session_id, due_at FROM sessions WHERE due_at IS NOT NULL "
    "ORDER BY due_at, session_id LIMIT %s"
)


async def mark_due(conn: Any, session_id: str, due_at: datetime | None, as_of_seq: int) -> None:
    await conn.execute(MARK_DUE, (due_at, as_of_seq, session_id, as_of_seq))


async def claim_due(conn: Any, owner: str, limit: int, lease_seconds: float) -> list[Lease]:
    cur = await conn.execute(CLAIM_DUE, (limit, owner, float(lease_seconds)))
    rows = sorted(await cur.fetchall(), key=lambda r: (r[3], r[0]))
    return [Lease(sid, owner, token, expires) for sid, token, expires, _ in rows]


async def claim(conn: Any, session_id: str, owner: str, lease_seconds: float) -> Lease | None:
    cur = await conn.execute(CLAIM_SESSION, (owner, float(lease_seconds), session_id))
    row = await cur.fetchone()
    return None if row is None else Lease(session_id, owner, row[0], row[1])


async def claim_many(
    conn: Any, session_ids: Sequence[str], owner: str, lease_seconds: float
) -> list[Lease]:
    cur = await conn.execute(CLAIM_MANY, (owner, float(lease_seconds), list(session_ids)))
    return [Lease(sid, owner, token, exp) for sid, token, exp in await cur.fetchall()]


async def release_many(conn: Any, leases: Sequence[Lease]) -> None:
    await conn.execute(
        RELEASE_MANY,
        ([x.session_id for x in leases], [x.owner for x in leases], [x.token for x in leases]),
    )


async def revoke_leases(conn: Any, owner_prefix: str, except_owner: str | None) -> int:
    cur = await conn.execute(REVOKE, (owner_prefix, except_owner))
    return int(cur.rowcount)


async def renew(conn: Any, lease: Lease, lease_seconds: float) -> Lease | None:
    cur = await conn.execute(
        RENEW, (float(lease_seconds), lease.session_id, lease.owner, lease.token)
    )
    row = await cur.fetchone()
    return replace(lease, expires_at=row[0]) if row else None


async def release(conn: Any, lease: Lease, due_at: datetime | None, as_of_seq: int) -> bool:
    cur = await conn.execute(
        RELEASE, (as_of_seq, due_at, as_of_seq, lease.session_id, lease.owner, lease.token)
    )
    return bool(cur.rowcount == 1)


async def list_due(conn: Any, limit: int | None) -> list[tuple[str, datetime]]:
    cur = await conn.execute(LIST_DUE, (limit,))
    return [(sid, at) for sid, at in await cur.fetchall()]
