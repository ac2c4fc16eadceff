"""PostgreSQL fold commits: the compare-and-set statement, and group commit.

A fold commit is one statement (:data:`COMMIT_FOLD`): the compare-and-set update of the
session row, the summary version, the retention step and the ledger row commit together
or not at all. When many folds finish at once (``fold_many``, workers), each one's
statement costs a round trip, a transaction and, on both sides, more CPU than the rows
it writes. :class:`CommitGroup` sends the commits that are waiting while an earlier
group is in flight as *one* statement (:data:`COMMIT_FOLDS`): every fold keeps its own
compare-and-set — a fold whose session changed is not written and its caller gets the
conflict, the others commit — and the group is one transaction, so each fold is still
all or nothing. A lone commit goes out at once, as the single statement. If a group's
statement fails as a whole, its folds are committed one by one, so one fold's failure
never becomes another's. A session is never twice in one group, and every group locks
its session rows in session id order (two groups never deadlock).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..errors import ConflictError, StorageError
from .base import FoldCommit
from .postgres_schema import VERSION_COLS
from .rows import LEDGER_COLUMNS, check_fold_start, fenced_off

__all__ = ["COMMIT_FOLD", "COMMIT_FOLDS", "CommitGroup", "explain_commit_miss"]

# Explicit types, so parameters in INSERT … SELECT are never guessed as text.
LEDGER_TYPES = {
    "session_id": "text",
    "outcome": "text",
    "reason": "text",
    "lo": "bigint",
    "hi": "bigint",
    "messages_folded": "bigint",
    "tokens_folded": "bigint",
    "summary_tokens": "bigint",
    "input_tokens": "bigint",
    "output_tokens": "bigint",
    "calls": "bigint",
    "model": "text",
    "latency_ms": "double precision",
    "error_class": "text",
    "error": "text",
    "started_at": "timestamptz",
    "key": "text",
    "owner": "text",
    "lease_token": "bigint",
}
_LEDGER_LIST = ", ".join(LEDGER_COLUMNS)

# The fold commit as one statement (see PostgresStore.commit_fold). With delete retention
# folded rows go, except that a row with a client id stays as an empty tombstone so a
# retried append of that id is still recognised (idempotency key).
COMMIT_FOLD = f"""
WITH span AS (
    SELECT count(*) AS n, coalesce(sum(tokens), 0) AS t FROM messages
    WHERE session_id = %(sid)s AND seq BETWEEN %(lo)s AND %(hi)s
), upd AS (
    UPDATE sessions s SET summary_version = s.summary_version + 1,
        summary_text = %(text)s, summary_tokens = %(tokens)s,
        summary_updated_at = %(at)s, through_seq = %(hi)s,
        live_count = s.live_count - span.n, live_tokens = s.live_tokens - span.t,
        reported_input_tokens = NULL
    FROM span
    WHERE s.session_id = %(sid)s AND s.summary_version = %(version)s
        AND s.through_seq = %(lo)s - 1 AND %(lo)s <= %(hi)s AND %(hi)s <= s.last_seq
        AND span.n = %(hi)s - %(lo)s + 1
        AND (%(owner)s::text IS NULL OR (s.lease_owner = %(owner)s
             AND s.lease_token = %(token)s AND s.lease_expires > now()))
    RETURNING s.session_id, s.summary_version, s.last_seq, s.live_tokens
), ver AS (
    INSERT INTO summary_versions ({VERSION_COLS})
    SELECT upd.session_id, upd.summary_version, %(lo)s::bigint, %(hi)s::bigint, upd.last_seq,
        %(tokens)s::bigint, upd.live_tokens, CASE WHEN %(history)s::boolean THEN %(text)s::text END,
        %(at)s::timestamptz
    FROM upd
), gone AS (
    DELETE FROM messages m USING upd
    WHERE %(delete)s AND m.session_id = upd.session_id
        AND m.seq BETWEEN %(lo)s AND %(hi)s AND m.client_id IS NULL
), blank AS (
    UPDATE messages m SET body = '', tokens = 0, search = NULL FROM upd
    WHERE %(delete)s AND m.session_id = upd.session_id
        AND m.seq BETWEEN %(lo)s AND %(hi)s AND m.client_id IS NOT NULL
), led AS (
    INSERT INTO ledger ({_LEDGER_LIST})
    SELECT {", ".join(f"%(l_{c})s::{LEDGER_TYPES[c]}" for c in LEDGER_COLUMNS)}
    FROM upd
)
SELECT 1 FROM upd
"""

#: Per-fold parameters of a group, each passed as an array (``unnest`` makes rows of them).
_FOLD_FIELDS = {
    "sid": "text",
    "version": "bigint",
    "lo": "bigint",
    "hi": "bigint",
    "text": "text",
    "tokens": "bigint",
    "at": "timestamptz",
    "owner": "text",
    "token": "bigint",
    **{f"l_{c}": LEDGER_TYPES[c] for c in LEDGER_COLUMNS},
}

# The same as COMMIT_FOLD for a group of folds of distinct sessions: one row of ``c`` per
# fold; each fold's compare-and-set is its own (a fold that does not match writes nothing);
# the rows are locked in session id order first, so concurrent groups cannot deadlock.
COMMIT_FOLDS = f"""
WITH c AS (
    SELECT * FROM unnest({", ".join(f"%({f})s::{t}[]" for f, t in _FOLD_FIELDS.items())})
        AS c({", ".join(_FOLD_FIELDS)})
), lk AS MATERIALIZED (
    SELECT s.session_id FROM sessions s WHERE s.session_id IN (SELECT sid FROM c)
    ORDER BY s.session_id FOR UPDATE
), span AS (
    SELECT c.sid, count(m.seq) AS n, coalesce(sum(m.tokens), 0) AS t
    FROM c LEFT JOIN messages m ON m.session_id = c.sid AND m.seq BETWEEN c.lo AND c.hi
    GROUP BY c.sid
), upd AS (
    UPDATE sessions s SET summary_version = s.summary_version + 1,
        summary_text = c.text, summary_tokens = c.tokens,
        summary_updated_at = c.at, through_seq = c.hi,
        live_count = s.live_count - span.n, live_tokens = s.live_tokens - span.t,
        reported_input_tokens = NULL
    FROM c JOIN span ON span.sid = c.sid JOIN lk ON lk.session_id = c.sid
    WHERE s.session_id = c.sid AND s.summary_version = c.version
        AND s.through_seq = c.lo - 1 AND c.lo <= c.hi AND c.hi <= s.last_seq
        AND span.n = c.hi - c.lo + 1
        AND (c.owner IS NULL OR (s.lease_owner = c.owner
             AND s.lease_token = c.token AND s.lease_expires > now()))
    RETURNING s.session_id, s.summary_version, s.last_seq, s.live_tokens
), ver AS (
    INSERT INTO summary_versions ({VERSION_COLS})
    SELECT upd.session_id, upd.summary_version, c.lo, c.hi, upd.last_seq, c.tokens,
        upd.live_tokens, CASE WHEN %(history)s::boolean THEN c.text END, c.at
    FROM upd JOIN c ON c.sid = upd.session_id
), gone AS (
    DELETE FROM messages m USING upd JOIN c ON c.sid = upd.session_id
    WHERE %(delete)s AND m.session_id = upd.session_id
        AND m.seq BETWEEN c.lo AND c.hi AND m.client_id IS NULL
), blank AS (
    UPDATE messages m SET body = '', tokens = 0, search = NULL
    FROM upd JOIN c ON c.sid = upd.session_id
    WHERE %(delete)s AND m.session_id = upd.session_id
        AND m.seq BETWEEN c.lo AND c.hi AND m.client_id IS NOT NULL
), led AS (
    INSERT INTO ledger ({_LEDGER_LIST})
    SELECT {", ".join(f"c.l_{c}" for c in LEDGER_COLUMNS)}
    FROM upd JOIN c ON c.sid = upd.session_id
)
SELECT session_id FROM upd
"""


def group_params(folds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The parameters of :data:`COMMIT_FOLDS` from those of each fold's COMMIT_FOLD."""
    params: dict[str, Any] = {f: [p[f] for p in folds] for f in _FOLD_FIELDS}
    params["history"] = folds[0]["history"]
    params["delete"] = folds[0]["delete"]
    return params


