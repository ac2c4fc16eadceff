"""SQLite fold commits and ledger rows, in the caller's write transaction.

A fold commit checks the session (it still exists, the lease still holds, nothing was
folded since the fold read it, every message of the span is there), then moves the
summary, the live counts and ``through_seq`` in one statement, applies the retention
(``delete``: the span's content goes, rows with a client id stay as empty tombstones so a
retried append is still recognised; ``archive``: the span is indexed for recall), writes
the ledger row and the summary version — all or nothing, as one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ..errors import ConflictError, StorageError
from ..messages import Message
from . import sqlite_schema as schema
from .base import FoldCommit, LedgerEntry, Retention, Summary
from .rows import LEDGER_COLUMNS, check_fold_start, encode_time, fenced_off, ledger_values
from .sqlite_search import catch_up_stored, unindex

__all__ = ["commit_fold", "insert_ledger"]


def commit_fold(
    conn: sqlite3.Connection,
    commit: FoldCommit,
    entry: LedgerEntry,
    *,
    retention: Retention,
    decode: Callable[[int, str, int], Message],
    keep_text: bool,
    ledger: Callable[[sqlite3.Connection, LedgerEntry], int] | None = None,
) -> Summary:
    """Commit ``commit`` with its ledger ``entry``; ``decode(seq, body, tokens)`` reads the
    span's rows for the search index, ``keep_text``: the summary version keeps its text,
    ``ledger`` writes the ledger row (default :func:`insert_ledger`)."""
    row = conn.execute(
        "SELECT summary_version, through_seq, last_seq, search_key, indexed_seq "
        "FROM sessions WHERE session_id = ?",
        (commit.session_id,),
    ).fetchone()
    if row is None:
        raise ConflictError(f"session {commit.session_id!r} no longer exists")
    if commit.lease is not None and not schema.holds_lease(conn, commit.lease):
        raise fenced_off(commit.lease)
    version, through, last, key, indexed = row
    check_fold_start(commit, version, through, last)
    count, tokens = conn.execute(
        "SELECT count(*), coalesce(sum(tokens), 0) FROM messages "
        "WHERE session_id = ? AND seq BETWEEN ? AND ?",
        (commit.session_id, commit.lo, commit.hi),
    ).fetchone()
    if count != commit.hi - commit.lo + 1:
        raise StorageError(
            f"session {commit.session_id!r} is missing messages in {commit.lo}..{commit.hi}"
        )
    stamp = encode_time(entry.started_at)
    conn.execute(
        "UPDATE sessions SET summary_version = summary_version + 1, summary_text = ?, "
        "summary_tokens = ?, summary_updated_at = ?, through_seq = ?, "
        "live_count = live_count - ?, live_tokens = live_tokens - ?, "
        "reported_input_tokens = NULL WHERE session_id = ?",
        (commit.text, commit.tokens, stamp, commit.hi, count, tokens, commit.session_id),
    )
    if retention == "delete":
        # content goes; a row with a client id stays as an empty tombstone so a
        # retried append of that id is still recognised (idempotency key)
        conn.execute(
            "DELETE FROM messages WHERE session_id = ? AND seq BETWEEN ? AND ? "
            "AND client_id IS NULL",
            (commit.session_id, commit.lo, commit.hi),
        )
        conn.execute(
            "UPDATE messages SET body = '', tokens = 0 "
            "WHERE session_id = ? AND seq BETWEEN ? AND ?",
            (commit.session_id, commit.lo, commit.hi),
        )
        unindex(conn, key, commit.lo, commit.hi)
        conn.execute(
            "UPDATE sessions SET indexed_seq = max(indexed_seq, ?) WHERE session_id = ?",
            (commit.hi, commit.session_id),
        )
    else:  # what recall searches, the folded messages, is indexed with the fold
        catch_up_stored(conn, commit.session_id, key, indexed, commit.hi, decode)
    (ledger or insert_ledger)(conn, entry)
    text = commit.text if keep_text else None
    schema.insert_version(conn, commit, version + 1, last, text, entry.started_at)
    return Summary(commit.text, commit.hi, version + 1, commit.tokens, entry.started_at)



def insert_ledger(conn: sqlite3.Connection, entry: LedgerEntry) -> int:
    """Write one ledger row; its id."""
    marks = ", ".join("?" for _ in LEDGER_COLUMNS)
    cur = conn.execute(
        f"INSERT INTO ledger ({', '.join(LEDGER_COLUMNS)}) VALUES ({marks})",
        ledger_values(entry),
    )
    return int(cur.lastrowid or 0)
