"""The default store: one SQLite file.

WAL journal, ``BEGIN IMMEDIATE`` for every write (so two writers never deadlock on a lock
upgrade), a busy timeout, numbered migrations applied by an idempotent :meth:`setup`.
All database work of one store runs on one dedicated thread (one writer per process);
the async methods hand work to it. A step run inline by the synchronous ``Memory``
(:mod:`contextfold.inline`) does the same work in the caller's thread, under the same
lock. Folded messages are marked by the session's
``through_seq`` cursor, which the fold commit moves in the same transaction that writes
the summary — so "folded" can never disagree with "covered by the summary". The append
transaction is in :mod:`.sqlite_append`, the schema and its migrations in
:mod:`.sqlite_schema`, the full-text index in :mod:`.sqlite_search`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from ..errors import ConfigError, ContextFoldError, StorageError
from ..inline import inline
from ..messages import Message, StoredMessage
from ..policy import SessionStats
from . import sqlite_schema as schema
from .base import (
    AppendResult,
    DueCheck,
    FoldCommit,
    Lease,
    LedgerEntry,
    LiveWindow,
    PreparedMessage,
    Retention,
    Snapshot,
    Summary,
    SummaryVersion,
    keeps_summary_text,
)
from .live_cache import LiveCache
from .rows import (
    LEDGER_COLUMNS,
    LedgerTotals,
    MessageDecoder,
    decode_time,
    ledger_from_row,
)
from .search import SearchHit, SearchRequest
from .sqlite_append import append_messages
from .sqlite_commits import commit_fold, insert_ledger
from .sqlite_schema import MIGRATIONS, SESSION_COLS, session_stats
from .sqlite_search import VocabularyCache, catch_up_stored, search_indexed, unindex

__all__ = ["MIGRATIONS", "SQLiteStore"]

T = TypeVar("T")


def create_private(path: Path) -> None:
    """Create the database file ``path`` (and its directory) readable by its owner only,
    if it does not exist yet: it holds every conversation (and the service's key hashes).
    SQLite gives its WAL and shared-memory files the database file's permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


class SQLiteStore:
    """Sessions in a SQLite file (``":memory:"`` for a private in-memory database).

    ``synchronous="NORMAL"`` (default) survives any process crash; ``"FULL"`` also
    survives power loss at the cost of an fsync per commit.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retention: Retention = "archive",
        busy_timeout_ms: int = 10_000,
        synchronous: str = "NORMAL",
        summary_history: bool | None = None,
    ) -> None:
        if retention not in ("archive", "delete"):
            raise ConfigError(f"retention must be 'archive' or 'delete', got {retention!r}")
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ConfigError(f"unknown synchronous mode {synchronous!r}")
        self.path = str(path)
        self.retention: Retention = retention
        self.summary_history = summary_history
        self.busy_timeout_ms = busy_timeout_ms
        self.synchronous = synchronous.upper()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="contextfold-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._decoder = MessageDecoder()
        self._vocabulary = VocabularyCache()
        self._live = LiveCache()
        self._closed = False
        self._lock = threading.Lock()  # the writer connection (on the writer thread)
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()  # the reader connection and the live cache

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, retention={self.retention!r})"

    # -- plumbing --------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            create_private(Path(self.path).expanduser())
        conn = sqlite3.connect(
            os.path.expanduser(self.path),
            isolation_level=None,
            check_same_thread=False,
            timeout=self.busy_timeout_ms / 1000,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        if self.path != ":memory:":
            schema.enable_wal(conn, self.busy_timeout_ms / 1000)
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        return conn

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._closed:
            raise StorageError(f"{self!r} is closed")

        def run() -> T:
            with self._lock:
                try:
                    return fn(self._connect())
                except sqlite3.Error as exc:
                    raise StorageError(f"SQLite error on {self.path!r}: {exc}") from exc

        if inline():  # the sync front: same work, the caller's thread, no hop
            return run()
        return await asyncio.get_running_loop().run_in_executor(self._executor, run)

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction; roll back on any error."""

        def tx(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

        return await self._call(tx)

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one read transaction (a consistent snapshot).

        On a file, reads run right here on a second connection (a WAL reader never waits
        for the writer): no hop to the writer thread on the per-turn path. ``":memory:"``
        has no second connection, so its reads go to the writer thread.
        """

        def tx(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")

        if self.path == ":memory:":
            return await self._call(tx)
        if self._closed:
            raise StorageError(f"{self!r} is closed")
        with self._read_lock:
            try:
                if self._reader is None:
                    self._reader = self._open()
                return tx(self._reader)
            except sqlite3.Error as exc:
                raise StorageError(f"SQLite error on {self.path!r}: {exc}") from exc

    # -- schema ----------------------------------------------------------------------------

    async def setup(self) -> None:
        await self._write(schema.migrate)

    # -- writes ----------------------------------------------------------------------------

    async def append(
        self,
        session_id: str,
        items: Sequence[PreparedMessage],
        now: datetime,
        *,
        due: DueCheck | None = None,
    ) -> AppendResult:
        return await self._write(
            lambda conn: append_messages(conn, self._decoder, session_id, items, now, due)
        )

    async def commit_fold(self, commit: FoldCommit, entry: LedgerEntry) -> Summary:
        decode = self._decode_for(commit.session_id)
        keep_text = keeps_summary_text(self)
        return await self._write(lambda conn: commit_fold(
            conn, commit, entry, retention=self.retention, decode=decode, keep_text=keep_text,
            ledger=self._insert_ledger,
        ))

    def _decode_for(self, session_id: str) -> Callable[[int, str, int], Message]:
        """Rows of ``session_id`` to messages through the decoder's cache (the messages
        appended by this process are there already, decoded)."""
        return lambda seq, body, tokens: self._decoder.decode(session_id, seq, body, tokens).message

    _insert_ledger = staticmethod(insert_ledger)

    async def mark_due(self, session_id: str, due_at: datetime | None, *, as_of_seq: int) -> None:
        await self._write(lambda conn: schema.mark_due(conn, session_id, due_at, as_of_seq))

    async def claim_due(self, owner: str, *, limit: int, lease_seconds: float) -> list[Lease]:
        return await self._write(lambda conn: schema.claim_due(conn, owner, limit, lease_seconds))

    async def claim(self, session_id: str, owner: str, *, lease_seconds: float) -> Lease | None:
        return await self._write(
            lambda conn: schema.claim_session(conn, session_id, owner, lease_seconds)
        )

    async def claim_many(
        self, session_ids: Sequence[str], owner: str, *, lease_seconds: float
    ) -> list[Lease]:
        def do(conn: sqlite3.Connection) -> list[Lease]:
            got = (schema.claim_session(conn, s, owner, lease_seconds) for s in session_ids)
            return [lease for lease in got if lease is not None]

        return await self._write(do)

    async def release_many(self, leases: Sequence[Lease]) -> None:
        await self._write(lambda conn: schema.release_leases(conn, leases))

    async def revoke_leases(self, owner_prefix: str, *, except_owner: str | None = None) -> int:
        return await self._write(
            lambda conn: schema.revoke_leases(conn, owner_prefix, except_owner)
        )

    async def snapshots(self, session_ids: Sequence[str]) -> dict[str, Snapshot]:
        out = {}
        for sid in session_ids:  # reads are local: no round trip to save
            snap = await self.snapshot(sid)
            if snap is not None:
                out[sid] = snap
        return out

    async def renew(self, lease: Lease, *, lease_seconds: float) -> Lease | None:
        return await self._write(lambda conn: schema.renew_lease(conn, lease, lease_seconds))

    async def release(self, lease: Lease, *, due_at: datetime | None, as_of_seq: int) -> bool:
        return await self._write(lambda conn: schema.release_lease(conn, lease, due_at, as_of_seq))

    async def list_due(self, *, limit: int | None = 100) -> list[tuple[str, datetime]]:
        return await self._call(lambda conn: schema.list_due(conn, limit))

    async def record_attempt(self, entry: LedgerEntry) -> int:
        return await self._write(lambda conn: self._insert_ledger(conn, entry))

    async def record_usage(self, session_id: str, input_tokens: int) -> None:
        await self._write(
            lambda conn: conn.execute(
                "UPDATE sessions SET reported_input_tokens = ? WHERE session_id = ?",
                (input_tokens, session_id),
            )
        )

    async def delete(self, session_id: str, *, if_last_seq: int | None = None) -> bool:
        def do(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT last_seq, search_key FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is None or (if_last_seq is not None and row[0] != if_last_seq):
                return False
            unindex(conn, row[1])
            for table in ("messages", "ledger", "pii_vault", "summary_versions", "sessions"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            with self._read_lock:
                self._live.forget(session_id)
            return True

        return await self._write(do)

    async def vault_get(self, session_id: str) -> dict[str, str]:
        return await self._read(
            lambda conn: dict(
                conn.execute(
                    "SELECT placeholder, value FROM pii_vault WHERE session_id = ?", (session_id,)
                ).fetchall()
            )
        )

    async def vault_put(self, session_id: str, entries: Mapping[str, str]) -> None:
        if entries:
            rows = [(session_id, p, v) for p, v in entries.items()]
            await self._write(
                lambda conn: conn.executemany(
                    "INSERT OR IGNORE INTO pii_vault (session_id, placeholder, value) "
                    "VALUES (?, ?, ?)",
                    rows,
                )
            )

    # -- reads -----------------------------------------------------------------------------

    async def stats(self, session_id: str) -> SessionStats | None:
        def do(conn: sqlite3.Connection) -> SessionStats | None:
            row = conn.execute(
                f"SELECT {SESSION_COLS} FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            return session_stats(row) if row else None

        return await self._call(do)

    async def snapshot(self, session_id: str) -> Snapshot | None:
        def do(conn: sqlite3.Connection) -> Snapshot | None:
            row = conn.execute(
                f"SELECT {SESSION_COLS}, summary_text, summary_updated_at, generation "
                "FROM sessions WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                self._live.forget(session_id)
                return None
            stats = session_stats(row)
            summary = None
            if row[10] is not None:
                summary = Summary(
                    row[10],
                    stats.through_seq,
                    stats.summary_version,
                    stats.summary_tokens,
                    decode_time(row[11]),
                )
            live = self._live_rows(conn, session_id, row[12], stats)
            return Snapshot(stats, summary, live)

        return await self._read(do)

    def _live_rows(
        self, conn: sqlite3.Connection, session_id: str, generation: int, stats: SessionStats
    ) -> LiveWindow:
        """Live messages, read incrementally (in the caller's read transaction): only the
        rows the live cache lacks, all of them when its list does not fit (see
        :mod:`.live_cache`)."""
        after = self._live.after(session_id)
        decode = self._decoder.decode
        while True:
            rows = conn.execute(
                "SELECT seq, body, tokens FROM messages WHERE session_id = ? AND seq > ? "
                "ORDER BY seq",
                (session_id, max(stats.through_seq, after)),
            ).fetchall()
            window = self._live.merge(session_id, generation, stats, after, (
                decode(session_id, q, b, t) for q, b, t in rows))
            if window is not None:
                return window
            after = 0  # the cached list no longer fits: read them all

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
        def do(conn: sqlite3.Connection) -> list[StoredMessage]:
            row = conn.execute(
                "SELECT through_seq FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is None:
                return []
            through = row[0]
            archived = include_folded and self.retention == "archive"
            start = after_seq if archived else max(after_seq, through)
            rows = conn.execute(
                "SELECT seq, body, tokens FROM messages WHERE session_id = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (session_id, start, -1 if limit is None else limit),
            ).fetchall()
            return [self._decoder.decode(session_id, s, b, t, s <= through) for s, b, t in rows]

        return await self._read(do)

    async def fetch(self, session_id: str, seqs: Sequence[int]) -> list[StoredMessage]:
        wanted = sorted({int(q) for q in seqs})

        def do(conn: sqlite3.Connection) -> list[StoredMessage]:
            row = conn.execute(
                "SELECT through_seq FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is None or not wanted:
                return []
            out: list[StoredMessage] = []
            for i in range(0, len(wanted), 500):
                chunk = wanted[i : i + 500]
                rows = conn.execute(
                    "SELECT seq, body, tokens FROM messages WHERE session_id = ? AND body != '' "
                    f"AND seq IN ({', '.join('?' for _ in chunk)}) ORDER BY seq",
                    (session_id, *chunk),
                ).fetchall()
                out.extend(
                    self._decoder.decode(session_id, s, b, t, s <= row[0]) for s, b, t in rows
                )
            return out

        return await self._read(do)

    async def search(
        self,
        session_id: str,
        terms: Sequence[str],
        *,
        limit: int = 20,
        folded: bool | None = None,
        min_matched: int = 1,
        snippets: bool = True,
    ) -> list[SearchHit]:
        req = SearchRequest.of(terms, limit, min_matched, snippets)
        if not req.terms:
            return []

        def do(conn: sqlite3.Connection) -> list[SearchHit] | None:
            return search_indexed(
                conn, self._decoder, session_id, req, folded, self._vocabulary
            )

        def catch_up(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT search_key, indexed_seq, last_seq FROM sessions WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if row is not None:
                catch_up_stored(
                    conn, session_id, row[0], row[1], row[2], self._decode_for(session_id)
                )

        hits = await self._read(do)
        while hits is None:  # (again only if appends came in between)
            await self._write(catch_up)
            hits = await self._read(do)
        return hits

    async def summary(self, session_id: str) -> Summary | None:
        def do(conn: sqlite3.Connection) -> Summary | None:
            row = conn.execute(
                "SELECT summary_text, through_seq, summary_version, summary_tokens, "
                "summary_updated_at FROM sessions WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if row is None or row[0] is None:
                return None
            return Summary(row[0], row[1], row[2], row[3], decode_time(row[4]))

        return await self._call(do)

    async def summary_versions(
        self,
        session_id: str,
        *,
        after_version: int = 0,
        limit: int | None = None,
        text: bool = True,
    ) -> list[SummaryVersion]:
        return await self._read(
            lambda conn: schema.read_versions(conn, session_id, after_version, limit, text)
        )

    async def ledger_totals(
        self, *, session_id: str | None = None, prefix: str | None = None
    ) -> list[LedgerTotals]:
        """Per (model, outcome) sums of the ledger rows of one session or of every session
        whose id starts with ``prefix`` — the database adds them up over an index range."""
        return await self._read(lambda conn: schema.ledger_totals(conn, session_id, prefix))

    async def ledger(
        self, session_id: str | None = None, *, limit: int | None = 100
    ) -> list[LedgerEntry]:
        cols = ", ".join(("id", *LEDGER_COLUMNS))
        lim = -1 if limit is None else limit

        def do(conn: sqlite3.Connection) -> list[LedgerEntry]:
            if session_id is None:
                rows = conn.execute(
                    f"SELECT {cols} FROM ledger ORDER BY id DESC LIMIT ?", (lim,)
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {cols} FROM ledger WHERE session_id = ? ORDER BY id DESC LIMIT ?",
                    (session_id, lim),
                ).fetchall()
            return [ledger_from_row(r) for r in rows]

        return await self._call(do)

    async def list_sessions(
        self, *, limit: int | None = 100, offset: int = 0
    ) -> list[SessionStats]:
        def do(conn: sqlite3.Connection) -> list[SessionStats]:
            rows = conn.execute(
                f"SELECT {SESSION_COLS} FROM sessions ORDER BY last_activity DESC, session_id DESC"
                " LIMIT ? OFFSET ?",
                (-1 if limit is None else limit, offset),
            ).fetchall()
            return [session_stats(r) for r in rows]

        return await self._call(do)

    async def close(self) -> None:
        if self._closed:
            return

        def shut(conn: sqlite3.Connection) -> None:
            conn.close()
            self._conn = None

        try:
            if self._conn is not None:
                await self._call(shut)
        except ContextFoldError:
            pass
        self._closed = True
        self._executor.shutdown(wait=True)
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
