"""PostgreSQL store: many processes on many machines share the sessions.

psycopg 3 with an async pool; a step the synchronous ``Memory`` runs inline uses a
synchronous pool instead, through the very same transaction code (:mod:`.postgres_pools`).
Same schema concepts as SQLite (``sessions`` with running totals and the
``through_seq`` cursor, ``messages``, ``ledger``) in a PostgreSQL schema of its own,
migrated by :meth:`PostgresStore.setup` under an advisory lock so any number of
processes may call it at once.

Locking: a write locks its ``sessions`` row first (``FOR UPDATE``; a group of fold
commits locks its rows in session id order), then messages, so locks are taken in one
order and held for a few statements. No transaction spans a summarizer call, so an append
waits for another short transaction at most, never for a fold. The append (one
statement, or a transaction when that does not fit) is in :mod:`.postgres_append`;
snapshots from their rows in :mod:`.postgres_snapshots`; fold commits, and their grouping,
in :mod:`.postgres_commits`; due marks and leases (server clock, ``SKIP LOCKED`` claims) in
:mod:`.postgres_leases`; search in :mod:`.postgres_search`. Statement, lock and
idle-in-transaction timeouts are set.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

from ..errors import ConfigError
from ..inline import inline
from ..messages import StoredMessage
from ..policy import SessionStats
from . import postgres_leases as lease_sql
from . import postgres_vault as vault_sql
from .base import (
    AppendResult,
    DueCheck,
    FoldCommit,
    Lease,
    LedgerEntry,
    PreparedMessage,
    Retention,
    Snapshot,
    Summary,
    SummaryVersion,
    keeps_summary_text,
)
from .live_cache import LiveCache
from .postgres_append import (
    AppendTurns,
    KnownStats,
    NothingToWrite,
    append_in_one_statement,
    append_messages,
    lock_session,
)
from .postgres_commits import COMMIT_FOLD, COMMIT_FOLDS, CommitGroup, explain_commit_miss
from .postgres_schema import (
    LEDGER_INSERT,
    LEDGER_SELECT,
    MIGRATIONS,
    SESSION_COLS,
    SNAPSHOT_AFTER,
    SNAPSHOT_MANY,
    VERSIONS_SELECT,
    ledger_params,
    migrate,
)
from .postgres_search import (
    SearchQuery,
    TermStats,
    check_config,
    fetch_messages,
    search_messages,
)
from .postgres_snapshots import snapshot_from_rows, snapshots_from_rows
from .postgres_turns import search_turns
from .rows import (
    LEDGER_COLUMNS,
    LedgerTotals,
    MessageDecoder,
    ledger_from_row,
    ledger_totals_from_rows,
    ledger_totals_query,
    session_stats,
    version_from_row,
)
from .search import SearchHit, SearchRequest, SearchTurns, check_reach

try:
    import psycopg  # noqa: F401  (the extra: a clear error without it)

    from .postgres_connections import redact_url
    from .postgres_pools import Conn, Pools
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError(
        'the PostgreSQL store needs psycopg 3: pip install "contextfold[postgres]"'
    ) from exc

__all__ = ["MIGRATIONS", "PostgresStore"]

T = TypeVar("T")

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresStore:
    """Sessions in PostgreSQL. ``url``: a libpq URL (``postgresql://user@host/db``).

    ``schema``: the PostgreSQL schema holding the tables (created by :meth:`setup`).
    ``pool_size``: most connections this store opens. Timeouts are in seconds:
    ``statement_timeout`` bounds every statement, ``lock_timeout`` every wait for a row
    lock, ``idle_in_transaction_timeout`` lets the server end a transaction its client
    abandoned (and so free its locks).
    """

    def __init__(
        self,
        url: str,
        *,
        retention: Retention = "archive",
        schema: str = "contextfold",
        pool_size: int = 10,
        connect_timeout: float = 10.0,
        statement_timeout: float = 30.0,
        lock_timeout: float = 10.0,
        idle_in_transaction_timeout: float = 60.0,
        summary_history: bool | None = None,
        search_config: str = "simple",
    ) -> None:
        if retention not in ("archive", "delete"):
            raise ConfigError(f"retention must be 'archive' or 'delete', got {retention!r}")
        if not _SCHEMA_NAME.match(schema):
            raise ConfigError(f"schema must be a lower-case SQL identifier, got {schema!r}")
        if pool_size < 1:
            raise ConfigError(f"pool_size must be >= 1, got {pool_size!r}")
        self.url = url
        self.retention: Retention = retention
        self.summary_history = summary_history
        self.schema = schema
        self.search_config = check_config(search_config)
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self._pools = Pools(
            url, schema, size=pool_size, connect_timeout=connect_timeout,
            settings={
                "statement_timeout": int(statement_timeout * 1000),
                "lock_timeout": int(lock_timeout * 1000),
                "idle_in_transaction_session_timeout": int(idle_in_transaction_timeout * 1000),
            },
            name=repr(self),
        )
        self._decoder = MessageDecoder()
        self._term_stats = TermStats()
        self._live = LiveCache()
        self._appends = AppendTurns()
        self._known = KnownStats()
        self._commits = CommitGroup(self._commit_one, self._commit_many)

    def __repr__(self) -> str:
        return f"PostgresStore({redact_url(self.url)!r}, schema={self.schema!r})"

    # -- schema ----------------------------------------------------------------------------

    async def setup(self) -> None:
        await self._tx(lambda conn: migrate(conn, self.schema, self.search_config))

    # -- writes ----------------------------------------------------------------------------

    async def append(
        self,
        session_id: str,
        items: Sequence[PreparedMessage],
        now: datetime,
        *,
        due: DueCheck | None = None,
    ) -> AppendResult:
        async def do(conn: Conn) -> AppendResult:
            return await append_messages(
                conn, self._decoder, self.search_config, session_id, items, now, due
            )

        # the sync front runs one step at a time in its thread anyway: no turns there
        turn = nullcontext() if inline() else self._appends.turn(session_id)
        try:
            async with turn:
                result = await self._tx(partial(
                    append_in_one_statement, known=self._known, decoder=self._decoder,
                    search_config=self.search_config, session_id=session_id, items=items,
                    now=now, due=due), single=True)
                if result is None:
                    result = await self._tx(do)
        except NothingToWrite as nothing:
            return nothing.result
        self._known.put(result.stats)
        return result

    async def commit_fold(self, commit: FoldCommit, entry: LedgerEntry) -> Summary:
        """One statement: the compare-and-set update of the session row, the retention
        step and the ledger row commit together or not at all, and the session row is
        locked only while that statement runs. Commits that wait while others are in
        flight go out together as one statement (:mod:`.postgres_commits`), each with its
        own compare-and-set. If a commit matched nothing, a second read says why."""
        lease = commit.lease
        params = {
            "sid": commit.session_id,
            "version": commit.expected_version,
            "lo": commit.lo,
            "hi": commit.hi,
            "text": commit.text,
            "tokens": commit.tokens,
            "at": entry.started_at,
            "delete": self.retention == "delete",
            "history": keeps_summary_text(self),
            "owner": lease.owner if lease else None,
            "token": lease.token if lease else None,
            **{f"l_{c}": v for c, v in zip(LEDGER_COLUMNS, ledger_params(entry), strict=True)},
        }
        matched = await (self._commit_one(params) if inline() else self._commits.commit(params))
        if not matched:

            async def explain(conn: Conn) -> None:
                await explain_commit_miss(conn, commit)

            await self._tx(explain, single=True)
        return Summary(
            commit.text, commit.hi, commit.expected_version + 1, commit.tokens, entry.started_at
        )

    async def _commit_one(self, params: dict[str, Any]) -> bool:
        async def do(conn: Conn) -> bool:
            cur = await conn.execute(COMMIT_FOLD, params)
            return await cur.fetchone() is not None

        return await self._tx(do, single=True)

    async def _commit_many(self, params: dict[str, Any]) -> set[str]:
        async def do(conn: Conn) -> set[str]:
            cur = await conn.execute(COMMIT_FOLDS, params)
            return {row[0] for row in await cur.fetchall()}

        return await self._tx(do, single=True)

    async def record_attempt(self, entry: LedgerEntry) -> int:
        async def do(conn: Conn) -> int:
            cur = await conn.execute(LEDGER_INSERT, ledger_params(entry))
            row = await cur.fetchone()
            return int(row[0]) if row else 0

        return await self._tx(do, single=True)

    async def record_usage(self, session_id: str, input_tokens: int) -> None:
        async def do(conn: Conn) -> None:
            await conn.execute(
                "UPDATE sessions SET reported_input_tokens = %s WHERE session_id = %s",
                (input_tokens, session_id),
            )

        await self._tx(do, single=True)

    async def delete(self, session_id: str, *, if_last_seq: int | None = None) -> bool:
        async def do(conn: Conn) -> bool:
            row = await lock_session(conn, session_id, "last_seq")
            if row is None or (if_last_seq is not None and row[0] != if_last_seq):
                return False
            for table in ("messages", "ledger", "pii_vault", "summary_versions", "sessions"):
                await conn.execute(
                    f"DELETE FROM {table} WHERE session_id = %s",
                    (session_id,),
                )
            return True

        self._known.forget(session_id)
        return await self._tx(do)

    async def vault_get(self, session_id: str) -> dict[str, str]:
        return await self._tx(partial(vault_sql.vault_get, session_id=session_id))

    async def vault_put(self, session_id: str, entries: Mapping[str, str]) -> None:
        if entries:
            await self._tx(partial(vault_sql.vault_put, session_id=session_id,
                                   entries=dict(entries)))

    # -- due sessions and leases -----------------------------------------------------------

    async def mark_due(self, session_id: str, due_at: datetime | None, *, as_of_seq: int) -> None:
        await self._tx(lambda c: lease_sql.mark_due(c, session_id, due_at, as_of_seq), single=True)

    async def claim_due(self, owner: str, *, limit: int, lease_seconds: float) -> list[Lease]:
        return await self._tx(lambda c: lease_sql.claim_due(c, owner, limit, lease_seconds),
                              single=True)

    async def claim(self, session_id: str, owner: str, *, lease_seconds: float) -> Lease | None:
        return await self._tx(lambda c: lease_sql.claim(c, session_id, owner, lease_seconds),
                              single=True)

    async def claim_many(
        self, session_ids: Sequence[str], owner: str, *, lease_seconds: float
    ) -> list[Lease]:
        if not session_ids:
            return []
        return await self._tx(
            lambda c: lease_sql.claim_many(c, session_ids, owner, lease_seconds), single=True
        )

    async def release_many(self, leases: Sequence[Lease]) -> None:
        if leases:
            await self._tx(lambda c: lease_sql.release_many(c, leases), single=True)

    async def revoke_leases(self, owner_prefix: str, *, except_owner: str | None = None) -> int:
        return await self._tx(
            lambda c: lease_sql.revoke_leases(c, owner_prefix, except_owner), single=True
        )

    async def renew(self, lease: Lease, *, lease_seconds: float) -> Lease | None:
        return await self._tx(lambda c: lease_sql.renew(c, lease, lease_seconds), single=True)

    async def release(self, lease: Lease, *, due_at: datetime | None, as_of_seq: int) -> bool:
        return await self._tx(lambda c: lease_sql.release(c, lease, due_at, as_of_seq), single=True)

    async def list_due(self, *, limit: int | None = 100) -> list[tuple[str, datetime]]:
        return await self._tx(lambda c: lease_sql.list_due(c, limit), single=True)

    # -- reads -----------------------------------------------------------------------------

    async def stats(self, session_id: str) -> SessionStats | None:
        async def do(conn: Conn) -> SessionStats | None:
            cur = await conn.execute(
                f"SELECT {SESSION_COLS} FROM sessions WHERE session_id = %s", (session_id,)
            )
            row = await cur.fetchone()
            return session_stats(row) if row else None

        stats = await self._tx(do, single=True)
        if stats is None:
            self._known.forget(session_id)
        else:
            self._known.put(stats)
        return stats

    async def snapshot(self, session_id: str) -> Snapshot | None:
        """One statement (totals, summary and live rows from the same snapshot), reading
        only the live rows this process has not read before (:mod:`.live_cache`)."""
        after = self._live.after(session_id)
        while True:
            rows = await self._tx(partial(_fetchall, query=SNAPSHOT_AFTER,
                                          params=(after, session_id)), single=True)
            if not rows:
                self._live.forget(session_id)
                self._known.forget(session_id)
                return None
            snap = snapshot_from_rows(rows, after, self._live, self._decoder)
            if snap is not None:
                self._known.put(snap.stats)
                return snap
            after = 0  # the cached list no longer fits: read them all

    async def snapshots(self, session_ids: Sequence[str]) -> dict[str, Snapshot]:
        if not session_ids:
            return {}
        rows = await self._tx(partial(_fetchall, query=SNAPSHOT_MANY,
                                      params=(list(session_ids),)), single=True)
        return snapshots_from_rows(rows, self._decoder)

    async def live(self, session_id: str) -> list[StoredMessage]:
        return await self.messages(session_id, include_folded=False)

    async def messages(
        self,
        session_id: str,
        *,
        include_folded: bool = True,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[StoredMessage]:
        async def do(conn: Conn) -> list[StoredMessage]:
            # One statement, so the cursor and the rows come from the same snapshot; a
            # range of the primary key, as the snapshot reads it (``live_rows``)
            cur = await conn.execute(
                "SELECT m.seq, m.body, m.tokens, s.through_seq FROM sessions s "
                "JOIN LATERAL (SELECT m.seq, m.body, m.tokens FROM messages m "
                "WHERE m.session_id = s.session_id AND m.seq <= s.last_seq "
                "AND m.seq > GREATEST(%s, CASE WHEN %s THEN 0 ELSE s.through_seq END) "
                "ORDER BY m.seq LIMIT %s) m ON true "
                "WHERE s.session_id = %s ORDER BY m.seq",
                (after_seq, include_folded and self.retention == "archive", limit, session_id),
            )
            return [
                self._decoder.decode(session_id, s, b, t, s <= th)
                for s, b, t, th in await cur.fetchall()
            ]

        return await self._tx(do, single=True)

    async def fetch(self, session_id: str, seqs: Sequence[int]) -> list[StoredMessage]:
        return await self._tx(
            lambda conn: fetch_messages(conn, self._decoder, session_id, seqs), single=True
        )

    async def search(
        self, session_id: str, terms: Sequence[str], *, limit: int = 20,
        folded: bool | None = None, min_matched: int = 1, snippets: bool = True,
    ) -> list[SearchHit]:
        req = SearchRequest.of(terms, limit, min_matched, snippets)
        query = SearchQuery(self.search_config, session_id, req.terms, folded, limit, min_matched,
                            snippets)
        return await self._tx(
            lambda conn: search_messages(conn, self._decoder, query, self._term_stats),
            single=True,
        )

    async def search_turns(
        self, session_id: str, terms: Sequence[str], *, limit: int = 20,
        folded: bool | None = None, min_matched: int = 1,
        reach: Sequence[tuple[int, int]] = ((1, 1),),
    ) -> SearchTurns:
        pairs = check_reach(reach)
        req = SearchRequest.of(terms, limit, min_matched, False)
        query = SearchQuery(self.search_config, session_id, req.terms, folded, limit, min_matched,
                            False)
        return await self._tx(lambda conn: search_turns(
            conn, self._decoder, query, self._term_stats, pairs), single=True)

    async def summary(self, session_id: str) -> Summary | None:
        async def do(conn: Conn) -> Summary | None:
            cur = await conn.execute(
                "SELECT summary_text, through_seq, summary_version, summary_tokens, "
                "summary_updated_at FROM sessions WHERE session_id = %s",
                (session_id,),
            )
            row = await cur.fetchone()
            if row is None or row[0] is None:
                return None
            return Summary(row[0], row[1], row[2], row[3], row[4])

        return await self._tx(do, single=True)

    async def summary_versions(
        self,
        session_id: str,
        *,
        after_version: int = 0,
        limit: int | None = None,
        text: bool = True,
    ) -> list[SummaryVersion]:
        async def do(conn: Conn) -> list[SummaryVersion]:
            cur = await conn.execute(VERSIONS_SELECT, (text, session_id, after_version, limit))
            return [version_from_row(r) for r in await cur.fetchall()]

        return await self._tx(do, single=True)

    async def ledger(
        self, session_id: str | None = None, *, limit: int | None = 100
    ) -> list[LedgerEntry]:
        async def do(conn: Conn) -> list[LedgerEntry]:
            cur = await conn.execute(
                f"SELECT {LEDGER_SELECT} FROM ledger "
                "WHERE (%s::text IS NULL OR session_id = %s) ORDER BY id DESC LIMIT %s",
                (session_id, session_id, limit),
            )
            return [ledger_from_row(r) for r in await cur.fetchall()]

        return await self._tx(do, single=True)

    async def ledger_totals(
        self, *, session_id: str | None = None, prefix: str | None = None
    ) -> list[LedgerTotals]:
        """Per (model, outcome) sums of the ledger rows of one session or of every session
        whose id starts with ``prefix``: an index range (the prefix over the ledger's
        ``COLLATE "C"`` index: code point order, whatever the database's collation)."""
        sql, params = ledger_totals_query(session_id, prefix, ordered='session_id COLLATE "C"')

        async def do(conn: Conn) -> list[LedgerTotals]:
            cur = await conn.execute(sql.replace("?", "%s"), params)
            return ledger_totals_from_rows(await cur.fetchall())

        return await self._tx(do, single=True)

    async def list_sessions(
        self, *, limit: int | None = 100, offset: int = 0
    ) -> list[SessionStats]:
        async def do(conn: Conn) -> list[SessionStats]:
            cur = await conn.execute(
                f"SELECT {SESSION_COLS} FROM sessions "
                "ORDER BY last_activity DESC NULLS LAST, session_id DESC LIMIT %s OFFSET %s",
                (limit, offset),
            )
            return [session_stats(r) for r in await cur.fetchall()]

        return await self._tx(do, single=True)

    async def _tx(self, fn: Callable[[Conn], Awaitable[T]], *, single: bool = False) -> T:
        """Run ``fn`` in one transaction (:meth:`.Pools.transaction`)."""
        return await self._pools.transaction(fn, single=single)

    async def close(self) -> None:
        await self._pools.close()


async def _fetchall(conn: Conn, *, query: str, params: Sequence[Any]) -> list[Any]:
    cur = await conn.execute(query, params)
    return await cur.fetchall()
