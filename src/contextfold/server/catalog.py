"""The service's own tables: API keys and each tenant's session index (with settings).

They live in the same database as the sessions — the same SQLite file or the same
PostgreSQL database — so ``contextfold keys create --db X`` and ``contextfold serve --db X``
need nothing else, and several server processes (``--workers N``, or several machines on one
PostgreSQL) share them. They are separate from the store's tables and migrations: the
store knows nothing of tenants.

Tables (created if missing, safe to run twice):

``cf_server_keys``
    one row per API key: ``key_id`` (public, shown by ``keys list``), ``tenant``,
    ``key_hash`` (SHA-256 of the whole key; keys are 256-bit random, so a fast hash is
    enough and lookups stay O(1)), ``created_at``, ``revoked_at``.
``cf_server_sessions``
    one row per (tenant, session): ``created_at``, ``last_activity`` (refreshed at most
    once a second per session by each process), ``settings`` (JSON of the session's own
    settings, or NULL for the server defaults). Indexed by (tenant, last_activity,
    session_id), so a tenant's listing is a keyset-paginated index range scan however many
    tenants and sessions there are.
``cf_server_rate_buckets``
    the token bucket of each API key's rate limit shared by every server process
    (:mod:`contextfold.server.shared_limits`): ``tokens`` as of ``updated_at`` (epoch).

The session rows are an index of the store's sessions, written after each append: the
store stays the source of truth for messages (see :mod:`contextfold.server.tenancy`).
Every call is a blocking DB-API call; the async wrappers run them in a worker thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from ..errors import ConfigError, StorageError

__all__ = ["Catalog", "KeyRecord", "SessionRow", "open_catalog"]

T = TypeVar("T")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS cf_server_keys (
        key_id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        created_at DOUBLE PRECISION NOT NULL,
        revoked_at DOUBLE PRECISION
    )""",
    "CREATE INDEX IF NOT EXISTS cf_server_keys_tenant ON cf_server_keys (tenant)",
    """CREATE TABLE IF NOT EXISTS cf_server_sessions (
        tenant TEXT NOT NULL,
        session_id TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        last_activity DOUBLE PRECISION NOT NULL,
        settings TEXT,
        PRIMARY KEY (tenant, session_id)
    )""",
    "CREATE INDEX IF NOT EXISTS cf_server_sessions_activity"
    " ON cf_server_sessions (tenant, last_activity, session_id)",
    """CREATE TABLE IF NOT EXISTS cf_server_rate_buckets (
        bucket TEXT PRIMARY KEY,
        tokens DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    )""",
)


#: ``Catalog.lease_tokens`` on PostgreSQL for a bucket that has a row: refill and take in
#: one statement (the row locked while it runs); (tokens taken, tokens it had), no row
#: for a new bucket (the two-statement transaction makes it).
_PG_LEASE = """
WITH had AS (
    SELECT LEAST(%(burst)s, tokens + GREATEST(0, %(now)s - updated_at) * %(rate)s) AS t,
           GREATEST(updated_at, %(now)s) AS at
    FROM cf_server_rate_buckets WHERE bucket = %(bucket)s FOR UPDATE
), take AS (
    SELECT t, at, CASE WHEN t >= %(want)s THEN %(want)s WHEN t >= %(least)s THEN t ELSE 0 END
           AS n FROM had
)
UPDATE cf_server_rate_buckets b SET tokens = take.t - take.n, updated_at = take.at
FROM take WHERE b.bucket = %(bucket)s RETURNING take.n, take.t
"""


@dataclass(frozen=True, slots=True)
class KeyRecord:
    key_id: str
    tenant: str
    created_at: float
    revoked_at: float | None


@dataclass(frozen=True, slots=True)
class SessionRow:
    tenant: str
    session_id: str
    created_at: float
    last_activity: float
    settings: str | None


