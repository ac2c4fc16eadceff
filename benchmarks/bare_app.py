"""The bare FastAPI + uvicorn app of ``bench_service_speed.py``: the same two calls a chat
turn makes of ``contextfold serve`` — append two messages with ids, read the context —
done the plain way against the same database (insert two rows; select the newest 40).
No keys, no folds, no tenants: what a request costs the framework and the driver.

Store from ``BARE_STORE`` (``sqlite:///path`` or a PostgreSQL URL). SQLite runs on one
dedicated thread per process (as contextfold's store does); PostgreSQL through a psycopg
async pool. Run: ``uvicorn --app-dir benchmarks bare_app:create --factory``.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS bare_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL, msg_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
    UNIQUE (session_id, msg_id));
CREATE INDEX IF NOT EXISTS bare_messages_session ON bare_messages (session_id, seq);
"""
PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS bare_messages (
    seq BIGSERIAL PRIMARY KEY,
    session_id TEXT NOT NULL, msg_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL,
    UNIQUE (session_id, msg_id));
CREATE INDEX IF NOT EXISTS bare_messages_session ON bare_messages (session_id, seq);
"""
INSERT = ("INSERT INTO bare_messages (session_id, msg_id, role, content)"
          " VALUES ({p}, {p}, {p}, {p}) ON CONFLICT (session_id, msg_id) DO NOTHING")
NEWEST = ("SELECT seq, msg_id, role, content FROM bare_messages WHERE session_id = {p} "
          "ORDER BY seq DESC LIMIT 40")
ALL_IDS = "SELECT msg_id FROM bare_messages WHERE session_id = {p}"


class Message(BaseModel):
    role: str
    content: str
    id: str


class Append(BaseModel):
    messages: list[Message]


def setup(url: str) -> None:
    """Create the table (the benchmark calls this once, before the app's processes start)."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SQLITE_SCHEMA)
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(PG_SCHEMA)


class SQLiteBackend:
    def __init__(self, path: str) -> None:
        self.path = path
        self.pool = ThreadPoolExecutor(1)
        self.conn: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        if self.conn is None:
            self.conn = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                        check_same_thread=False)
            self.conn.execute("PRAGMA synchronous=NORMAL")
        return self.conn

    async def run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def _append(self, sid: str, rows: list[Message]) -> None:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(INSERT.format(p="?"),
                             [(sid, m.id, m.role, m.content) for m in rows])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _query(self, query: str, sid: str) -> list[tuple[Any, ...]]:
        return self._conn().execute(query.format(p="?"), (sid,)).fetchall()

    async def append(self, sid: str, rows: list[Message]) -> None:
        await self.run(self._append, sid, rows)

    async def query(self, query: str, sid: str) -> list[tuple[Any, ...]]:
        result: list[tuple[Any, ...]] = await self.run(self._query, query, sid)
        return result

    async def close(self) -> None:
        self.pool.shutdown()


class PostgresBackend:
    def __init__(self, url: str) -> None:
        from psycopg_pool import AsyncConnectionPool

        self.pool = AsyncConnectionPool(url, min_size=2, max_size=10, open=False)

    async def open(self) -> None:
        await self.pool.open()

    async def append(self, sid: str, rows: list[Message]) -> None:
        async with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(INSERT.format(p="%s"),
                                  [(sid, m.id, m.role, m.content) for m in rows])

    async def query(self, query: str, sid: str) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(query.format(p="%s"), (sid,))
            return await cur.fetchall()

    async def close(self) -> None:
        await self.pool.close()


def create() -> FastAPI:
    url = os.environ["BARE_STORE"]
    backend: SQLiteBackend | PostgresBackend = (
        SQLiteBackend(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///")
        else PostgresBackend(url)
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if isinstance(backend, PostgresBackend):
            await backend.open()
        yield
        await backend.close()

    app = FastAPI(lifespan=lifespan)

    @app.post("/sessions/{session_id}/messages")
    async def append(session_id: str, body: Append) -> dict[str, Any]:
        await backend.append(session_id, body.messages)
        return {"session_id": session_id, "appended": [m.id for m in body.messages]}

    @app.get("/sessions/{session_id}/context")
    async def context(session_id: str) -> dict[str, Any]:
        rows = await backend.query(NEWEST, session_id)
        return {"session_id": session_id, "messages": [
            {"seq": r[0], "id": r[1], "role": r[2], "content": r[3]} for r in reversed(rows)]}

    @app.get("/sessions/{session_id}/ids")
    async def ids(session_id: str) -> list[str]:
        return [r[0] for r in await backend.query(ALL_IDS, session_id)]

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app
