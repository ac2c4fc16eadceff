"""What recall adds to ``context()`` on PostgreSQL, and how much of it is the search: the
ranking PostgreSQL's search ships (BM25 over the terms a message holds) against
``ts_rank_cd`` (cover density, the ranking it replaced), alternating in one run.

The sessions are those of ``recall_cost.py`` (one of 100,000 messages, all but the newest
40 folded; synthetic sentences or the LoCoMo dev turns repeated; ``--others`` messages of
10 other sessions in the same database, the table analyzed). Then, alternating per
question: the plain context, recall with ``ts_rank_cd``, recall as shipped. Reported: p50
and p95 of each, the p50 overhead beyond the plain context, the time spent inside the
store's ``search`` call (the rest of the overhead is the fetch of the hits' turns and
packing them, shared with the other stores), and for LoCoMo how many contexts hold the
question's answer. Usage::

    python benchmarks/recall_cost_postgres.py [--pg URL] [--messages 100000] [--runs 200]
        [--others 300000] [--text synthetic,locomo] [--quick] [--no-write]

Writes ``benchmarks/results/recall_cost_postgres.md``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_cost import PG_DEFAULT, build, build_others, locomo, pct, vocabulary
from retention_data import ROOT, context_text, normalize, publish

from contextfold import Memory, TokenBudget
from contextfold.recall import Recall
from contextfold.stores import postgres, postgres_search, search
from contextfold.stores.postgres_search import factored_tsquery

RESULTS = ROOT / "benchmarks" / "results" / "recall_cost_postgres.md"

#: The statement PostgreSQL's search ran before BM25: ``ts_rank_cd`` of the whole query
#: (the match asked of the index as :func:`~contextfold.stores.postgres_search.search_sql`
#: asks it).
COVER_DENSITY = """
WITH q AS (SELECT to_tsquery(%(cfg)s::regconfig, %(q)s) AS q)
SELECT m.seq, m.body, m.tokens, ts_rank_cd(m.search, q.q) AS score, s.through_seq
FROM sessions s, messages m, q
WHERE s.session_id = %(sid)s AND m.session_id COLLATE "C" = %(sid)s
    AND session_lexemes(m.session_id, m.search) @@ session_query(%(sid)s, q.q)
    AND (%(folded)s::boolean IS NULL OR (m.seq <= s.through_seq) = %(folded)s::boolean)
