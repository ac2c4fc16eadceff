"""The SQLite schema: numbered migrations and how a sessions row becomes stats."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone

from .base import FoldCommit, Lease, SummaryVersion
from .rows import (
    SESSION_COLS,
    LedgerTotals,
    encode_time,
    ledger_totals_from_rows,
    ledger_totals_query,
    session_stats,
    version_from_row,
)
from .sqlite_search import FTS_SCHEMA, VOCAB_SCHEMA, catch_up_stored

__all__ = [
    "MIGRATIONS",
    "SESSION_COLS",
    "VERSION_COLS",
    "Step",
    "claim_due",
    "claim_session",
    "enable_wal",
    "epoch",
    "from_epoch",
    "holds_lease",
    "insert_version",
    "ledger_totals",
    "list_due",
    "mark_due",
    "migrate",
    "read_versions",
    "release_lease",
    "release_leases",
    "renew_lease",
    "revoke_leases",
    "session_stats",
    "statements",
]

_INITIAL = """
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL DEFAULT 0,
    live_count INTEGER NOT NULL DEFAULT 0,
    live_tokens INTEGER NOT NULL DEFAULT 0,
    through_seq INTEGER NOT NULL DEFAULT 0,
    summary_version INTEGER NOT NULL DEFAULT 0,
    summary_text TEXT,
    summary_tokens INTEGER NOT NULL DEFAULT 0,
    summary_updated_at TEXT,
    pending_calls TEXT NOT NULL DEFAULT '[]',
    last_activity TEXT,
    reported_input_tokens INTEGER,
    created_at TEXT NOT NULL
);
CREATE INDEX sessions_activity ON sessions (last_activity);
CREATE TABLE messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    client_id TEXT,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX messages_client_id ON messages (session_id, client_id)
    WHERE client_id IS NOT NULL;
CREATE TABLE ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    lo INTEGER NOT NULL DEFAULT 0,
    hi INTEGER NOT NULL DEFAULT 0,
    messages_folded INTEGER NOT NULL DEFAULT 0,
    tokens_folded INTEGER NOT NULL DEFAULT 0,
    summary_tokens INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    model TEXT,
    latency_ms REAL NOT NULL DEFAULT 0,
    error_class TEXT,
    error TEXT,
    started_at TEXT,
    key TEXT
);
CREATE INDEX ledger_session ON ledger (session_id, id);
"""

# Due and lease times are REAL unix seconds so they compare as numbers.
_DUE_AND_LEASES = """
ALTER TABLE sessions ADD COLUMN due_at REAL;
ALTER TABLE sessions ADD COLUMN due_seq INTEGER NOT NULL DEFAULT -1;
ALTER TABLE sessions ADD COLUMN lease_owner TEXT;
ALTER TABLE sessions ADD COLUMN lease_expires REAL;
ALTER TABLE sessions ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_due ON sessions (due_at) WHERE due_at IS NOT NULL;
ALTER TABLE ledger ADD COLUMN owner TEXT;
ALTER TABLE ledger ADD COLUMN lease_token INTEGER;
"""

# Reversible redaction: placeholder -> value per session, apart from the summary.
_PII_VAULT = """
CREATE TABLE pii_vault (
    session_id TEXT NOT NULL,
    placeholder TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (session_id, placeholder)
) WITHOUT ROWID;
"""

# One row per committed fold: what the inspector diffs. ``text`` is NULL when the store
# keeps no summary history (delete retention by default).
_SUMMARY_VERSIONS = """
CREATE TABLE summary_versions (
    session_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    lo INTEGER NOT NULL,
    through_seq INTEGER NOT NULL,
    at_seq INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    live_tokens INTEGER NOT NULL,
    text TEXT,
    created_at TEXT,
    PRIMARY KEY (session_id, version)
) WITHOUT ROWID;
"""

# Full-text search: each session gets a stable integer key (its messages' index ids are
# ``key << 32 | seq``) and a watermark of how far its messages are indexed, then the FTS5
# tables (see sqlite_search), then every stored message is indexed — a database made
# before search gains it here.
_SEARCH_KEYS = """
ALTER TABLE sessions ADD COLUMN search_key INTEGER;
ALTER TABLE sessions ADD COLUMN indexed_seq INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET search_key = rowid;
CREATE UNIQUE INDEX sessions_search_key ON sessions (search_key);
"""


def _full_text_search(conn: sqlite3.Connection) -> None:
    for statement in statements(_SEARCH_KEYS + FTS_SCHEMA):
        conn.execute(statement)
    sessions = conn.execute("SELECT session_id, search_key, last_seq FROM sessions").fetchall()
    for session_id, key, last in sessions:
        catch_up_stored(conn, session_id, key, 0, last)


# Each sessions row's generation: a number no other row of this file ever had, so a session
# deleted and created again under the same id (by any process, even within the same
# ``created_at``) is told apart from the one before — what a cached live list is checked
# against (see :mod:`.live_cache`). Drawn from a one-row counter by a trigger, so every
# insert gets one; the rows there already get theirs from their rowids.
_SESSION_GENERATIONS = """
ALTER TABLE sessions ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET generation = rowid;
CREATE TABLE session_generation (last INTEGER NOT NULL);
INSERT INTO session_generation SELECT coalesce(max(generation), 0) FROM sessions;
CREATE TRIGGER sessions_generation AFTER INSERT ON sessions BEGIN
    UPDATE session_generation SET last = last + 1;
    UPDATE sessions SET generation = (SELECT last FROM session_generation)
        WHERE rowid = new.rowid;