async def explain_commit_miss(conn: Any, commit: FoldCommit) -> None:
    """Raise the error that explains why the commit statement matched nothing."""
    cur = await conn.execute(
        "SELECT s.summary_version, s.through_seq, s.last_seq, s.lease_owner, "
        "s.lease_token, s.lease_expires > now(), (SELECT count(*) FROM messages m "
        "WHERE m.session_id = s.session_id AND m.seq BETWEEN %s AND %s) "
        "FROM sessions s WHERE s.session_id = %s",
        (commit.lo, commit.hi, commit.session_id),
    )
    row = await cur.fetchone()
    sid = commit.session_id
    if row is None:
        raise ConflictError(f"session {sid!r} no longer exists")
    version, through, last, owner, token, unexpired, count = row
    lease = commit.lease
    if lease is not None and (owner, token, unexpired) != (lease.owner, lease.token, True):
        raise fenced_off(lease)
    check_fold_start(commit, version, through, last)
    if count != commit.hi - commit.lo + 1:
        raise StorageError(f"session {sid!r} is missing messages in {commit.lo}..{commit.hi}")
    raise ConflictError(f"session {sid!r} changed while the fold committed")


_Waiting = tuple[dict[str, Any], "asyncio.Future[bool]"]


class CommitGroup:
    """Queues fold commits and sends them in groups, at most ``flights`` at a time.

    ``one(params)`` runs COMMIT_FOLD for one fold and says whether it matched;
    ``many(params)`` runs COMMIT_FOLDS and returns the sessions that matched. A commit
    whose caller is cancelled before its group is sent is dropped (nothing written); once
    sent, it commits or not with its group, like a single statement already sent.
    """

    def __init__(
        self,
        one: Callable[[dict[str, Any]], Awaitable[bool]],
        many: Callable[[dict[str, Any]], Awaitable[set[str]]],
        *,
        flights: int = 2,
        max_group: int = 64,
    ) -> None:
        self._one, self._many = one, many
        self.flights, self.max_group = flights, max_group
        self._waiting: list[_Waiting] = []
        self._flying = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def commit(self, params: dict[str, Any]) -> bool:
        """True when the fold committed; False when its compare-and-set matched nothing."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((params, done))
        if self._flying < self.flights:
            self._flying += 1
            task = asyncio.ensure_future(self._fly())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await done  # cancelled while waiting: _take drops it unsent

    def _take(self) -> list[_Waiting]:
        group: list[_Waiting] = []
        rest: list[_Waiting] = []
        sids: set[str] = set()
        for item in self._waiting:
            params, done = item
            if done.done():  # its caller was cancelled
                continue
            if len(group) < self.max_group and params["sid"] not in sids:
                sids.add(params["sid"])
                group.append(item)
            else:
                rest.append(item)
        self._waiting = rest
        return group

    async def _fly(self) -> None:
        try:
            while group := self._take():
                await self._send(group)
        finally:
            self._flying -= 1

    async def _send(self, group: list[_Waiting]) -> None:
        try:
            if len(group) == 1:
                _settle(group[0][1], await self._one(group[0][0]))
                return
            try:
                matched = await self._many(group_params([p for p, _ in group]))
            except StorageError:  # the group as a whole failed: each fold on its own
                for params, done in group:
                    try:
                        _settle(done, await self._one(params))
                    except Exception as exc:
                        _fail(done, exc)
                return
            for params, done in group:
                _settle(done, params["sid"] in matched)
        except BaseException as exc:  # the sender itself failed or was cancelled
            for _, done in group:
                _fail(
                    done,
                    exc
                    if isinstance(exc, Exception)
                    else StorageError("the fold commit was interrupted"),
                )
            if not isinstance(exc, Exception):
                raise


def _settle(done: asyncio.Future[bool], matched: bool) -> None:
    if not done.done():
        done.set_result(matched)


def _fail(done: asyncio.Future[bool], exc: Exception) -> None:
    if not done.done():
        done.set_exception(exc)
