"""A PostgreSQL search with the turns around its hits, in one statement
(:meth:`~.postgres.PostgresStore.search_turns`).

Recall reads a search's hits and then the messages around them (a hit's turn, its
neighbours, the frame of the best hits): two round trips, each a wait on the server. Here
the search's ranked rows are kept (a materialized CTE, the same ranking as
:func:`~.postgres_search.search_sql`), the windows ``[seq - before, seq + after]`` around
them merged into runs of seqs, and the stored messages of each run read by one descent of
the primary key (as :data:`~.postgres_search.FETCH` does), in the same statement: the
hits and every message recall may want from around them, from one snapshot. The rows are
(seq, body, tokens, score, through_seq, matched): a hit has no body (its message is among
the others: the window holds it), a message no score.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..messages import StoredMessage
from .postgres_search import (
    SearchQuery,
    TermStats,
    factored_tsquery,
    matched_sql,
    query_cte,
    ranked_sql,
    search_messages,
)
from .rows import MessageDecoder
from .search import MAX_TERMS, SearchTurns

__all__ = ["search_turns", "turns_sql"]


@lru_cache(maxsize=3 * MAX_TERMS)
def turns_sql(n_terms: int, folded: bool | None = None) -> str:
    """:func:`~.postgres_search.search_sql`'s hits (without their bodies) and, after them,
    the stored messages (not blanked by ``delete`` retention) from ``%(before)s`` seqs
    before each hit to ``%(after)s`` after it. The windows are merged into runs (a window
    that starts within or just after the runs before it extends the last one), so a
    message is read once however many hits it is near."""
    return f"""
WITH {query_cte(n_terms)},
h AS MATERIALIZED (
    SELECT r.seq, r.score, r.through_seq, {matched_sql(n_terms)} AS matched
    FROM ({ranked_sql(n_terms, folded)}) r, q
),
w AS (
    SELECT lo, hi, max(hi) OVER (ORDER BY lo, hi
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM (SELECT GREATEST(1, seq - %(before)s) AS lo, seq + %(after)s AS hi FROM h) x
),
runs AS (
    SELECT min(lo) AS lo, max(hi) AS hi FROM (
        SELECT lo, hi, count(*) FILTER (WHERE reach IS NULL OR lo > reach + 1)
            OVER (ORDER BY lo, hi ROWS UNBOUNDED PRECEDING) AS run
        FROM w) y
    GROUP BY run
)
SELECT h.seq, NULL::text AS body, NULL::integer AS tokens, h.score, h.through_seq, h.matched
FROM h
UNION ALL
SELECT m.seq, m.body, m.tokens, NULL, s.through_seq, NULL FROM sessions s, runs r,
    LATERAL (SELECT m.seq, m.body, m.tokens FROM messages m
        WHERE m.session_id = s.session_id AND m.seq >= r.lo AND m.seq <= r.hi
            AND m.body <> '' OFFSET 0) m
WHERE s.session_id = %(sid)s
"""


class _TurnRows:
    """Runs :func:`turns_sql` for :func:`~.postgres_search.search_messages` (in place of
    its plain search statement), keeping the rows of the messages around the hits."""

    def __init__(self, before: int, after: int) -> None:
        self.before, self.after = before, after
        self.rows: dict[int, tuple[str, int, int]] = {}  # seq -> (body, tokens, through_seq)

    async def __call__(self, conn: Any, query: SearchQuery, params: dict[str, Any],
                       groups: Sequence[tuple[str, ...]]) -> list[Any]:
        cur = await conn.execute(
            turns_sql(len(query.terms), query.folded),
            {**params, "q": factored_tsquery(groups), "before": self.before,
             "after": self.after})
        hits = []
        rows = self.rows
        for seq, body, tokens, score, through, matched in await cur.fetchall():
            if body is None:
                hits.append((seq, score, through, matched))
            else:
                rows[seq] = (body, tokens, through)
        # a hit's message is in its own window (a hit is never blanked)
        out = [(seq, *rows[seq][:2], score, through, matched)
               for seq, score, through, matched in hits]
        out.sort(key=lambda r: (r[3], r[0]), reverse=True)  # as search_sql orders them
        return out


async def search_turns(conn: Any, decoder: MessageDecoder, query: SearchQuery,
                       stats: TermStats | None, before: int, after: int) -> SearchTurns:
    """:func:`~.postgres_search.search_messages` of ``query`` with the stored messages from
    ``before`` seqs before each hit to ``after`` after it, read in the same statements
    (decoded when asked for)."""
    reader = _TurnRows(before, after)
    hits = await search_messages(conn, decoder, query, stats, ranked=reader)
    rows, sid = reader.rows, query.session_id

    def get(seq: int) -> StoredMessage | None:
        row = rows.get(seq)
        if row is None:
            return None
        body, tokens, through = row
        return decoder.decode(sid, seq, body, tokens, seq <= through)

    return SearchTurns(hits, before, after, get)
