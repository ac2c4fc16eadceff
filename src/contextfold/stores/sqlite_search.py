"""Full-text search over SQLite FTS5, shared by :class:`~.sqlite.SQLiteStore` (in its file)
and :class:`~.memory.MemoryStore` (in a private in-memory database), so both rank and
tokenize alike.

When the SQLite store indexes (the memory store indexes only in searches, see
:mod:`.memory`): each session's ``indexed_seq`` says how far its messages are
in the index, and the index is brought up to date inside the transaction that needs it —
the fold commit (up to the fold's last seq: what recall searches, folded messages, is
always indexed) and a search that includes live messages (up to the last seq, before it
reads). The append itself writes nothing to the index. Measured: updating FTS5 in every
append's transaction cost each append about as much again (FTS5 writes a new segment per
transaction: 0.43-0.56x the append throughput without it); updating it once per fold
writes one segment for the whole span. Every search still sees every committed message,
and a crash loses nothing: the watermark moves in the same transaction as the index.

Tables: ``message_words`` holds each indexed message's folded words
(:func:`~.search.index_text`) under the id ``key << 32 | seq``, where ``key`` is the
session's ``search_key`` — so one session's rows are one id range, which FTS5 seeks to
instead of filtering the whole index. ``message_search`` is an FTS5 *external-content*
table over it, kept in step by explicit statements here (every write goes through
:func:`index_messages` and :func:`unindex`) — measured 2.5x cheaper per indexed message
than FTS5's usual triggers. The messages table itself cannot be the content table: it has
no integer rowid and stores JSON, not words.

``message_vocab`` (an ``fts5vocab`` table: no data of its own) reads how many indexed
messages hold a word, so a search knows its broad terms (:data:`~.search.BROAD_MESSAGES`)
before it ranks. It counts every session's messages, as BM25's term weights do. It also
says which long terms are the only word of the index they begin: such a term is queried
as that word, not as a prefix — the same rows, positions and BM25 weights, but FTS5 merges
a prefix's posting lists afresh for every place the term has in a query (and again for
its weight), which was most of a search's time on common words. What the vocabulary said
is kept per store while the index is unchanged (:class:`VocabularyCache`).

Tokenizer: ``unicode61 remove_diacritics 2`` with combining marks as word characters
(``categories 'L* N* Co M*'``), so FTS5 splits exactly where :func:`~.search.words` does.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence

from ..messages import Message
from .rows import MessageDecoder, decode_message
from .search import (
    BROAD_MESSAGES,
    PREFIX_MIN,
    SearchHit,
    SearchRequest,
    broad_terms,
    index_text,
    make_hit,
    selective_search,
)

__all__ = [
    "FTS_SCHEMA",
    "MAX_SEQ",
    "VOCAB_SCHEMA",
    "VocabularyCache",
    "catch_up_stored",
    "folded_range",
    "index_messages",
    "match_expression",
    "search_ids",
    "search_indexed",
    "seq_range",
    "term_counts",
    "unindex",
    "vocabulary",
]

#: The largest seq the id scheme holds (2**32 - 1) per session.
MAX_SEQ = (1 << 32) - 1

FTS_SCHEMA = """
CREATE TABLE message_words (id INTEGER PRIMARY KEY, words TEXT NOT NULL);
CREATE VIRTUAL TABLE message_search USING fts5(
    words, content='message_words', content_rowid='id',
    tokenize="unicode61 remove_diacritics 2 categories 'L* N* Co M*'"
);
"""

#: The index's vocabulary (a migration of its own: databases made before it gain it).
VOCAB_SCHEMA = """
CREATE VIRTUAL TABLE message_vocab USING fts5vocab(message_search, 'row');
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
        conn.executemany("INSERT INTO message_search (rowid, words) VALUES (?, ?)", values)


def catch_up_stored(
    conn: sqlite3.Connection,
    session_id: str,
    key: int,
    indexed: int,
    hi: int,
    decode: Callable[[int, str, int], Message] | None = None,
) -> None:
    """Index the SQLite store's messages ``indexed+1..hi`` of a session (read from its
    ``messages`` table; ``decode(seq, body, tokens)``, default: parse the JSON) and move
    its ``indexed_seq`` to ``hi`` — in the caller's write transaction. Nothing to do when
    ``hi <= indexed``."""
    if hi <= indexed:
        return
    rows = conn.execute(
        "SELECT seq, body, tokens FROM messages WHERE session_id = ? AND seq > ? AND seq <= ? "
        "AND body != '' ORDER BY seq",
        (session_id, indexed, hi),
    ).fetchall()
    if decode is None:
        index_messages(conn, key, ((q, decode_message(q, b, t).message) for q, b, t in rows))
    else:
        index_messages(conn, key, ((q, decode(q, b, t)) for q, b, t in rows))
    conn.execute("UPDATE sessions SET indexed_seq = ? WHERE session_id = ?", (hi, session_id))