class _Connection(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...


class Catalog:
    """Keys and tenant session rows in the store's database. Build with :func:`open_catalog`."""

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        placeholder: str,
        driver_errors: tuple[type[BaseException], ...],
        pooled: bool = False,
        inline_reads: bool = False,
    ) -> None:
        self._connect = connect
        self._ph = placeholder
        self._driver_errors = driver_errors
        self._pooled = pooled
        self._inline_reads = inline_reads
        self._reader: Any = None
        self._lock = threading.Lock()
        self._conn: Any = None
        self._pool: Any = None
        self._ready = False

    # -- plumbing ---------------------------------------------------------------------

    def _sql(self, sql: str) -> str:
        return sql if self._ph == "?" else sql.replace("?", self._ph)

    @contextmanager
    def _connection(self) -> Iterator[_Connection]:
        try:
            if self._pooled:
                if self._pool is None:
                    with self._lock:
                        if self._pool is None:
                            self._pool = self._connect()
                with self._pool.connection() as conn:
                    yield conn
            else:
                with self._lock:
                    if self._conn is None:
                        self._conn = self._connect()
                    yield self._conn
        except self._driver_errors as exc:
            raise StorageError(f"server catalog: {type(exc).__name__}") from exc

    def _run(self, fn: Callable[[_Connection], T]) -> T:
        with self._connection() as conn:
            if not self._ready:
                for ddl in _SCHEMA:
                    conn.execute(ddl)
                self._ready = True
            return fn(conn)

    async def _arun(self, fn: Callable[[_Connection], T]) -> T:
        return await asyncio.to_thread(self._run, fn)

    async def _aread(self, fn: Callable[[_Connection], T]) -> T:
        """A read. SQLite: on a reader connection in the caller's (event loop) thread — a
        WAL read of an indexed row never waits for writers and costs less than a thread
        hop. PostgreSQL: in a worker thread, like writes."""
        if not self._inline_reads:
            return await self._arun(fn)
        if not self._ready:
            await asyncio.to_thread(self.setup)
        try:
            if self._reader is None:
                self._reader = self._connect()
            return fn(self._reader)
        except self._driver_errors as exc:
            raise StorageError(f"server catalog: {type(exc).__name__}") from exc

    def setup(self) -> None:
        """Create the tables if missing (safe to call any number of times)."""
        self._run(lambda conn: None)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._pool is not None:
                self._pool.close()
                self._pool = None
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    # -- keys ---------------------------------------------------------------------------

    def add_key(self, key_id: str, tenant: str, key_hash: str) -> KeyRecord:
        now = time.time()
        sql = self._sql(
            "INSERT INTO cf_server_keys (key_id, tenant, key_hash, created_at) VALUES (?, ?, ?, ?)"
        )
        self._run(lambda c: c.execute(sql, (key_id, tenant, key_hash, now)))
        return KeyRecord(key_id, tenant, now, None)

    def list_keys(self, tenant: str | None = None) -> list[KeyRecord]:
        sql = "SELECT key_id, tenant, created_at, revoked_at FROM cf_server_keys"
        params: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            params = (tenant,)
        sql = self._sql(sql + " ORDER BY tenant, created_at, key_id")
        rows = self._run(lambda c: c.execute(sql, params).fetchall())
        return [KeyRecord(*r) for r in rows]

    def revoke_key(self, key_id: str) -> bool:
        """Revoke a key by its id; False if there is no such unrevoked key."""
        sql = self._sql(
            "UPDATE cf_server_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL"
        )
        cur = self._run(lambda c: c.execute(sql, (time.time(), key_id)))
        return bool(cur.rowcount)

    async def tenant_for(self, key_hash: str) -> tuple[str, str] | None:
        """(tenant, key_id) of an unrevoked key with this hash, else None."""
        sql = self._sql(
            "SELECT tenant, key_id FROM cf_server_keys WHERE key_hash = ? AND revoked_at IS NULL"
        )
        row = await self._aread(lambda c: c.execute(sql, (key_hash,)).fetchone())
        return (row[0], row[1]) if row else None

    # -- rate limits --------------------------------------------------------------------

    def lease_tokens(
        self, bucket: str, *, want: float, least: float, rate: float, burst: float, now: float
    ) -> tuple[float, float]:
        """Refill the shared bucket ``bucket`` (``rate``/s up to ``burst``, as of ``now``,
        epoch seconds) and take ``want`` tokens from it, or as many as it has if that is at
        least ``least``, else none. Returns (tokens taken, tokens it had). One short write
        transaction; blocking (run it off the event loop)."""
        least_fn, most_fn = ("min", "max") if self._ph == "?" else ("LEAST", "GREATEST")
        refill = self._sql(
            "INSERT INTO cf_server_rate_buckets (bucket, tokens, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (bucket) DO UPDATE SET"
            f" tokens = {least_fn}(?, cf_server_rate_buckets.tokens"
            f" + {most_fn}(0, ? - cf_server_rate_buckets.updated_at) * ?),"
            f" updated_at = {most_fn}(cf_server_rate_buckets.updated_at, ?)"
            " RETURNING tokens"
        )
        spend = self._sql("UPDATE cf_server_rate_buckets SET tokens = tokens - ? WHERE bucket = ?")
        args: Any = {"bucket": bucket, "want": want, "least": least, "rate": rate, "burst": burst,
                "now": now}

        def run(conn: _Connection) -> tuple[float, float]:
            if self._ph == "%s":  # PostgreSQL: a bucket's row there is leased in one statement
                one = conn.execute(_PG_LEASE, args).fetchone()
                if one is not None:
                    return float(one[0]), float(one[1])
            with _transaction(conn):
                row = conn.execute(refill, (bucket, burst, now, burst, now, rate, now)).fetchone()
                had = float(row[0])
                taken = want if had >= want else had if had >= least else 0.0
                if taken > 0:
                    conn.execute(spend, (taken, bucket))
            return taken, had

        return self._run(run)

    # -- sessions -----------------------------------------------------------------------

    async def session(self, tenant: str, session_id: str) -> SessionRow | None:
        sql = self._sql(
            "SELECT tenant, session_id, created_at, last_activity, settings"
            " FROM cf_server_sessions WHERE tenant = ? AND session_id = ?"
        )
        row = await self._aread(lambda c: c.execute(sql, (tenant, session_id)).fetchone())
        return SessionRow(*row) if row else None

    async def touch(self, tenant: str, session_id: str, when: float) -> None:
        """Insert the session's row or move its ``last_activity`` to ``when``."""
        sql = self._sql(
            "INSERT INTO cf_server_sessions (tenant, session_id, created_at, last_activity)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (tenant, session_id)"
            " DO UPDATE SET last_activity = excluded.last_activity"
        )
        await self._arun(lambda c: c.execute(sql, (tenant, session_id, when, when)))

    async def activity(self, tenant: str, session_id: str, when: float) -> None:
        """Move an existing row's ``last_activity`` to ``when`` (never creates one, so a
        late write cannot bring back the row of a session deleted meanwhile)."""
        sql = self._sql(
            "UPDATE cf_server_sessions SET last_activity = ? WHERE tenant = ? AND session_id = ?"
            " AND last_activity < ?"
        )
        await self._arun(lambda c: c.execute(sql, (when, tenant, session_id, when)))

    async def put_settings(self, tenant: str, session_id: str, settings: str | None) -> None:
        now = time.time()
        sql = self._sql(
            "INSERT INTO cf_server_sessions"
            " (tenant, session_id, created_at, last_activity, settings) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (tenant, session_id) DO UPDATE SET settings = excluded.settings"
        )
        await self._arun(lambda c: c.execute(sql, (tenant, session_id, now, now, settings)))

    async def forget(self, tenant: str, session_id: str) -> bool:
        sql = self._sql("DELETE FROM cf_server_sessions WHERE tenant = ? AND session_id = ?")
        cur = await self._arun(lambda c: c.execute(sql, (tenant, session_id)))
        return bool(cur.rowcount)

    async def sessions(
        self, tenant: str, *, limit: int, before: tuple[float, str] | None = None
    ) -> list[SessionRow]:
        """The tenant's sessions, most recently active first, ``limit`` of them, starting
        after the keyset cursor ``before`` = (last_activity, session_id) of the previous
        page's last row."""
        cols = "tenant, session_id, created_at, last_activity, settings"
        if before is None:
            sql = (
                f"SELECT {cols} FROM cf_server_sessions WHERE tenant = ?"
                " ORDER BY last_activity DESC, session_id DESC LIMIT ?"
            )
            params: tuple[Any, ...] = (tenant, limit)
        else:
            sql = (
                f"SELECT {cols} FROM cf_server_sessions WHERE tenant = ?"
                " AND (last_activity < ? OR (last_activity = ? AND session_id < ?))"
                " ORDER BY last_activity DESC, session_id DESC LIMIT ?"
            )
            params = (tenant, before[0], before[0], before[1], limit)
        q = self._sql(sql)
        rows = await self._aread(lambda c: c.execute(q, params).fetchall())
        return [SessionRow(*r) for r in rows]

    async def search_sessions(
        self,
        tenant: str,
        *,
        contains: str | None,
        sort: Literal["activity", "id"],
        limit: int,
        after: Sequence[Any] | None = None,
    ) -> tuple[list[SessionRow], int]:
        """A page of the tenant's sessions whose id contains ``contains`` (any case), and
        how many match in all. ``sort``: ``activity`` (most recent first; ``after`` is the
        previous page's last (last_activity, session_id)) or ``id`` (A to Z; ``after`` is
        (session_id,)). Both are ranges over the (tenant, …) index."""
        where = "tenant = ?"
        params: list[Any] = [tenant]
        if contains:
            like = contains.lower().replace("\\", "\\\\").replace("%", "\\%")
            like = like.replace("_", "\\_")
            where += " AND lower(session_id) LIKE ? ESCAPE '\\'"
            params.append(f"%{like}%")
        count_sql = self._sql(f"SELECT COUNT(*) FROM cf_server_sessions WHERE {where}")
        page_where, page_params = where, list(params)
        if sort == "activity":
            order = "last_activity DESC, session_id DESC"
            if after is not None:
                page_where += " AND (last_activity < ? OR (last_activity = ? AND session_id < ?))"
                page_params += [after[0], after[0], after[1]]
        else:
            order = "session_id ASC"
            if after is not None:
                page_where += " AND session_id > ?"
                page_params.append(after[0])
        page_sql = self._sql(
            "SELECT tenant, session_id, created_at, last_activity, settings FROM "
            f"cf_server_sessions WHERE {page_where} ORDER BY {order} LIMIT ?"
        )
        page_params.append(limit)

        def run(conn: _Connection) -> tuple[list[SessionRow], int]:
            rows = conn.execute(page_sql, tuple(page_params)).fetchall()
            total = conn.execute(count_sql, tuple(params)).fetchone()[0]
            return [SessionRow(*r) for r in rows], int(total)

        return await self._arun(run)

    async def count_sessions(self, tenant: str) -> int:
        sql = self._sql("SELECT COUNT(*) FROM cf_server_sessions WHERE tenant = ?")
        row = await self._arun(lambda c: c.execute(sql, (tenant,)).fetchone())
        return int(row[0])

    async def ping(self) -> None:
        await self._arun(lambda c: c.execute("SELECT 1").fetchone())


