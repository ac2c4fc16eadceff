"""Full-text search in PostgreSQL: a ``tsvector`` column on ``messages`` with a GIN index
of each session's lexemes (see :func:`index_lexemes_per_session`).

The column holds ``to_tsvector(config, words)`` of each message's folded words
(:func:`~.search.index_text`), written by the append in the same statement as the row; a
``delete`` retention fold blanks it with the body, a session delete removes the rows. The
text search configuration is the store's ``search_config`` — ``simple`` (no stemming, no
stop words: language-neutral) unless told otherwise; the index and the queries always use
the same one. Queries are built from cleaned terms (word characters only), each quoted as
a lexeme, so no input is read as query syntax. Matches are ranked by BM25 over the terms a
message holds (:func:`search_sql`), as SQLite's and the memory store's ``bm25()`` rank them.

Broad terms (:data:`~.search.BROAD_MESSAGES`) are told by the table's statistics: the
most common lexemes of ``search`` and how many rows hold each, which ``ANALYZE`` (and
autovacuum) keeps; they are read at most once a minute (:class:`TermStats`), and weigh
the terms too. Without statistics no term is broad, every term weighs the same, and every
match is ranked.
"""

from __future__ import annotations

import math
import re
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import sql

from ..errors import ConfigError
from ..messages import StoredMessage
from .rows import MessageDecoder, decode_message
from .search import (
    MAX_TERMS,
    PREFIX_MIN,
    SearchHit,
    broad_terms,
    index_text,
    make_hit,
    selective_search,
    term_groups,
)

__all__ = [
    "AVG_LEXEMES",
    "BM25_B",
    "BM25_K1",
    "FETCH",
    "SEARCH_INDEX",
    "SESSION_GIN",
    "SESSION_LEXEMES",
    "TERM_STATS",
    "Ranked",
    "SearchQuery",
    "TermStats",
    "bm25_weights",
    "check_config",
    "factored_tsquery",
    "fetch_messages",
    "index_existing",
    "index_lexemes_per_session",
    "index_per_session",
    "matched_sql",
    "query_cte",
    "ranked_sql",
    "search_messages",
    "search_sql",
    "seq_ranges",
    "term_query",
    "tsquery_text",
]

_CONFIG = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

#: The migration's DDL: the column and its GIN index.
SEARCH_INDEX = """
ALTER TABLE messages ADD COLUMN search tsvector;
CREATE INDEX messages_search ON messages USING gin (search);
"""

#: The extension whose GIN operator classes for plain types let one GIN index hold
#: ``(session_id, search)`` (a contrib module, "trusted": any user who may create in a
#: schema may create it).
SESSION_GIN = "btree_gin"

#: The functions of migration 8: a message's lexemes, each prefixed with its session's key
#: (8 hex digits of the MD5 of the session id), and a query's lexemes the same way. The
#: GIN index over ``session_lexemes(session_id, search)`` so holds one posting list per
#: session and lexeme: a common word's postings are the session's, not every session's.
#: Two sessions may share a key (a hash): their postings mix, and the search still
#: filters on the session id. Lexemes of indexed words hold no control character, so
#: ``\x01`` separates them; a query's lexemes are the quoted strings of its text form
#: (``''`` is a quote within one). The index keeps no positions: a query term the
#: server's parser would split into a phrase would match nothing (cleaned, NFKD-folded
#: terms are single lexemes: ``x²y`` is cleaned to ``x2y``). Built-in functions only: an
#: index expression may be evaluated under any ``search_path`` (``ANALYZE``, ``pg_restore``).
SESSION_LEXEMES = (
    r"""
CREATE FUNCTION session_lexemes(sid text, v tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT CASE WHEN length(v) = 0 THEN v ELSE array_to_tsvector(string_to_array(
    left(md5(sid), 8) || array_to_string(tsvector_to_array(v), E'\x01' || left(md5(sid), 8)),
    E'\x01')) END
$$""",
    r"""
CREATE FUNCTION session_query(sid text, q tsquery) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT regexp_replace(q::text, '''((?:[^'']|'''')*)''', '''' || left(md5(sid), 8) || '\1''',
    'g')::tsquery
$$""",
)

#: BM25's term frequency saturation and length normalization (FTS5's and Lucene's defaults).
BM25_K1 = 1.2
BM25_B = 0.75
#: The length, in distinct lexemes, a message's length is weighed against (BM25's average
#: document length: PostgreSQL's statistics of a ``tsvector`` column do not hold it, and a
#: chat message holds some twenty distinct words).
AVG_LEXEMES = 20.0


