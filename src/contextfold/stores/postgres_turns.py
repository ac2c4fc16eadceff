"""A PostgreSQL search with the turns around its hits, in one statement
(:meth:`~.postgres.PostgresStore.search_turns`).

Recall reads a search's hits and then the messages around them (a hit's turn, its
neighbours, the frame of the best hits): two round trips, each a wait on the server. Here
the search's ranked rows are kept (a materialized CTE, the same ranking as
:func:`~.postgres_search.search_sql`), the windows ``[seq - before, seq + after]`` around
them (wider around the best hits: a ``reach`` per rank) merged into runs of seqs, and the
stored messages of each run read by one descent of the primary key (as
:data:`~.postgres_search.FETCH` does), in the same statement: the hits and the messages
recall wants from around them, from one snapshot. The rows are (seq, body, tokens, score,
through_seq, matched): a hit has no body (its message is among the others: its window
holds it), a message no score.
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
from .search import MAX_TERMS, SearchTurns, reach_seqs

__all__ = ["search_turns", "turns_sql"]


@lru_cache(maxsize=3 * MAX_TERMS)
def turns_sql(n_terms: int, folded: bool | None = None) -> str:
    """:func:`~.postgres_search.search_sql`'s hits (without their bodies) and, after them,
    the stored messages (not blanked by ``delete`` retention) from ``before`` seqs before
    each hit to ``after`` after it: the ``n``-th best hit's (of equal scores the older
    first) from the ``n``-th elements of the arrays ``%(before)s`` and ``%(after)s``, the
    last ones for hits beyond them. The
    windows are merged into runs (a window that starts within or just after the runs
    before it extends the last one), so a message is read once however many hits it is
    near."""
    return f"""
WITH {query_cte(n_terms)},
h AS MATERIALIZED (
    SELECT r.seq, r.score, r.through_seq, {matched_sql(n_terms)} AS matched,
        LEAST(row_number() OVER (ORDER BY r.score DESC, r.seq),
              cardinality(%(before)s::int[])) AS rank
    FROM ({ranked_sql(n_terms, folded)}) r, q
),
w AS (
    SELECT lo, hi, max(hi) OVER (ORDER BY lo, hi
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM (SELECT GREATEST(1, seq - (%(before)s::int[])[rank]) AS lo,
        seq + (%(after)s::int[])[rank] AS hi FROM h) x
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

    def __init__(self, reach: tuple[tuple[int, int], ...]) -> None:
        # a rank's reach is at least every lower rank's: a hit's rank in its own
        # statement is no lower than its rank among all hits (broad terms: two statements)
        wide = list(reach)
        for i in range(len(wide) - 2, -1, -1):
            wide[i] = (max(wide[i][0], wide[i + 1][0]), max(wide[i][1], wide[i + 1][1]))
        self.reach = reach = tuple(wide)
        self.before = [b for b, _ in reach]
        self.after = [a for _, a in reach]
        self.rows: dict[int, tuple[str, int, int]] = {}  # seq -> (body, tokens, through_seq)
        self.covered: set[int] = set()  # the seqs read

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
        # ranks as the statement ranks them: the best first, of equal ones the oldest (as
        # recall orders its hits)
        ranked = sorted(out, key=lambda r: (-r[3], r[0]))
        self.covered |= reach_seqs((r[0] for r in ranked), self.reach)
        return out


async def search_turns(conn: Any, decoder: MessageDecoder, query: SearchQuery,
                       stats: TermStats | None, reach: tuple[tuple[int, int], ...]
                       ) -> SearchTurns:
    """:func:`~.postgres_search.search_messages` of ``query`` with the stored messages
    within ``reach`` of its hits (:class:`~.search.SearchTurns`), read in the same
    statements (decoded when asked for). A rank reaches at least as far as every lower
    one (when some terms are broad the search may take two statements, and a hit's rank
    in its own statement may be higher than among all); the seqs read are those of both."""
    reader = _TurnRows(reach)
    hits = await search_messages(conn, decoder, query, stats, ranked=reader)
    rows, sid = reader.rows, query.session_id

    def get(seq: int) -> StoredMessage | None:
        row = rows.get(seq)
        if row is None:
            return None
        body, tokens, through = row
        return decoder.decode(sid, seq, body, tokens, seq <= through)

    return SearchTurns(hits, frozenset(reader.covered), get)