@contextmanager
def _transaction(conn: Any) -> Iterator[None]:
    """A write transaction: psycopg's, or SQLite's ``BEGIN IMMEDIATE`` (the catalog's SQLite
    connection is in autocommit mode)."""
    if hasattr(conn, "transaction"):
        with conn.transaction():
            yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def open_catalog(store_url: str) -> Catalog:
    """The catalog beside the store named by ``store_url`` (``sqlite:///…``/``postgresql://…``)."""
    scheme, _, rest = store_url.partition("://")
    if scheme == "sqlite":
        path = rest[1:] if rest.startswith("/") else rest
        return _sqlite_catalog(Path(path))
    if scheme in ("postgresql", "postgres"):
        return _postgres_catalog(store_url)
    raise ConfigError(
        f"the HTTP service needs a SQLite or PostgreSQL store, got {store_url.split('://')[0]!r}"
    )


def _sqlite_catalog(path: Path) -> Catalog:
    def connect() -> sqlite3.Connection:
        from ..stores.sqlite import create_private

        create_private(path)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA busy_timeout = 30000")
        return conn

    return Catalog(
        connect, placeholder="?", driver_errors=(sqlite3.Error, OSError), inline_reads=True
    )


def _postgres_catalog(url: str) -> Catalog:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            'a PostgreSQL store needs psycopg: pip install "contextfold[server,postgres]"'
        ) from exc

    def connect() -> Any:
        pool = psycopg_pool.ConnectionPool(
            url, min_size=1, max_size=4, kwargs={"autocommit": True}, timeout=10, open=False
        )
        pool.open(wait=True, timeout=10)
        return pool

    return Catalog(
        connect,
        placeholder="%s",
        driver_errors=(psycopg.Error, OSError, psycopg_pool.PoolTimeout),
        pooled=True,
    )
