"""How a ``PostgresStore`` runs a transaction: its connection pools.

An async pool, opened on first use, for the async front; for a step run inline (the
synchronous ``Memory``, :mod:`contextfold.inline`) a synchronous pool whose connections are
seen as async ones (:class:`~.postgres_connections.InlineConn`), so the store writes every
transaction once, as ``async def do(conn)``. Both pools give each connection the store's
schema and timeouts; driver errors become :class:`~contextfold.errors.StorageError`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from ..errors import ContextFoldError, StorageError
from ..inline import inline, run_elsewhere
from .postgres_connections import (
    InlineConn,
    connect_error,
    open_async_pool,
    open_sync_pool,
    session_settings,
)

__all__ = ["Conn", "Pools"]

T = TypeVar("T")
Conn = psycopg.AsyncConnection[tuple[Any, ...]]
SyncConn = psycopg.Connection[tuple[Any, ...]]


class Pools:
    """The pools of one store (``name``: the store, as errors name it): at most ``size``
    connections each, ``settings`` (timeouts in milliseconds) and ``schema`` set on every
    connection."""

    def __init__(self, url: str, schema: str, *, size: int, connect_timeout: float,
                 settings: Mapping[str, int], name: str) -> None:
        self.url = url
        self.schema = schema
        self.size = size
        self.connect_timeout = connect_timeout
        self.settings = dict(settings)
        self.name = name
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._pool_lock: asyncio.Lock | None = None
        self._sync_pool: ConnectionPool[SyncConn] | None = None
        self._sync_pool_lock = threading.Lock()
        self._closed = False

    async def _configure(self, conn: Conn) -> None:
        for statement in session_settings(self.settings, self.schema):
            await conn.execute(statement)

    def _configure_sync(self, conn: SyncConn) -> None:
        for statement in session_settings(self.settings, self.schema):
            conn.execute(statement)

    def _get_sync_pool(self) -> ConnectionPool[SyncConn]:
        """The synchronous pool of a step run inline (the sync ``Memory``), opened on
        first use; same settings as the async pool."""
        if self._closed:
            raise StorageError(f"{self.name} is closed")
        with self._sync_pool_lock:
            if self._sync_pool is None:
                try:
                    self._sync_pool = open_sync_pool(
                        self.url,
                        size=self.size,
                        timeout=self.connect_timeout,
                        configure=self._configure_sync,
                        name=f"contextfold-{self.schema}-sync",
                    )
                except (psycopg.Error, PoolTimeout) as exc:
                    raise connect_error(self.url, exc) from exc
            return self._sync_pool

    async def _get_pool(self) -> AsyncConnectionPool[Conn]:
        if self._closed:
            raise StorageError(f"{self.name} is closed")
        if self._pool is None:
            if self._pool_lock is None:
                self._pool_lock = asyncio.Lock()
            async with self._pool_lock:
                if self._pool is None:
                    try:
                        self._pool = await open_async_pool(
                            self.url,
                            size=self.size,
                            timeout=self.connect_timeout,
                            configure=self._configure,
                            name=f"contextfold-{self.schema}",
                        )
                    except (psycopg.Error, PoolTimeout) as exc:
                        raise connect_error(self.url, exc) from exc
        return self._pool

    async def transaction(self, fn: Callable[[Conn], Awaitable[T]], *,
                          single: bool = False) -> T:
        """Run ``fn`` in one transaction; roll back on any error; translate driver errors.

        ``single``: ``fn`` runs exactly one statement, which autocommit already makes a
        transaction of its own — saves the BEGIN and COMMIT round trips.
        """
        if inline():  # the sync front: the same ``fn`` on a synchronous connection
            return await self._transaction_inline(fn, single)
        pool = await self._get_pool()
        try:
            async with pool.connection() as conn:
                if single:
                    return await fn(conn)
                async with conn.transaction():
                    return await fn(conn)
        except ContextFoldError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise StorageError(f"PostgreSQL error on {self.name}: {exc}") from exc

    async def _transaction_inline(self, fn: Callable[[Conn], Awaitable[T]],
                                  single: bool) -> T:
        pool = self._get_sync_pool()
        try:
            with pool.connection() as sync_conn:
                conn = cast(Conn, InlineConn(sync_conn))
                if single:
                    return await fn(conn)
                with sync_conn.transaction():
                    return await fn(conn)
        except ContextFoldError:
            raise
        except (psycopg.Error, PoolTimeout) as exc:
            raise StorageError(f"PostgreSQL error on {self.name}: {exc}") from exc

    async def close(self) -> None:
        self._closed = True
        pool, self._pool = self._pool, None
        with self._sync_pool_lock:
            sync_pool, self._sync_pool = self._sync_pool, None
        if sync_pool is not None:
            sync_pool.close()
        if pool is not None:  # opened on a loop: closed there (inline: the loop thread)
            await run_elsewhere(pool.close())