#: The folded filter of :func:`search_sql`, by ``folded``.
_FOLDED = {None: "", True: "AND m.seq <= s.through_seq", False: "AND m.seq > s.through_seq"}


@lru_cache(maxsize=3 * MAX_TERMS)
def search_sql(n_terms: int, folded: bool | None = None) -> str:
    """(seq, body, tokens, score, through_seq, matched) of the best matches of ``%(q)s``
    among one session's messages, best first, for a query of ``n_terms`` cleaned terms;
    only folded messages (``folded`` True), only live ones (False) or any (None), as the
    session's ``through_seq`` reads in the same statement; ``matched`` is how many of the
    terms the message holds (counted for the rows returned only).

    The score is BM25 with every term counted once (chat messages seldom repeat a word):
    the sum of the weights (``%(wN)s``, :func:`bm25_weights`) of the terms a message holds,
    scaled by its length in distinct lexemes against :data:`AVG_LEXEMES`. It costs
    one lexeme lookup per term and message — ``ts_rank_cd`` evaluates the whole query at
    every covering position, some ten times as much on a long session's thousands of
    matches — and it ranks as SQLite's and the memory store's ``bm25()`` do: rarer terms
    weigh more, shorter messages a little more.

    The match is asked of the index of each session's lexemes (:data:`SESSION_LEXEMES`);
    the message's session id is compared under the ``"C"`` collation (the same equality),
    which keeps the planner from intersecting that index with the primary key's range of
    the session — every row of a long session — when it expects many matches.

    The query's ``tsquery`` values are a materialized row (``q``), unknown to the planner
    whatever the parameters: every search plans alike, so a prepared statement settles on
    its generic plan after a few runs instead of planning each search again (planning
    took about as long as running a selective search)."""
    return f"""
WITH {query_cte(n_terms)}
SELECT r.seq, r.body, r.tokens, r.score, r.through_seq, {matched_sql(n_terms)} AS matched
FROM ({ranked_sql(n_terms, folded)}) r, q
ORDER BY r.score DESC, r.seq DESC
"""


def query_cte(n_terms: int) -> str:
    """The ``q`` row of :func:`search_sql`: the query's and each term's ``tsquery``."""
    terms = "".join(f", to_tsquery(%(cfg)s::regconfig, %(t{i})s) AS t{i}" for i in range(n_terms))
    return f"q AS MATERIALIZED (SELECT to_tsquery(%(cfg)s::regconfig, %(q)s) AS q{terms})"


def matched_sql(n_terms: int) -> str:
    """How many of the terms row ``r`` of :func:`ranked_sql` holds."""
    return " + ".join(f"(r.search @@ q.t{i})::int" for i in range(n_terms)) or "0"


def ranked_sql(n_terms: int, folded: bool | None) -> str:
    """The best ``%(limit)s`` matches of :func:`search_sql`, unordered: (seq, body, tokens,
    search, score, through_seq)."""
    held = " + ".join(
        f"CASE WHEN m.search @@ q.t{i} THEN %(w{i})s::float8 ELSE 0::float8 END"
        for i in range(n_terms)
    )
    return f"""
    SELECT m.seq, m.body, m.tokens, m.search,
        ({held or "0"}) * {BM25_K1 + 1} / ({_length_norm()}) AS score,
        s.through_seq
    FROM sessions s, messages m, q
    WHERE s.session_id = %(sid)s AND m.session_id COLLATE "C" = %(sid)s
        AND session_lexemes(m.session_id, m.search) @@ session_query(%(sid)s, q.q)
        {_FOLDED[None if folded is None else bool(folded)]}
    ORDER BY score DESC, m.seq DESC
    LIMIT %(limit)s
"""


def _length_norm() -> str:
    """BM25's length normalization of ``m.search``, ``1 + k1 (1 - b) + k1 b / avgdl *
    length``, as ``float8``: the two constants as the decimals they print as, the sum
    computed in integers (exact) and rounded once — the value ``numeric`` arithmetic gives,
    to the last bit, without its cost per row."""
    base, per = (
        Decimal(repr(x)) for x in (1 + BM25_K1 * (1 - BM25_B), BM25_K1 * BM25_B / AVG_LEXEMES)
    )
    digits = max(0, -int(base.as_tuple().exponent), -int(per.as_tuple().exponent))
    unit = 10**digits
    return f"({int(base * unit)} + {int(per * unit)} * length(m.search))::float8 / {unit}"


#: (lexemes, their shares of the rows, rows) of the search column, from its statistics.
TERM_STATS = """
SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples
FROM pg_stats s, pg_class c
WHERE s.schemaname = current_schema() AND s.tablename = 'messages' AND s.attname = 'search'
    AND c.oid = 'messages'::regclass
"""

