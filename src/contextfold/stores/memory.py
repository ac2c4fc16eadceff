"""The in-process reference store: plain dicts, same contract as every other store.

Each method runs to completion without awaiting, so on one event loop every operation is
atomic; a lock makes it atomic across threads too (the sync ``Memory`` runs steps in its
callers' threads). Nothing survives the process.

Search runs on a private in-memory SQLite FTS5 database (stdlib ``sqlite3``, the same
tables and queries as :class:`~.sqlite.SQLiteStore`, see :mod:`.sqlite_search`), so both
stores tokenize and rank alike; it is written under the same lock as the dicts.

Messages are indexed when a search needs them, not when they are written: a search first
indexes the session's messages it may return that are not indexed yet (the folded ones
since the last search; the live ones too when it searches those). An append here is a
dict insert (10-40 µs); indexing a message costs about as much again (folding its words,
two FTS5 inserts), so indexing in the append or in the fold commit cut the store's write
throughput to 0.3-0.4x. A session nobody searches is never indexed; one that is searched
pays for each message once, in the first search after it was folded. Deleted messages
leave the index with them (a ``delete`` retention fold, a session delete).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..errors import ConfigError, ConflictError, StorageError
from ..messages import StoredMessage, make_stored
from ..policy import SessionStats
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
    plan_append,
)
from .search import SearchHit, SearchRequest, make_hit
from .sqlite_schema import statements
from .sqlite_search import (
    FTS_SCHEMA,
    VOCAB_SCHEMA,
    VocabularyCache,
    folded_range,
    index_messages,
    search_ids,
    unindex,
)

__all__ = ["MemoryStore"]

P = ParamSpec("P")
T = TypeVar("T")


def _atomic(
    method: Callable[Concatenate[MemoryStore, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[MemoryStore, P], Coroutine[Any, Any, T]]:
    """Run the (never-suspending) method under the store's lock."""

    async def locked(self: MemoryStore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            return await method(self, *args, **kwargs)

    functools.update_wrapper(locked, method)
    return locked


@dataclass
class _Session:
    stats: SessionStats
    messages: dict[int, StoredMessage] = field(default_factory=dict)
    # seq > through_seq, in order. Only ever appended to in place: a fold starts a new list,
    # so the first n items of any list it once was never change (what LiveWindow relies on)
    live: list[StoredMessage] = field(default_factory=list)
    ids: dict[str, int] = field(default_factory=dict)
    summary: Summary | None = None
    due_at: datetime | None = None
    due_seq: int = -1
    lease: Lease | None = None
    lease_epoch: int = 0
    versions: list[SummaryVersion] = field(default_factory=list)
    key: int = 0  # the session's search key (its index ids are key << 32 | seq)
    indexed: int = 0  # messages 1..indexed are in the search index (see sqlite_search)


class MemoryStore:
    """Sessions in a dict. The reference implementation of the store contract."""

    def __init__(
        self, *, retention: Retention = "archive", summary_history: bool | None = None
    ) -> None:
        if retention not in ("archive", "delete"):
            raise ConfigError(f"retention must be 'archive' or 'delete', got {retention!r}")
        self.retention: Retention = retention
        self.summary_history = summary_history
        self._sessions: dict[str, _Session] = {}
        self._ledger: list[LedgerEntry] = []
        self._next_ledger_id = 1
        self._vault: dict[str, dict[str, str]] = {}  # session -> placeholder -> value
        self._lock = threading.RLock()
        self._fts: sqlite3.Connection | None = None
        self._vocabulary = VocabularyCache()
        self._next_key = 1

    def __repr__(self) -> str:
        return f"MemoryStore(retention={self.retention!r})"

    async def setup(self) -> None:
        return None

    async def append(
        self,
        session_id: str,
        items: Sequence[PreparedMessage],
        now: datetime,
        *,
        due: DueCheck | None = None,
    ) -> AppendResult:
        with self._lock:  # the hot path: one coroutine, not _atomic's two
            return self._append(session_id, items, now, due)

    def _append(
        self,
        session_id: str,
        items: Sequence[PreparedMessage],
        now: datetime,
        due: DueCheck | None = None,
    ) -> AppendResult:
        sess = self._sessions.get(session_id)
        stats = sess.stats if sess else SessionStats(session_id=session_id)
        plan = plan_append(stats, items, sess.ids if sess else {}, now)
        last = plan.result.stats.last_seq
        due_at = due(plan.result.stats) if due is not None else None  # before any change
        if not plan.fresh:
            if sess is not None and due_at is not None:
                self._mark(sess, due_at, last)
            return plan.result
        if sess is None:
            sess = self._sessions[session_id] = _Session(stats=stats, key=self._next_key)
            self._next_key += 1
        for seq, item in plan.fresh:
            stored = make_stored(seq, item.message, item.tokens, False)
            sess.messages[seq] = stored
            sess.live.append(stored)
            if item.message.id is not None:
                sess.ids[item.message.id] = seq
        sess.stats = plan.result.stats
        if due_at is not None:
            self._mark(sess, due_at, last)
        return plan.result

    def _catch_up(self, sess: _Session, hi: int) -> None:
        """Index the session's messages up to ``hi`` (see :mod:`.sqlite_search`)."""
        if hi > sess.indexed:
            rows = ((q, sess.messages[q].message) for q in range(sess.indexed + 1, hi + 1)
                    if q in sess.messages)
            self._in_index(lambda conn: index_messages(conn, sess.key, rows))
            sess.indexed = hi

    def _in_index(self, fn: Callable[[sqlite3.Connection], None]) -> None:
        """Run ``fn`` on the search database in one transaction (one FTS5 segment for a
        span, not one per message); nothing of it stays if it fails."""
        conn = self._index()
        conn.execute("BEGIN")
        try:
            fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _index(self) -> sqlite3.Connection:
        """The search database (made on first use; used only under the store's lock)."""
        if self._fts is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            for statement in statements(FTS_SCHEMA + VOCAB_SCHEMA):
                conn.execute(statement)
            self._fts = conn
        return self._fts

    @_atomic
    async def stats(self, session_id: str) -> SessionStats | None:
        sess = self._sessions.get(session_id)
        return sess.stats if sess else None

    async def live(self, session_id: str) -> list[StoredMessage]:
        sess = self._sessions.get(session_id)
        if sess is None:
            return []
        return sess.live.copy()  # kept in step by append and commit_fold

    async def snapshot(self, session_id: str) -> Snapshot | None:
        with self._lock:
            sess = self._sessions.get(session_id)
            if sess is None:
                return None
            return Snapshot(sess.stats, sess.summary, LiveWindow(sess.live, len(sess.live)))

    @_atomic
    async def messages(
        self,
        session_id: str,
        *,
        include_folded: bool = True,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[StoredMessage]:
        sess = self._sessions.get(session_id)
        if sess is None:
            return []
        through = sess.stats.through_seq
        out = [
            replace(m, folded=s <= through)
            for s, m in sorted(sess.messages.items())
            if s > after_seq and (include_folded or s > through)
        ]
        return out if limit is None else out[:limit]

    async def summary(self, session_id: str) -> Summary | None:
        sess = self._sessions.get(session_id)
        return sess.summary if sess else None

    @_atomic
    async def fetch(self, session_id: str, seqs: Sequence[int]) -> list[StoredMessage]:
        sess = self._sessions.get(session_id)
        if sess is None:
            return []
        through = sess.stats.through_seq
        out = []
        for seq in sorted({int(q) for q in seqs}):
            stored = sess.messages.get(seq)
            if stored is not None:
                out.append(replace(stored, folded=seq <= through) if seq <= through else stored)
        return out

    @_atomic
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
        sess = self._sessions.get(session_id)
        if sess is None or not req.terms:
            return []
        through = sess.stats.through_seq
        lo, hi = folded_range(folded, through)
        self._catch_up(sess, through if folded else sess.stats.last_seq)
        try:
            found = search_ids(self._index(), sess.key, req.groups, lo, hi, limit,
                               self._vocabulary)
        except sqlite3.Error as exc:
            raise StorageError(f"search failed in {self!r}: {exc}") from exc
        return req.keep(
            make_hit(sess.messages[q], score, req.terms, q <= through, words, req.snippets)
            for q, score, words in found)

    @_atomic
    async def commit_fold(self, commit: FoldCommit, entry: LedgerEntry) -> Summary:
        sess = self._sessions.get(commit.session_id)
        if sess is None:
            raise ConflictError(f"session {commit.session_id!r} no longer exists")
        stats = sess.stats
        if commit.lease is not None and not self._holds(sess, commit.lease):
            raise ConflictError(
                f"lease {commit.lease.token} of {commit.lease.owner!r} on session "
                f"{commit.session_id!r} expired or was taken over; the fold is fenced off"
            )
        if stats.summary_version != commit.expected_version:
            raise ConflictError(
                f"session {commit.session_id!r} summary is at version {stats.summary_version}, "
                f"the fold started from {commit.expected_version}"
            )
        if commit.lo != stats.through_seq + 1 or not (commit.lo <= commit.hi <= stats.last_seq):
            raise ConflictError(
                f"fold span {commit.lo}..{commit.hi} does not start at the first live message "
                f"{stats.through_seq + 1} or passes the last {stats.last_seq}"
            )
        span = sess.live[: commit.hi - commit.lo + 1]  # lo is the first live seq
        folded_tokens = sum(m.tokens for m in span)
        summary = Summary(
            text=commit.text,
            through_seq=commit.hi,
            version=stats.summary_version + 1,
            tokens=commit.tokens,
            updated_at=entry.started_at,
        )
        if self.retention == "delete":
            for s in range(commit.lo, commit.hi + 1):
                del sess.messages[s]
            if sess.indexed >= commit.lo:  # a search of live messages indexed some
                self._in_index(lambda conn: unindex(conn, sess.key, commit.lo, commit.hi))
            sess.indexed = max(sess.indexed, commit.hi)
        # else the folded messages are indexed by the next search (see the module doc)
        sess.live = sess.live[len(span) :]  # a new list: windows on the old one stay valid
        sess.summary = summary
        sess.stats = replace(
            stats,
            live_count=stats.live_count - len(span),
            live_tokens=stats.live_tokens - folded_tokens,
            through_seq=commit.hi,
            summary_version=summary.version,
            summary_tokens=commit.tokens,
            reported_input_tokens=None,
        )
        sess.versions.append(
            SummaryVersion(
                session_id=commit.session_id,
                version=summary.version,
                lo=commit.lo,
                through_seq=commit.hi,
                at_seq=stats.last_seq,
                tokens=commit.tokens,
                live_tokens=sess.stats.live_tokens,
                text=commit.text if keeps_summary_text(self) else None,
                created_at=entry.started_at,
            )
        )
        self._add_ledger(entry)
        return summary

    async def summary_versions(
        self,
        session_id: str,
        *,
        after_version: int = 0,
        limit: int | None = None,
        text: bool = True,
    ) -> list[SummaryVersion]:
        sess = self._sessions.get(session_id)
        if sess is None:
            return []
        out = [
            v if text else replace(v, text=None) for v in sess.versions if v.version > after_version
        ]
        return out if limit is None else out[:limit]

    def _add_ledger(self, entry: LedgerEntry) -> int:
        lid = self._next_ledger_id
        self._next_ledger_id += 1
        self._ledger.append(replace(entry, id=lid))
        return lid

    @_atomic
    async def record_attempt(self, entry: LedgerEntry) -> int:
        return self._add_ledger(entry)

    @_atomic
    async def record_usage(self, session_id: str, input_tokens: int) -> None:
        sess = self._sessions.get(session_id)
        if sess is not None:
            sess.stats = replace(sess.stats, reported_input_tokens=input_tokens)

    @_atomic
    async def ledger(
        self, session_id: str | None = None, *, limit: int | None = 100
    ) -> list[LedgerEntry]:
        rows = [
            e for e in reversed(self._ledger) if session_id is None or e.session_id == session_id
        ]
        return rows if limit is None else rows[:limit]

    @_atomic
    async def list_sessions(
        self, *, limit: int | None = 100, offset: int = 0
    ) -> list[SessionStats]:
        rows = sorted(
            (s.stats for s in self._sessions.values()),
            key=lambda st: (st.last_activity is not None, st.last_activity, st.session_id),
            reverse=True,
        )
        rows = rows[offset:]
        return rows if limit is None else rows[:limit]

    @_atomic
    async def delete(self, session_id: str, *, if_last_seq: int | None = None) -> bool:
        sess = self._sessions.get(session_id)
        if sess is None:
            return False
        if if_last_seq is not None and sess.stats.last_seq != if_last_seq:
            return False
        del self._sessions[session_id]
        if sess.indexed:
            self._in_index(lambda conn: unindex(conn, sess.key))
        self._ledger = [e for e in self._ledger if e.session_id != session_id]
        self._vault.pop(session_id, None)
        return True

    @_atomic
    async def vault_get(self, session_id: str) -> dict[str, str]:
        return dict(self._vault.get(session_id, {}))

    @_atomic
    async def vault_put(self, session_id: str, entries: Mapping[str, str]) -> None:
        vault = self._vault.setdefault(session_id, {})
        for placeholder, value in entries.items():
            vault.setdefault(placeholder, value)

    @staticmethod
    def _holds(sess: _Session, lease: Lease) -> bool:
        held = sess.lease
        return (
            held is not None
            and (held.owner, held.token) == (lease.owner, lease.token)
            and held.expires_at > datetime.now(timezone.utc)
        )

    @staticmethod
    def _mark(sess: _Session, due_at: datetime | None, as_of_seq: int) -> None:
        if as_of_seq >= sess.due_seq:
            sess.due_at, sess.due_seq = due_at, as_of_seq

    @_atomic
    async def mark_due(self, session_id: str, due_at: datetime | None, *, as_of_seq: int) -> None:
        sess = self._sessions.get(session_id)
        if sess is not None:
            self._mark(sess, due_at, as_of_seq)

    @_atomic
    async def claim_due(self, owner: str, *, limit: int, lease_seconds: float) -> list[Lease]:
        now = datetime.now(timezone.utc)
        due = sorted(
            (s.due_at, sid)
            for sid, s in self._sessions.items()
            if s.due_at is not None
            and s.due_at <= now
            and (s.lease is None or s.lease.expires_at <= now)
        )
        leases = []
        expires = datetime.fromtimestamp(time.time() + lease_seconds, timezone.utc)
        for _, sid in due[:limit]:
            sess = self._sessions[sid]
            sess.lease_epoch += 1
            sess.lease = Lease(sid, owner, sess.lease_epoch, expires)
            leases.append(sess.lease)
        return leases

    @_atomic
    async def claim(self, session_id: str, owner: str, *, lease_seconds: float) -> Lease | None:
        sess = self._sessions.get(session_id)
        now = datetime.now(timezone.utc)
        if sess is None or (sess.lease is not None and sess.lease.expires_at > now):
            return None
        sess.lease_epoch += 1
        expires = datetime.fromtimestamp(time.time() + lease_seconds, timezone.utc)
        sess.lease = Lease(session_id, owner, sess.lease_epoch, expires)
        return sess.lease

    @_atomic
    async def claim_many(
        self, session_ids: Sequence[str], owner: str, *, lease_seconds: float
    ) -> list[Lease]:
        leases = [await self.claim(s, owner, lease_seconds=lease_seconds) for s in session_ids]
        return [lease for lease in leases if lease is not None]

    @_atomic
    async def release_many(self, leases: Sequence[Lease]) -> None:
        for lease in leases:
            await self.release(lease, due_at=None, as_of_seq=-1)

    @_atomic
    async def revoke_leases(self, owner_prefix: str, *, except_owner: str | None = None) -> int:
        revoked = 0
        for sess in self._sessions.values():
            held = sess.lease
            if held is not None and held.owner.startswith(owner_prefix) \
                    and held.owner != except_owner:
                sess.lease = None
                sess.lease_epoch += 1  # as the databases bump the token
                revoked += 1
        return revoked

    @_atomic
    async def snapshots(self, session_ids: Sequence[str]) -> dict[str, Snapshot]:
        out = {}
        for sid in session_ids:
            snap = await self.snapshot(sid)
            if snap is not None:
                out[sid] = snap
        return out

    @_atomic
    async def renew(self, lease: Lease, *, lease_seconds: float) -> Lease | None:
        sess = self._sessions.get(lease.session_id)
        if sess is None or not self._holds(sess, lease):
            return None
        expires = datetime.fromtimestamp(time.time() + lease_seconds, timezone.utc)
        sess.lease = replace(lease, expires_at=expires)
        return sess.lease

    @_atomic
    async def release(self, lease: Lease, *, due_at: datetime | None, as_of_seq: int) -> bool:
        sess = self._sessions.get(lease.session_id)
        if (
            sess is None
            or sess.lease is None
            or sess.lease.token != lease.token
            or sess.lease.owner != lease.owner
        ):
            return False
        sess.lease = None
        self._mark(sess, due_at, as_of_seq)
        return True

    @_atomic
    async def list_due(self, *, limit: int | None = 100) -> list[tuple[str, datetime]]:
        rows = sorted((s.due_at, sid) for sid, s in self._sessions.items() if s.due_at is not None)
        out = [(sid, at) for at, sid in rows]
        return out if limit is None else out[:limit]

    async def close(self) -> None:
        return None  # the search database goes with the store (it may still be read)