def unindex(conn: sqlite3.Connection, key: int, lo: int = 1, hi: int = MAX_SEQ) -> None:
    """Remove seqs ``lo..hi`` of the session with ``key`` from the index."""
    ids = seq_range(key, lo, hi)
    conn.execute(
        "INSERT INTO message_search (message_search, rowid, words) "
        "SELECT 'delete', id, words FROM message_words WHERE id BETWEEN ? AND ?",
        ids,
    )
    conn.execute("DELETE FROM message_words WHERE id BETWEEN ? AND ?", ids)


def match_expression(groups: Sequence[Sequence[str]], exact: Iterable[str] = ()) -> str:
    """An FTS5 query matching any of the ``groups`` of cleaned terms (see
    :func:`~.search.term_groups`; each term quoted, long ones also as prefixes — but not
    those of ``exact``: long terms the index holds as a word and begins no other word of,
    for which the prefix query matches the same rows, positions and weights at a fraction
    of the cost). Terms hold only word characters (see :func:`~.search.clean_terms`)."""
    plain = set(exact)

    def term(t: str) -> str:
        return f'"{t}"' + ("*" if len(t) >= PREFIX_MIN and t not in plain else "")

    return " OR ".join(
        term(g[0]) if len(g) == 1 else "(" + " AND ".join(term(t) for t in g) + ")"
        for g in groups
    )


def term_counts(conn: sqlite3.Connection, terms: Iterable[str]) -> dict[str, int]:
    """How many indexed messages (of every session) hold each of the cleaned ``terms``
    (a long term: the words it begins, summed — an upper bound), counted up to just
    above :data:`~.search.BROAD_MESSAGES`."""
    return {t: count for t, (count, _) in vocabulary(conn, terms).items()}


def vocabulary(conn: sqlite3.Connection, terms: Iterable[str]) -> dict[str, tuple[int, bool]]:
    """Per cleaned term: its count as :func:`term_counts` gives it, and whether it is a
    long term that is the only word of the index it begins (its prefix query is then the
    same as the word's own: see :func:`match_expression`)."""
    out: dict[str, tuple[int, bool]] = {}
    for term in terms:
        if len(term) >= PREFIX_MIN:
            rows = conn.execute(
                "SELECT term, doc FROM message_vocab WHERE term >= ? AND term < ?",
                (term, term + "\U0010ffff"),
            )
        else:
            rows = conn.execute("SELECT term, doc FROM message_vocab WHERE term = ?", (term,))
        seen = 0
        count = None
        words = 0
        first = None
        for word, doc in rows:
            words += 1
            first = word if first is None else first
            if count is None:
                seen += doc
                if seen > BROAD_MESSAGES:
                    count = seen
            if count is not None and words > 1:
                break  # the count is known, and the term begins more than one word
        out[term] = (seen if count is None else count,
                     len(term) >= PREFIX_MIN and words == 1 and first == term)
    return out


class VocabularyCache:
    """What :func:`vocabulary` found of query terms in one database, kept while its index
    is unchanged (one per store: the terms of a conversation's queries recur, and counting
    a common word reads its whole posting list).

    Each use first reads the index's state — FTS5's structure record (its segments and a
    write counter that grows with every segment written: every commit that changes the
    index writes one) and its averages record (rows and tokens indexed) — together with
    the connection's own change count (an uncommitted write of its own is not in the
    structure yet), in the caller's transaction; a different state empties the cache. So
    a term is never judged by another version of the index than the one searched.
    Bounded: past ``max_terms`` it starts over."""

    def __init__(self, max_terms: int = 10_000) -> None:
        self.max_terms = max_terms
        self._lock = threading.Lock()
        self._state: object = None
        self._terms: dict[tuple[str, int], tuple[int, bool]] = {}

    def get(self, conn: sqlite3.Connection, terms: Iterable[str]) -> dict[str, tuple[int, bool]]:
        """:func:`vocabulary` of ``terms``, from the cache where the index is unchanged."""
        terms = list(terms)
        state = (conn.total_changes, *conn.execute(
            "SELECT id, block FROM message_search_data WHERE id IN (1, 10) ORDER BY id"))
        limit = BROAD_MESSAGES  # (a count depends on it)
        with self._lock:
            if state != self._state or len(self._terms) > self.max_terms:
                self._terms = {}
                self._state = state
            known = self._terms
        missing = [t for t in terms if (t, limit) not in known]
        found = vocabulary(conn, missing) if missing else {}
        with self._lock:
            if self._state == state:
                self._terms.update(((t, limit), v) for t, v in found.items())
        return {t: found[t] if t in found else known[(t, limit)] for t in terms}