#: (seq, body, tokens, through_seq) of the stored messages in the given ranges of seqs
#: (``%s``: their first and last seqs, then the session id): one descent of the primary key
#: per range — recall fetches runs of neighbouring turns — rather than one per seq.
FETCH = """
SELECT m.seq, m.body, m.tokens, s.through_seq FROM sessions s,
    unnest(%s::bigint[], %s::bigint[]) AS r(lo, hi),
    LATERAL (SELECT m.seq, m.body, m.tokens FROM messages m
        WHERE m.session_id = s.session_id AND m.seq >= r.lo AND m.seq <= r.hi
            AND m.body <> '' OFFSET 0) m
WHERE s.session_id = %s
ORDER BY m.seq
"""


def seq_ranges(seqs: Sequence[int]) -> tuple[list[int], list[int]]:
    """The first and the last seq of each run of consecutive ones among sorted ``seqs``."""
    first: list[int] = []
    last: list[int] = []
    for seq in seqs:
        if last and seq == last[-1] + 1:
            last[-1] = seq
        else:
            first.append(seq)
            last.append(seq)
    return first, last


def check_config(config: str) -> str:
    """A text search configuration name (``simple``, ``english``, …), checked as an
    identifier; whether the server has it is checked by the first query that uses it."""
    if not isinstance(config, str) or not _CONFIG.match(config):
        raise ConfigError(
            f"search_config must be a text search configuration name such as 'simple', "
            f"got {config!r}"
        )
    return config


def term_query(term: str) -> str:
    """``to_tsquery`` input of one cleaned term: the lexeme, quoted; a long one as a prefix."""
    return f"'{term}'" + (":*" if len(term) >= PREFIX_MIN else "")


def tsquery_text(groups: Sequence[Sequence[str]]) -> str:
    """``to_tsquery`` input matching any of the ``groups`` of cleaned terms (all terms of
    a group; long terms as prefixes), see :func:`~.search.term_groups`."""
    term = term_query
    return " | ".join(
        term(g[0]) if len(g) == 1 else "(" + " & ".join(term(t) for t in g) + ")" for g in groups
    )


#: Groups of terms as a tree: each group a path from the root, ``""`` where one ends.
_Trie = dict[str, "_Trie"]


def factored_tsquery(groups: Sequence[Sequence[str]]) -> str:
    """:func:`tsquery_text` of the same ``groups`` with the terms groups begin with written
    once: ``'a' & ('b' | 'c') | 'b' & 'c'`` for the pairs of ``a, b, c``. The same
    matches; the index checks each candidate row (every row holding any of the terms, all
    the rows of a common word's prefix) against some ``n`` terms rather than ``n²``: on
    the LoCoMo turns, a query's index scan took a fifth less."""
    end = ""  # a group ends here (no cleaned term is empty)
    trie: _Trie = {}
    for group in groups:
        node = trie
        for term in group:
            if end in node:
                break  # a shorter group already matches everything this one does
            node = node.setdefault(term, {})
        else:
            node.clear()
            node[end] = {}

    def render(node: _Trie) -> str:
        parts = []
        for term, rest in node.items():
            if term == end:
                continue
            if end in rest:
                parts.append(term_query(term))
            else:
                inner = render(rest)
                parts.append(f"{term_query(term)} & " + (f"({inner})" if " | " in inner
                                                          else inner))
        return " | ".join(parts)

    return render(trie)


@dataclass
class TermStats:
    """How many rows hold a lexeme, as the statistics of the search column estimate it
    (``pg_stats.most_common_elems``: the commonest lexemes of every session, as FTS5's
    vocabulary counts them in the SQLite store); read again after ``max_age`` seconds.
    A lexeme the statistics do not list is rare: counted 0."""

    max_age: float = 60.0
    #: Rows of the table (0: not known).
    rows: float = 0.0
    _lexemes: list[str] = field(default_factory=list)
    _rows: list[float] = field(default_factory=list)
    _read_at: float | None = None

    async def counts(self, conn: Any, terms: Iterable[str]) -> dict[str, int]:
        """Estimated rows holding each cleaned term (a long term: the lexemes it begins)."""
        now = time.monotonic()
        if self._read_at is None or now - self._read_at > self.max_age:
            cur = await conn.execute(TERM_STATS)
            row = await cur.fetchone()
            self.load(*(row if row is not None and row[0] is not None else ([], [], 0.0)))
        out: dict[str, int] = {}
        for term in terms:
            i = bisect_left(self._lexemes, term)
            total = 0.0
            while i < len(self._lexemes) and (
                self._lexemes[i] == term
                or (len(term) >= PREFIX_MIN and self._lexemes[i].startswith(term))
            ):
                total += self._rows[i]
                i += 1
            out[term] = int(total)
        return out

    def load(self, lexemes: Sequence[str], shares: Sequence[float], rows: float) -> None:
        """Take the statistics' lexemes and shares of ``rows`` rows (the shares' list ends
        with two or three summary values, which are not a lexeme's), as read now."""
        self._read_at = time.monotonic()
        pairs = sorted(zip(lexemes, shares[: len(lexemes)], strict=True))
        self.rows = max(float(rows), 0.0)  # -1: never analyzed
        self._lexemes = [lex for lex, _ in pairs]
        self._rows = [share * self.rows for _, share in pairs]