END;
"""


#: One migration step: SQL (statements separated by ``;``) or a function run in the
#: migration's transaction.
Step = str | Callable[[sqlite3.Connection], None]

#: Ordered (version, name, step). Append new ones; never edit an applied migration.
MIGRATIONS: list[tuple[int, str, Step]] = [
    (1, "initial schema", _INITIAL),
    (2, "due sessions and leases", _DUE_AND_LEASES),
    (3, "pii vault", _PII_VAULT),
    (4, "summary versions", _SUMMARY_VERSIONS),
    (5, "full-text search", _full_text_search),
    (6, "search vocabulary", VOCAB_SCHEMA),
    (7, "session generations", _SESSION_GENERATIONS),
]


def statements(script: str) -> list[str]:
    """The statements of ``script`` (a trigger body's ``;`` does not end its statement)."""
    out: list[str] = []
    pending = ""
    for part in script.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip())
            pending = ""
    return out

VERSION_COLS = (
    "session_id, version, lo, through_seq, at_seq, tokens, live_tokens, text, created_at"
)


def insert_version(
    conn: sqlite3.Connection,
    commit: FoldCommit,
    version: int,
    at_seq: int,
    text: str | None,
    at: datetime | None,
) -> None:
    """Record a committed fold's summary version, inside the fold's transaction and after
    the sessions row was updated (its ``live_tokens`` is the count after the fold)."""
    conn.execute(
        f"INSERT INTO summary_versions ({VERSION_COLS}) SELECT ?, ?, ?, ?, ?, ?, live_tokens, "
        "?, ? FROM sessions WHERE session_id = ?",
        (
            commit.session_id,
            version,
            commit.lo,
            commit.hi,
            at_seq,
            commit.tokens,
            text,
            encode_time(at),
            commit.session_id,
        ),
    )


def read_versions(
    conn: sqlite3.Connection, session_id: str, after_version: int, limit: int | None, text: bool
) -> list[SummaryVersion]:
    cols = VERSION_COLS if text else VERSION_COLS.replace(" text,", " NULL,")
    rows = conn.execute(
        f"SELECT {cols} FROM summary_versions WHERE session_id = ? AND version > ? "
        "ORDER BY version LIMIT ?",
        (session_id, after_version, -1 if limit is None else limit),
    ).fetchall()
    return [version_from_row(r) for r in rows]


def epoch(value: datetime | None) -> float | None:
    """Due and lease times are stored as epoch seconds (REAL), comparable in SQL."""
    return value.timestamp() if value is not None else None


def from_epoch(value: float) -> datetime:
    return datetime.fromtimestamp(value, timezone.utc)


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the missing migrations, in order, recording each with ``applied_at``. Runs
    inside the caller's write transaction, so concurrent setups apply each one once."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
        "name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
    for version, name, step in MIGRATIONS:
        if version in done:
            continue
        if callable(step):
            step(conn)
        else:
            for statement in statements(step):
                conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, ?)",
            (version, name, datetime.now(timezone.utc).isoformat()),
        )


