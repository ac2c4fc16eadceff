"""Full-text search over SQLite FTS5, shared by :class:`~.sqlite.SQLiteStore` (in its file,
in the same transactions as the append and the fold commit) and
:class:`~.memory.MemoryStore` (in a private in-memory database), so both rank and tokenize
alike.

Tables: ``message_words`` holds each indexed message's folded words
(:func:`~.search.index_text`) under the id ``key << 32 | seq``, where ``key`` is the
session's ``search_key`` — so one session's rows are one id range, which FTS5 seeks to
instead of filtering the whole index. ``message_search`` is an FTS5 *external-content*
table over it, kept in step by triggers (FTS5's documented pattern): deleting a
``message_words`` row removes it from the index. The messages table itself cannot be the
content table: it has no integer rowid and stores JSON, not words.

Tokenizer: ``unicode61 remove_diacritics 2`` with combining marks as word characters
(``categories 'L* N* Co M*'``), so FTS5 splits exactly where :func:`~.search.words` does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from ..messages import Message
from .search import PREFIX_MIN, index_text

__all__ = [
    "FTS_SCHEMA",
    "MAX_SEQ",
    "folded_range",
    "index_messages",
    "match_expression",
    "search_ids",
    "seq_range",
    "unindex",
]

#: The largest seq the id scheme holds (2**32 - 1) per session.
MAX_SEQ = (1 << 32) - 1

FTS_SCHEMA = """
CREATE TABLE message_words (id INTEGER PRIMARY KEY, words TEXT NOT NULL);
CREATE VIRTUAL TABLE message_search USING fts5(
    words, content='message_words', content_rowid='id',
    tokenize="unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
);
CREATE TRIGGER message_words_ai AFTER INSERT ON message_words BEGIN
    INSERT INTO message_search (rowid, words) VALUES (new.id, new.words);
END;
CREATE TRIGGER message_words_ad AFTER DELETE ON message_words BEGIN
    INSERT INTO message_search (message_search, rowid, words)
        VALUES ('delete', old.id, old.words);
END;
"""


def seq_range(key: int, lo: int = 1, hi: int = MAX_SEQ) -> tuple[int, int]:
    """The ``message_words`` ids of seqs ``lo..hi`` of the session with ``key``."""
    return (key << 32) | max(lo, 0), (key << 32) | min(hi, MAX_SEQ)


def folded_range(folded: bool | None, through: int) -> tuple[int, int]:
    """The seqs a search looks at: folded ones (1..``through``), live ones, or all."""
    if folded is None:
        return 1, MAX_SEQ
    return (1, through) if folded else (through + 1, MAX_SEQ)


def index_messages(conn: sqlite3.Connection, key: int, rows: Iterable[tuple[int, Message]]) -> None:
    """Index (seq, message) rows of one session; a message with no words adds no row."""
    values = []
    for seq, message in rows:
        text = index_text(message)
        if text:
            values.append(((key << 32) | seq, text))
    if values:
        conn.executemany("INSERT INTO message_words (id, words) VALUES (?, ?)", values)


def unindex(conn: sqlite3.Connection, key: int, lo: int = 1, hi: int = MAX_SEQ) -> None:
    """Remove seqs ``lo..hi`` of the session with ``key`` from the index."""
    conn.execute("DELETE FROM message_words WHERE id BETWEEN ? AND ?", seq_range(key, lo, hi))


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of the cleaned ``terms`` (each quoted; long ones also
    as prefixes). ``terms`` hold only word characters (see :func:`~.search.clean_terms`)."""
    return " OR ".join(f'"{t}"' + ("*" if len(t) >= PREFIX_MIN else "") for t in terms)


def search_ids(
    conn: sqlite3.Connection, key: int, terms: Sequence[str], lo: int, hi: int, limit: int
) -> list[tuple[int, float, str]]:
    """(seq, score, indexed words) of the best ``limit`` matches among seqs ``lo..hi`` of
    one session, best first; score is ``-bm25`` (higher is better)."""
    if not terms or lo > hi or limit <= 0:
        return []
    first, last = seq_range(key, lo, hi)
    rows = conn.execute(
        "SELECT s.rowid, -bm25(message_search), w.words FROM message_search s "
        "JOIN message_words w ON w.id = s.rowid "
        "WHERE message_search MATCH ? AND s.rowid BETWEEN ? AND ? "
        "ORDER BY bm25(message_search), s.rowid DESC LIMIT ?",
        (match_expression(terms), first, last, limit),
    ).fetchall()
    return [(rowid & MAX_SEQ, score, words) for rowid, score, words in rows]