def bm25_weights(counts: Sequence[int], rows: float) -> list[float]:
    """BM25's weight of each term from how many of ``rows`` messages hold it (``counts``;
    the statistics list the commonest lexemes only: any other term counts 0, the highest
    weight): ``ln(1 + (N - n + 0.5) / (n + 0.5))``, never negative. Without statistics
    (``rows`` 0) every term weighs the same."""
    total = max(rows, float(max(counts, default=0)))
    return [math.log1p((total - n + 0.5) / (n + 0.5)) for n in counts]


async def index_existing(conn: Any, config: str, batch: int = 1000) -> None:
    """Fill the search column of every stored message (the migration that adds it), in
    batches over the primary key."""
    after: tuple[str, int] = ("", 0)
    while True:
        cur = await conn.execute(
            "SELECT session_id, seq, body FROM messages WHERE (session_id, seq) > (%s, %s) "
            "AND body <> '' ORDER BY session_id, seq LIMIT %s",
            (*after, batch),
        )
        rows = await cur.fetchall()
        if not rows:
            return
        values = [
            (config, index_text(decode_message(q, b, 0).message), sid, q) for sid, q, b in rows
        ]
        async with conn.cursor() as c:
            await c.executemany(
                "UPDATE messages SET search = to_tsvector(%s::regconfig, %s) "
                "WHERE session_id = %s AND seq = %s",
                values,
            )
        after = (rows[-1][0], rows[-1][1])


async def _create_extension(conn: Any, name: str) -> bool:
    """Whether extension ``name`` is installed, creating it if need be: in ``public``, else
    in the store's own schema (each try in a savepoint: a failure — no such extension on
    the server, no privilege — leaves the migration's transaction usable)."""
    cur = await conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (name,))
    if await cur.fetchone() is not None:
        return True
    cur = await conn.execute("SELECT current_schema()")
    row = await cur.fetchone()
    for schema in dict.fromkeys(("public", row[0] if row else "public")):
        try:
            async with conn.transaction():  # a savepoint
                await conn.execute(
                    sql.SQL("CREATE EXTENSION {} SCHEMA {}").format(
                        sql.Identifier(name), sql.Identifier(schema)
                    )
                )
            return True
        except psycopg.Error:
            continue
    return False


async def index_per_session(conn: Any, config: str) -> None:
    """Migration 7: the search index keyed by session too, and without a pending list.

    A GIN index over ``search`` alone holds the postings of every session: a query for one
    session reads and then drops every other session's matches, and the planner, unsure
    how many of a session's rows match, may rather scan all of the session's rows. With
    ``btree_gin`` the index holds ``(session_id, search)`` and one index scan intersects
    the session with the terms. ``fastupdate = off``: a GIN pending list (up to 4 MB of
    not-yet-merged entries, flushed only by VACUUM or when full) is read in full by every
    search; an append then updates the index itself (cheap beside its commit). Without
    the extension (not installed on the server, no privilege) the index stays on
    ``search`` alone, its pending list merged and turned off."""
    if await _create_extension(conn, SESSION_GIN):
        await conn.execute(
            "CREATE INDEX messages_search_session ON messages "
            "USING gin (session_id, search) WITH (fastupdate = off)"
        )
        await conn.execute("DROP INDEX messages_search")
    else:
        await conn.execute("ALTER INDEX messages_search SET (fastupdate = off)")
        await conn.execute("SELECT gin_clean_pending_list('messages_search'::regclass)")