def enable_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Switch to WAL. Changing the journal mode needs an exclusive lock and SQLite does not
    wait for it (no busy handler), so two processes opening a new file at once retry."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def claim_session(
    conn: sqlite3.Connection, session_id: str, owner: str, lease_seconds: float
) -> Lease | None:
    """Lease one session unless its current lease is unexpired (inside a write tx)."""
    now = time.time()
    cur = conn.execute(
        "UPDATE sessions SET lease_owner = ?, lease_expires = ?, lease_token = lease_token + 1 "
        "WHERE session_id = ? AND (lease_expires IS NULL OR lease_expires <= ?)",
        (owner, now + lease_seconds, session_id, now),
    )
    if cur.rowcount != 1:
        return None
    (token,) = conn.execute(
        "SELECT lease_token FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return Lease(session_id, owner, token, from_epoch(now + lease_seconds))


def release_leases(conn: sqlite3.Connection, leases: Sequence[Lease]) -> None:
    """End each lease that is still its session's current one (inside a write tx)."""
    conn.executemany(
        "UPDATE sessions SET lease_owner = NULL, lease_expires = NULL "
        "WHERE session_id = ? AND lease_owner = ? AND lease_token = ?",
        [(lease.session_id, lease.owner, lease.token) for lease in leases],
    )


def revoke_leases(conn: sqlite3.Connection, owner_prefix: str, except_owner: str | None) -> int:
    """End every lease whose owner starts with ``owner_prefix`` (but ``except_owner``'s),
    expired or not, bumping the token so their folds are fenced off (in a write tx)."""
    cur = conn.execute(
        "UPDATE sessions SET lease_owner = NULL, lease_expires = NULL, "
        "lease_token = lease_token + 1 WHERE lease_owner IS NOT NULL "
        "AND substr(lease_owner, 1, ?) = ? AND lease_owner IS NOT ?",
        (len(owner_prefix), owner_prefix, except_owner),
    )
    return int(cur.rowcount)


def claim_due(
    conn: sqlite3.Connection, owner: str, limit: int, lease_seconds: float
) -> list[Lease]:
    """Lease up to ``limit`` due, unleased sessions, most overdue first (in a write tx)."""
    now = time.time()
    rows = conn.execute(
        "SELECT session_id, lease_token FROM sessions WHERE due_at <= ? "
        "AND (lease_expires IS NULL OR lease_expires <= ?) "
        "ORDER BY due_at, session_id LIMIT ?",
        (now, now, limit),
    ).fetchall()
    expires = now + lease_seconds
    conn.executemany(
        "UPDATE sessions SET lease_owner = ?, lease_expires = ?, "
        "lease_token = lease_token + 1 WHERE session_id = ?",
        [(owner, expires, sid) for sid, _ in rows],
    )
    return [Lease(sid, owner, token + 1, from_epoch(expires)) for sid, token in rows]


def renew_lease(conn: sqlite3.Connection, lease: Lease, lease_seconds: float) -> Lease | None:
    """Extend ``lease`` if it is current and unexpired (in a write tx)."""
    now = time.time()
    cur = conn.execute(
        "UPDATE sessions SET lease_expires = ? WHERE session_id = ? AND lease_owner = ? "
        "AND lease_token = ? AND lease_expires > ?",
        (now + lease_seconds, lease.session_id, lease.owner, lease.token, now),
    )
    if cur.rowcount != 1:
        return None
    return replace(lease, expires_at=from_epoch(now + lease_seconds))


def holds_lease(conn: sqlite3.Connection, lease: Lease, *, unexpired: bool = True) -> bool:
    """Whether ``lease`` (owner + token, and unexpired unless told otherwise) still holds
    its session: the fence a commit or a release checks inside its transaction."""
    row = conn.execute(
        "SELECT lease_owner, lease_token, lease_expires FROM sessions WHERE session_id = ?",
        (lease.session_id,),
    ).fetchone()
    return (
        row is not None
        and row[0] == lease.owner
        and row[1] == lease.token
        and (not unexpired or row[2] > time.time())
    )


def mark_due(conn: sqlite3.Connection, sid: str, due_at: datetime | None, as_of: int) -> None:
    """Set (or clear) when the session is due, unless a newer mark is already there."""
    conn.execute(
        "UPDATE sessions SET due_at = ?, due_seq = ? WHERE session_id = ? AND due_seq <= ?",
        (epoch(due_at), as_of, sid, as_of),
    )


def release_lease(
    conn: sqlite3.Connection, lease: Lease, due_at: datetime | None, as_of: int
) -> bool:
    """End ``lease`` if it is still its session's current one and mark the session due
    (as :func:`mark_due`); False, changing nothing, otherwise (in a write tx)."""
    if not holds_lease(conn, lease, unexpired=False):
        return False
    conn.execute(
        "UPDATE sessions SET lease_owner = NULL, lease_expires = NULL WHERE session_id = ?",
        (lease.session_id,),
    )
    mark_due(conn, lease.session_id, due_at, as_of)
    return True


def list_due(conn: sqlite3.Connection, limit: int | None) -> list[tuple[str, datetime]]:
    rows = conn.execute(
        "SELECT session_id, due_at FROM sessions WHERE due_at IS NOT NULL "
        "ORDER BY due_at, session_id LIMIT ?",
        (-1 if limit is None else limit,),
    ).fetchall()
    return [(sid, from_epoch(at)) for sid, at in rows]


def ledger_totals(
    conn: sqlite3.Connection, session_id: str | None, prefix: str | None
) -> list[LedgerTotals]:
    """Per (model, outcome) ledger sums of one session or of the sessions whose id starts
    with ``prefix`` (SQLite compares BINARY: code point order, over ``ledger_session``)."""
    sql, params = ledger_totals_query(session_id, prefix)
    return ledger_totals_from_rows(conn.execute(sql, params).fetchall())