def search_ids(
    conn: sqlite3.Connection,
    key: int,
    groups: Sequence[tuple[str, ...]],
    lo: int,
    hi: int,
    limit: int,
    cache: VocabularyCache | None = None,
) -> list[tuple[int, float, str]]:
    """(seq, score, indexed words) of the best ``limit`` matches of any of the term
    ``groups`` among seqs ``lo..hi`` of one session, best first; score is ``-bm25``
    (higher is better). With broad terms, the matches of the selective groups first
    (see :data:`~.search.BROAD_MESSAGES`). ``cache``: the store's
    :class:`VocabularyCache` (None: the vocabulary is read afresh)."""
    if not groups or lo > hi or limit <= 0:
        return []
    first, last = seq_range(key, lo, hi)
    terms = dict.fromkeys(t for g in groups for t in g)
    vocab = vocabulary(conn, terms) if cache is None else cache.get(conn, terms)
    exact = {t for t, (_, single) in vocab.items() if single}
    counts = {t: count for t, (count, _) in vocab.items()}
    absent = {t for t, count in counts.items() if not count}
    narrow = selective_search(groups, broad_terms(counts))
    if narrow is not None:
        found = _ranked(conn, _expression(narrow, exact, absent), first, last, limit)
        if len(found) >= limit:
            return found
    return _ranked(conn, _expression(groups, exact, absent), first, last, limit)


def _expression(groups: Sequence[Sequence[str]], exact: set[str], absent: set[str]) -> str:
    """:func:`match_expression` without the single-term groups of ``absent`` terms (no
    indexed message holds them): they match nothing, and a phrase a message does not hold
    adds exactly 0 to its BM25, so the rows and scores are the same — but FTS5 still
    visits every phrase for every row it scores. (A term of an AND group stays: its
    phrase weighs in the score of a message matched by another group.) ``""``: nothing
    can match."""
    if absent:
        groups = [g for g in groups if len(g) > 1 or g[0] not in absent]
    return match_expression(groups, exact) if groups else ""


def _ranked(
    conn: sqlite3.Connection, expression: str, first: int, last: int, limit: int
) -> list[tuple[int, float, str]]:
    if not expression:
        return []
    # bm25() ordered by SQLite's own top-N sort: the same rows, scores and order as FTS5's
    # ``ORDER BY rank`` (ties: the lower rowid first, as FTS5 returns them), which sorts
    # every match in a nested statement first — 0.6x the time on the LoCoMo questions
    rows = conn.execute(
        "SELECT s.id, -s.score, w.words FROM ("
        "SELECT rowid AS id, bm25(message_search) AS score FROM message_search "
        "WHERE message_search MATCH ? AND rowid BETWEEN ? AND ? ORDER BY score, rowid LIMIT ?"
        ") s JOIN message_words w ON w.id = s.id ORDER BY s.score, s.id DESC",
        (expression, first, last, limit),
    ).fetchall()
    return [(rowid & MAX_SEQ, score, words) for rowid, score, words in rows]


def search_indexed(
    conn: sqlite3.Connection,
    decoder: MessageDecoder,
    session_id: str,
    req: SearchRequest,
    folded: bool | None,
    cache: VocabularyCache | None = None,
) -> list[SearchHit] | None:
    """The SQLite store's search of one session, in the caller's read transaction: the
    hits of ``req`` among its folded (``folded=True``), live (False) or all messages; None
    when messages it would search are not indexed yet (the caller indexes them with
    :func:`catch_up_stored` in a write transaction, then searches again)."""
    row = conn.execute(
        "SELECT through_seq, search_key, last_seq, indexed_seq FROM sessions "
        "WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return []
    through, key, last, indexed = row
    if (through if folded else last) > indexed:
        return None  # messages to index first (a write)
    found = search_ids(conn, key, req.groups, *folded_range(folded, through), req.limit, cache)
    if not found:
        return []
    marks = ", ".join("?" for _ in found)
    bodies = {
        s: (b, t)
        for s, b, t in conn.execute(
            f"SELECT seq, body, tokens FROM messages WHERE session_id = ? AND seq IN ({marks})",
            (session_id, *(s for s, _, _ in found)),
        )
    }
    hits = []
    for seq, score, words in found:
        body, tokens = bodies[seq]
        stored = decoder.decode(session_id, seq, body, tokens, seq <= through)
        hits.append(make_hit(stored, score, req.terms, seq <= through, words, req.snippets))
    return req.keep(hits)