async def index_lexemes_per_session(conn: Any, config: str) -> None:
    """Migration 8: the search index holds each session's lexemes apart.

    The index of migration 7 keyed by ``(session_id, search)`` still keeps one posting
    list per lexeme for the whole table, and one per session id: a search of a long
    session reads the session's posting list (every row of it) and every session's
    postings of each term, all of them for a term that is a prefix. Over
    :data:`SESSION_LEXEMES` the postings of a term are the session's own. No extension is
    needed; the index is built from the stored column (no message is read again) and its
    pending list is off, as migration 7 left it."""
    for statement in SESSION_LEXEMES:
        await conn.execute(statement)
    await conn.execute("DROP INDEX IF EXISTS messages_search_session")
    await conn.execute("DROP INDEX IF EXISTS messages_search")
    await conn.execute(
        "CREATE INDEX messages_search_session ON messages "
        "USING gin (session_lexemes(session_id, search)) WITH (fastupdate = off)"
    )


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """One search: configuration, session, cleaned terms, folded filter, limit, the fewest
    terms a hit holds, whether hits carry a snippet."""

    config: str
    session_id: str
    terms: list[str]
    folded: bool | None
    limit: int
    min_matched: int = 1
    snippets: bool = True


#: Runs one search statement for some term groups: (conn, query, params, groups) → rows of
#: :func:`search_sql`.
Ranked = Callable[[Any, "SearchQuery", dict[str, Any], Sequence[tuple[str, ...]]],
                  Awaitable[list[Any]]]


async def search_messages(
    conn: Any, decoder: MessageDecoder, query: SearchQuery, stats: TermStats | None = None,
    ranked: Ranked | None = None,
) -> list[SearchHit]:
    """Run :func:`search_sql` and describe its rows as hits (no terms, no hits); with
    ``stats``, the terms weighed by how many messages hold them, and the selective groups
    searched first when some terms are broad (see :data:`~.search.BROAD_MESSAGES`).
    ``ranked``: what runs a statement (:func:`search_sql`'s rows; default that statement,
    :mod:`.postgres_turns` reads the turns around the hits with them)."""
    run = ranked or _search_rows
    sid, terms = query.session_id, query.terms
    if not terms or "\x00" in sid:  # no session id with a NUL can be stored
        return []
    groups = term_groups(terms, query.min_matched)
    need = len(groups[0])  # what the engine guarantees: every term of one group
    counts = await stats.counts(conn, terms) if stats is not None else dict.fromkeys(terms, 0)
    params: dict[str, Any] = {"cfg": query.config, "sid": sid, "limit": query.limit}
    weights = bm25_weights([counts[t] for t in terms], stats.rows if stats is not None else 0)
    for i, (term, weight) in enumerate(zip(terms, weights, strict=True)):
        params[f"t{i}"] = term_query(term)
        params[f"w{i}"] = weight
    broad = broad_terms(counts) if len(terms) > 1 else set()
    narrow = selective_search(groups, broad) if broad else None
    rows = await run(conn, query, params, narrow or groups)
    if narrow is not None and len(rows) < query.limit:
        # every match is ranked: those of the groups the selective search left out join
        # the selective matches (a message's score does not depend on the groups)
        rest = [g for g in groups if g not in set(narrow)]
        found = {r[0]: r for r in rows}
        found.update((r[0], r) for r in await run(conn, query, params, rest))
        rows = sorted(found.values(), key=lambda r: (r[3], r[0]), reverse=True)
        rows = rows[: query.limit]
    hits = []
    for seq, body, tokens, score, through, matched in rows:
        stored = decoder.decode(sid, seq, body, tokens, seq <= through)
        # the engine's count of the terms the message holds (with a stemming
        # configuration it matches words Python's count cannot see: "hausern" ~
        # "hauser"); it matched a whole group, so at least that many
        hits.append(make_hit(stored, score, terms, seq <= through, snippets=query.snippets,
                             matched=max(matched, need)))
    return hits


async def _search_rows(
    conn: Any, query: SearchQuery, params: dict[str, Any], groups: Sequence[tuple[str, ...]]
) -> list[Any]:
    """The rows of :func:`search_sql` for any of ``groups``."""
    statement = search_sql(len(query.terms), query.folded)
    cur = await conn.execute(statement, {**params, "q": factored_tsquery(groups)})
    return list(await cur.fetchall())


async def fetch_messages(
    conn: Any, decoder: MessageDecoder, session_id: str, seqs: Sequence[int]
) -> list[StoredMessage]:
    """Run :data:`FETCH`: the stored messages with ``seqs``, in seq order."""
    wanted = sorted({int(q) for q in seqs if 0 < int(q) < 2**63})  # seqs are positive bigints
    if not wanted or "\x00" in session_id:
        return []
    cur = await conn.execute(FETCH, (*seq_ranges(wanted), session_id))
    return [decoder.decode(session_id, s, b, t, s <= th) for s, b, t, th in await cur.fetchall()]
