"""How ``PostgresStore`` gets connections: its async pool, and for a step run inline
(:mod:`contextfold.inline`) a synchronous pool whose connections are seen through the few
async-connection methods the store's transactions use.

``PostgresStore`` writes every transaction once, as ``async def do(conn)``. On the async
front ``conn`` is a psycopg ``AsyncConnection``; when the synchronous ``Memory`` runs a
step inline, ``conn`` is an :class:`InlineConn` over a pooled synchronous connection, whose
``execute``/``fetchone``/``fetchall`` return already-done awaitables
(:class:`~contextfold.inline.Ready`), so the same ``do`` runs in the caller's thread
without suspending. Only the methods the store uses are here; anything else is a bug
caught by the store tests, which run every store on both fronts.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import psycopg
import psycopg.sql
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from ..errors import StorageError
from ..inline import Ready

__all__ = [
    "InlineConn",
    "InlineCursor",
    "connect_error",
    "open_async_pool",
    "open_sync_pool",
    "redact_url",
    "session_settings",
]

Row = tuple[Any, ...]
Query = str | bytes | psycopg.sql.SQL | psycopg.sql.Composed


class InlineCursor:
    """A synchronous cursor with the async cursor's awaitable methods."""

    __slots__ = ("_cur",)

    def __init__(self, cur: psycopg.Cursor[Row]) -> None:
        self._cur = cur

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    def fetchone(self) -> Ready[Row | None]:
        return Ready(self._cur.fetchone())

    def fetchall(self) -> Ready[list[Row]]:
        return Ready(self._cur.fetchall())

    def executemany(self, query: Query, params: Iterable[Sequence[Any]]) -> Ready[None]:
        self._cur.executemany(query, params)
        return Ready(None)

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cur.close()


class _InlineTransaction:
    __slots__ = ("_tx",)

    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        self._tx = conn.transaction()

    async def __aenter__(self) -> None:
        self._tx.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return self._tx.__exit__(exc_type, exc, tb)


class InlineConn:
    """A synchronous connection with the async connection's awaitable methods."""

    __slots__ = ("_conn",)

    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        self._conn = conn

    def execute(self, query: Query, params: Any = None) -> Ready[InlineCursor]:
        return Ready(InlineCursor(self._conn.execute(query, params)))

    def cursor(self) -> InlineCursor:
        return InlineCursor(self._conn.cursor())

    def transaction(self) -> _InlineTransaction:
        return _InlineTransaction(self._conn)


def open_sync_pool(
    url: str,
    *,
    size: int,
    timeout: float,
    configure: Callable[[psycopg.Connection[Row]], None],
    name: str,
) -> ConnectionPool[psycopg.Connection[Row]]:
    """An open synchronous autocommit pool (driver errors propagate; the store translates)."""
    pool: ConnectionPool[psycopg.Connection[Row]] = ConnectionPool(
        url,
        min_size=1,
        max_size=size,
        open=False,
        kwargs={"autocommit": True},
        configure=configure,
        timeout=timeout,
        name=name,
    )
    try:
        pool.open(wait=True, timeout=timeout)
    except BaseException:
        pool.close()
        raise
    return pool


def session_settings(settings: Mapping[str, int], schema: str) -> list[sql.Composed | sql.SQL]:
    """The statements every new connection runs: timeouts, UTC, the store's schema."""
    out: list[sql.Composed | sql.SQL] = [
        sql.SQL("SET {} = {}").format(sql.SQL(name), sql.Literal(value))
        for name, value in settings.items()
    ]
    out.append(sql.SQL("SET TIME ZONE 'UTC'"))
    out.append(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
    return out


async def open_async_pool(
    url: str,
    *,
    size: int,
    timeout: float,
    configure: Callable[[psycopg.AsyncConnection[Row]], Awaitable[None]],
    name: str,
) -> AsyncConnectionPool[psycopg.AsyncConnection[Row]]:
    """An open async autocommit pool (driver errors propagate; the store translates)."""
    pool: AsyncConnectionPool[psycopg.AsyncConnection[Row]] = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=size,
        open=False,
        kwargs={"autocommit": True},
        configure=configure,
        timeout=timeout,
        name=name,
    )
    try:
        await pool.open(wait=True, timeout=timeout)
    except BaseException:
        await pool.close()
        raise
    return pool


def redact_url(url: str) -> str:
    """The URL without its password, for messages and reprs."""
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)


def connect_error(url: str, exc: BaseException) -> StorageError:
    """The one error a failed pool opening becomes, sync or async (password hidden)."""
    return StorageError(f"cannot connect to PostgreSQL at {redact_url(url)!r}: {exc}")