ORDER BY score DESC, m.seq DESC
LIMIT %(limit)s
"""


async def cover_density_search(
    conn: Any,
    decoder: Any,
    query: postgres_search.SearchQuery,
    stats: postgres_search.TermStats | None = None,
) -> list[search.SearchHit]:
    """PostgreSQL's search as it was with ``ts_rank_cd``: the selective groups first, and
    when they find fewer than ``limit``, every match ranked again."""
    sid, terms = query.session_id, query.terms
    if not terms or "\x00" in sid:
        return []
    groups = search.term_groups(terms, query.min_matched)
    need = len(groups[0])
    params = {"cfg": query.config, "sid": sid, "folded": query.folded, "limit": query.limit}
    rows: list[Any] = []
    narrow = None
    if stats is not None and len(terms) > 1:
        narrow = search.selective_search(
            groups, search.broad_terms(await stats.counts(conn, terms))
        )
    if narrow is not None:
        cur = await conn.execute(COVER_DENSITY, {**params, "q": factored_tsquery(narrow)})
        rows = await cur.fetchall()
    if len(rows) < query.limit:
        cur = await conn.execute(COVER_DENSITY, {**params, "q": factored_tsquery(groups)})
        rows = await cur.fetchall()
    hits = []
    for seq, body, tokens, score, through in rows:
        stored = decoder.decode(sid, seq, body, tokens, seq <= through)
        hit = search.make_hit(stored, score, terms, seq <= through)
        hits.append(hit if hit.matched >= need else replace(hit, matched=need))
    return hits


RANKINGS: dict[str, Callable[..., Any]] = {
    "ts_rank_cd": cover_density_search,
    "bm25": postgres_search.search_messages,
}


class SearchClock:
    """Milliseconds spent inside ``PostgresStore.search`` since the last :meth:`take`."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._real = postgres.PostgresStore.search
        clock = self

        async def timed(store: Any, *args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await clock._real(store, *args, **kwargs)
            finally:
                clock.spent += (time.perf_counter() - t0) * 1000

        postgres.PostgresStore.search = timed  # type: ignore[method-assign, assignment]

    def take(self) -> float:
        spent, self.spent = self.spent, 0.0
        return spent

    def close(self) -> None:
        postgres.PostgresStore.search = self._real  # type: ignore[method-assign]


def measure(
    url: str, sid: str, questions: list[str], runs: int, answers: dict[str, str]
) -> dict[str, Any]:
    """Alternating (the two rankings in turn first): plain context, recall with each
    ranking. Times in ms, time inside search, answers in the context."""
    out: dict[str, Any] = {"plain": [], **{k: [] for k in RANKINGS}}
    inside: dict[str, list[float]] = {k: [] for k in RANKINGS}
    answered = dict.fromkeys(RANKINGS, 0)
    clock = SearchClock()
    shipped = postgres.search_messages  # type: ignore[attr-defined]
    try:
        with (
            Memory(url, policy=TokenBudget(8000)) as plain,
            Memory(url, policy=TokenBudget(8000), recall=Recall()) as recall,
        ):
            plain.context(sid)
            for name in RANKINGS:  # warm: views, statements
                postgres.search_messages = RANKINGS[name]  # type: ignore[attr-defined]
                recall.context(sid, query=questions[0])
            for i in range(runs):
                q = questions[i % len(questions)]
                t0 = time.perf_counter()
                plain.context(sid, max_tokens=8000)
                out["plain"].append((time.perf_counter() - t0) * 1000)
                names = list(RANKINGS) if i % 2 else list(RANKINGS)[::-1]
                for name in names:
                    postgres.search_messages = RANKINGS[name]  # type: ignore[attr-defined]
                    clock.take()
                    t0 = time.perf_counter()
                    ctx = recall.context(sid, max_tokens=8000, query=q)
                    out[name].append((time.perf_counter() - t0) * 1000)
                    inside[name].append(clock.take())
                    if q in answers:
                        text = normalize(context_text(ctx.messages))
                        answered[name] += normalize(answers[q]) in text
    finally:
        postgres.search_messages = shipped  # type: ignore[attr-defined]
        clock.close()
    out["inside"] = inside
    out["answered"] = answered
    return out


def rows_of(text: str, n_others: int, got: dict[str, Any], asked: int) -> list[str]:
    plain = statistics.median(got["plain"])
    rows = []
    for name in RANKINGS:
        p50 = statistics.median(got[name])
        inside = got["inside"][name]
        answers = f"{got['answered'][name]}/{asked}" if asked else "–"
        rows.append(
            f"| {text} | {n_others:,} | {name} | {plain:.2f} | {p50:.2f} | "
            f"{pct(got[name], 0.95):.2f} | **{p50 - plain:.2f}** | "
            f"**{statistics.median(inside):.2f}** | {pct(inside, 0.95):.2f} | "
            f"{p50 - plain - statistics.median(inside):.2f} | {answers} |"
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", default=PG_DEFAULT)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--others", type=int, default=300_000)
    parser.add_argument("--text", default="synthetic,locomo")
    parser.add_argument("--quick", action="store_true", help="10,000 messages, 60 runs")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.runs = 10_000, 60
    vocab = vocabulary(random.Random(7))
    load_before = os.getloadavg()
    rows: list[str] = []
    stamp = int(time.time())
    for k, text in enumerate(args.text.split(",")):
        sid = f"recall-cost-pg-{text}-{stamp}"
        questions = build(args.pg, sid, args.messages, random.Random(11), vocab, text)
        build_others(args.pg, f"{sid}-o", args.others, random.Random(13 + k), vocab)
        answers = locomo()[2] if text == "locomo" else {}
        got = measure(args.pg, sid, questions, args.runs, answers)
        asked = sum(questions[j % len(questions)] in answers for j in range(args.runs))
        rows += rows_of(text, args.others, got, asked)
        print("\n".join(rows[-len(RANKINGS) :]), flush=True)
        with Memory(args.pg) as memory:
            memory.delete(sid)
            for i in range(10):
                memory.delete(f"{sid}-o-other-{i}")
    lines = [
        "# What recall adds to context() on PostgreSQL, by ranking",
        "",
        f"Generated by `python benchmarks/recall_cost_postgres.py"
        f"{' --quick' if args.quick else ''}`; {args.runs} alternating calls per ranking, "
        f"budget 8,000, one session of {args.messages:,} messages (all but the newest 40 "
        f"folded) beside {args.others:,} messages of 10 other sessions, the table analyzed "
        "(see `recall_cost.py` for the texts). *ts_rank_cd*: the ranking PostgreSQL's "
        "search used before (cover density of the whole query); *bm25*: as shipped. "
        "*Inside search*: the time in the store's `search` call (statements and decoding "
        "the hits); *rest*: the overhead beyond it (the fetch of the hits' turns, packing "
        "the block — shared with the other stores). Times in ms on a shared 2-core machine "
        f"under load (load average {load_before[0]:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end): compare the rows of one text.",
        "",
        "| text | other sessions' messages | ranking | plain p50 | recall p50 | recall p95 "
        "| p50 overhead | inside search p50 | inside search p95 | rest p50 "
        "| answers in the context |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    publish(lines, RESULTS, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
