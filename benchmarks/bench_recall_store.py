"""Search in the stores: what the full-text index costs on append, and how fast a search is.

1. Append throughput with the index vs without, per store (memory, SQLite, PostgreSQL):
   one chat message per ``append`` (the per-turn write), N messages into fresh sessions,
   the two variants interleaved (A B A B) in the same run so load affects both alike,
   15 rounds (PostgreSQL: 3) of fresh stores, the median ratio and the rounds' range.
   "Without" is the same store code with the index write replaced by nothing (SQLite and
   memory: no ``message_words`` row; PostgreSQL: an empty ``tsvector`` and no GIN index).
   Target: with / without >= 0.8. The memory store indexes in the first search that needs
   the messages: what that costs per message is measured and reported beside its ratio.
2. Search latency on one session of 100,000 stored messages (``--quick``: 20,000), 99% of
   them folded: ``store.search(session, terms, folded=True, limit=20)`` for queries of one
   to four words drawn like a user's question (common and rare words), p50 and p99.

The texts are synthetic chat turns (12-60 words from a Zipf-distributed vocabulary of 5,000
words plus English function words), so the index holds a realistic mix of frequent and
rare terms.

Usage: python benchmarks/bench_recall_store.py [--quick] [--pg URL] [--rounds N]
    [--part append|search]
Writes benchmarks/results/recall_store.md. PostgreSQL: the server at 127.0.0.1:5432 (a
scratch database is created and dropped) unless --pg names another admin URL; --no-pg
skips it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from contextfold.messages import Message
from contextfold.stores import MemoryStore
from contextfold.stores import sqlite as sqlite_module
from contextfold.stores.base import FoldCommit, LedgerEntry, PreparedMessage, Store
from contextfold.stores.sqlite import SQLiteStore

RESULTS = Path(__file__).parent / "results"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
FUNCTION_WORDS = [
    "the",
    "a",
    "to",
    "and",
    "of",
    "in",
    "is",
    "it",
    "you",
    "that",
    "we",
    "for",
    "on",
    "was",
    "with",
    "my",
    "I",
    "be",
    "at",
    "so",
    "this",
    "have",
    "but",
    "are",
    "not",
    "do",
    "what",
    "can",
    "your",
    "me",
    "just",
]


def vocabulary(n: int = 5000, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(n)]


VOCAB = vocabulary()
WEIGHTS = [1 / (i + 1) for i in range(len(VOCAB))]  # Zipf


def texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(12, 60)
        content = rng.choices(VOCAB, WEIGHTS, k=k // 2)
        filler = rng.choices(FUNCTION_WORDS, k=k - k // 2)
        words = content + filler
        rng.shuffle(words)
        out.append(f"{i}: " + " ".join(words))
    return out


def queries(n: int, seed: int = 11) -> list[list[str]]:
    """What a question leaves after its stop words: 1-4 content words, most of them
    mid-frequency or rare (ranks 20-5,000), and in a third of the queries one of the 20
    most frequent words too (each in a tenth of the messages or more)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        terms = [VOCAB[rng.randint(20, len(VOCAB) - 1)] for _ in range(rng.randint(1, 3))]
        if rng.random() < 1 / 3:
            terms.append(VOCAB[rng.randint(0, 19)])
        out.append(terms)
    return out


def prepared(text: str, i: int) -> PreparedMessage:
    role = "user" if i % 2 == 0 else "assistant"
    return PreparedMessage(Message(role=role, content=text, timestamp=T0), len(text) // 4)


# -- the stores, with and without the index -----------------------------------------------


@contextlib.contextmanager
def no_index(kind: str) -> Iterator[None]:
    """The same store code with the index write replaced by nothing."""
    saved: list[tuple[Any, str, Any]] = []

    def patch(module: Any, name: str, value: Any) -> None:
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, value)

    if kind == "sqlite":
        patch(sqlite_module, "catch_up_stored", lambda *a: None)
    elif kind == "memory":
        patch(MemoryStore, "_catch_up", lambda *a: None)
    else:
        from contextfold.stores import postgres_append

        patch(postgres_append, "index_text", lambda message: "")
    try:
        yield
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)


@contextlib.asynccontextmanager
async def open_kind(kind: str, pg: str | None, *, indexed: bool = True) -> AsyncIterator[Store]:
    store: Store
    if kind == "memory":
        store = MemoryStore()
    elif kind == "sqlite":
        store = SQLiteStore(Path(tempfile.mkdtemp(prefix="cf-bench-")) / "b.db")
    else:
        from contextfold.stores.postgres import PostgresStore

        assert pg is not None
        store = PostgresStore(pg, schema=f"b_{uuid.uuid4().hex[:10]}")
    await store.setup()
    if kind == "postgres" and not indexed:

        async def drop(conn: Any) -> None:
            await conn.execute("DROP INDEX IF EXISTS messages_search")
            await conn.execute("DROP INDEX IF EXISTS messages_search_session")

        await store._tx(drop)  # type: ignore[attr-defined]
    try:
        yield store
    finally:
        await store.close()


# -- 1. append throughput -------------------------------------------------------------------


async def write_one(store: Store, i: int, item: PreparedMessage) -> None:
    """One chat turn's writes: append the message to one of 20 sessions and, when that
    session has 20 live messages, commit a fold of its 15 oldest (where SQLite and the
    memory store index, see sqlite_search)."""
    sid = f"s{i % 20}"
    stats = (await store.append(sid, [item], T0)).stats
    if stats.live_count >= 20:
        lo, hi = stats.through_seq + 1, stats.through_seq + 15
        entry = LedgerEntry(session_id=sid, outcome="committed", lo=lo, hi=hi, started_at=T0)
        commit = FoldCommit(sid, stats.summary_version, lo, hi, "summary", 10)
        await store.commit_fold(commit, entry)


async def append_rates(kind: str, pg: str | None, n: int) -> tuple[float, float, float]:
    """Messages per second (with the index, without) of the same writes into two stores
    side by side, turn by turn alternating between them, so both see the same load; and
    the µs per message a first search spends indexing (the memory store indexes when a
    search needs it: the appends and folds above wrote no index; 0 for the others)."""
    items = [prepared(t, i) for i, t in enumerate(texts(n, seed=n))]
    spent = {True: 0.0, False: 0.0}
    deferred = 0.0
    async with (
        open_kind(kind, pg, indexed=True) as with_index,
        open_kind(kind, pg, indexed=False) as without,
    ):
        for i, item in enumerate(items):
            for indexed in (True, False) if i % 2 else (False, True):
                ctx = contextlib.nullcontext() if indexed else no_index(kind)
                with ctx:
                    start = time.perf_counter()
                    await write_one(with_index if indexed else without, i, item)
                    spent[indexed] += time.perf_counter() - start
        if kind == "memory":  # the first search of each session indexes its folded messages
            folded = 0
            for first in (True, False):  # the second time: the searches alone
                start = time.perf_counter()
                for s in range(20):
                    await with_index.search(f"s{s}", ["the"], folded=True)
                    if first:
                        stats = await with_index.stats(f"s{s}")
                        folded += stats.through_seq if stats else 0
                took = time.perf_counter() - start
                deferred += took if first else -took
            deferred = deferred / max(folded, 1) * 1e6
    return n / spent[True], n / spent[False], deferred


async def append_table(
    kinds: list[str], pg: str | None, n: int, rounds: dict[str, int]
) -> list[list[str]]:
    """One row per store: the medians over its rounds, and the range of the rounds'
    ratios (each round: fresh stores, the two variants interleaved turn by turn)."""
    rows = []
    for kind in kinds:
        with_, without, ratios, deferred = [], [], [], []
        for _ in range(rounds[kind]):
            w, wo, d = await append_rates(kind, pg, n)
            with_.append(w)
            without.append(wo)
            ratios.append(w / wo)
            deferred.append(d)
        w, wo, r = statistics.median(with_), statistics.median(without), statistics.median(ratios)
        where = {"memory": "first search after the fold", "sqlite": "fold commit",
                 "postgres": "append"}[kind]
        work = f"{statistics.median(deferred):.0f} µs/msg" if kind == "memory" else "in the rate"
        rows.append(
            [
                kind,
                f"{n:,}",
                str(rounds[kind]),
                f"{wo:,.0f}",
                f"{w:,.0f}",
                f"**{r:.2f}**",
                f"{min(ratios):.2f}-{max(ratios):.2f}",
                "yes" if r >= 0.8 else "NO",
                f"{where} ({work})",
            ]
        )
        print(rows[-1], flush=True)
    return rows


# -- 2. search latency ------------------------------------------------------------------------


async def fill(store: Store, n: int) -> None:
    batch = 500
    all_texts = texts(n, seed=1)
    for lo in range(0, n, batch):
        chunk = [prepared(t, lo + i) for i, t in enumerate(all_texts[lo : lo + batch])]
        await store.append("big", chunk, T0)
    hi = n - n // 100
    entry = LedgerEntry(session_id="big", outcome="committed", lo=1, hi=hi, started_at=T0)
    await store.commit_fold(FoldCommit("big", 0, 1, hi, "summary", 10), entry)


def percentiles(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]


async def timed_searches(store: Store, qs: list[list[str]]) -> list[str]:
    """p50 and p99 (ms) of ``store.search(folded=True, limit=20)`` over ``qs``, with every
    term's match counted (min_matched=1) and with two terms needed (min_matched=2, what
    recall's relevance gate asks for anyway)."""
    start = time.perf_counter()
    await store.search("big", qs[0], folded=True, limit=20)
    out = [f"{(time.perf_counter() - start) * 1000:.0f}"]
    for need in (1, 2):
        for terms in qs[:20]:  # warm up caches
            await store.search("big", terms, folded=True, min_matched=need)
        times = []
        for terms in qs:
            t = time.perf_counter()
            await store.search("big", terms, folded=True, limit=20, min_matched=need)
            times.append((time.perf_counter() - t) * 1000)
        p50, p99 = percentiles(times)
        out += [f"{p50:.2f}", f"{p99:.2f}"]
    return out


async def search_latency(kind: str, pg: str | None, n: int, q: int) -> list[str]:
    async with open_kind(kind, pg) as store:
        start = time.perf_counter()
        await fill(store, n)
        built = time.perf_counter() - start
        row = await timed_searches(store, queries(q))
    return [kind, "synthetic", f"{n:,}", str(q), *row, f"{built:.0f}"]


LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "locomo"


def locomo_texts_and_questions() -> tuple[list[str], list[list[str]]] | None:
    """The dev conversations' turns and their questions' search terms (``query_terms``,
    the library's own query processing), or None without the data set."""
    import json

    from contextfold.search_terms import query_terms

    path = LOCOMO / "locomo_dev.json"
    if not path.exists():
        return None
    turns, questions = [], []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        i = 1
        while f"session_{i}" in conv:
            turns += [t["text"] for t in conv[f"session_{i}"]]
            i += 1
        questions += [query_terms(q["question"]) for q in sample["qa"] if q.get("question")]
    return turns, [q for q in questions if q]


async def search_latency_real(kind: str, pg: str | None, n: int, q: int) -> list[str] | None:
    """Search latency on real chat text: the LoCoMo dev turns repeated to ``n`` messages
    (word frequencies as in the conversations), queried with its questions' terms."""
    data = locomo_texts_and_questions()
    if data is None:
        return None
    turns, questions = data
    async with open_kind(kind, pg) as store:
        start = time.perf_counter()
        for lo in range(0, n, 500):
            chunk = [
                prepared(turns[(lo + i) % len(turns)], lo + i) for i in range(min(500, n - lo))
            ]
            await store.append("big", chunk, T0)
        hi = n - n // 100
        entry = LedgerEntry(session_id="big", outcome="committed", lo=1, hi=hi, started_at=T0)
        await store.commit_fold(FoldCommit("big", 0, 1, hi, "summary", 10), entry)
        built = time.perf_counter() - start
        row = await timed_searches(store, [questions[i % len(questions)] for i in range(q)])
    return [kind, "LoCoMo turns", f"{n:,}", str(q), *row, f"{built:.0f}"]


@contextlib.contextmanager
def scratch_database(admin: str) -> Iterator[str]:
    import psycopg

    name = f"cf_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="1,000 appends and a 20,000-message session"
    )
    parser.add_argument(
        "--pg",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="PostgreSQL admin URL (a scratch database is made)",
    )
    parser.add_argument("--no-pg", action="store_true", help="Skip PostgreSQL")
    parser.add_argument("--rounds", type=int, default=0,
                        help="rounds of the append table per store (default: 15 for memory "
                             "and SQLite, 3 for PostgreSQL; --quick: 3 and 1)")
    parser.add_argument("--stores", default="memory,sqlite,postgres",
                        help="comma-separated stores to measure")
    parser.add_argument("--part", choices=("all", "append", "search"), default="all",
                        help="run one table only (prints it; writes nothing)")
    args = parser.parse_args()
    n_append = 1000 if args.quick else 3000
    n_session = 20_000 if args.quick else 100_000
    n_queries = 200 if args.quick else 500
    local, remote = (3, 1) if args.quick else (15, 3)
    if args.rounds:
        local = remote = args.rounds
    rounds = {"memory": local, "sqlite": local, "postgres": remote}

    def run(pg: str | None) -> tuple[list[list[str]], list[list[str]]]:
        kinds = [k for k in ("memory", "sqlite", "postgres")
                 if k in args.stores.split(",") and (pg or k != "postgres")]
        appends, searches = [], []
        if args.part in ("all", "append"):
            appends = asyncio.run(append_table(kinds, pg, n_append, rounds))
        if args.part in ("all", "search"):
            searches = [asyncio.run(search_latency(k, pg, n_session, n_queries)) for k in kinds]
            for k in kinds:
                real = asyncio.run(search_latency_real(k, pg, n_session, n_queries))
                if real is not None:
                    searches.append(real)
        return appends, searches

    if args.no_pg:
        appends, searches = run(None)
    else:
        with scratch_database(args.pg) as url:
            appends, searches = run(url)

    a_head = ["store", "appends", "rounds", "msgs/s without index", "msgs/s with index",
              "ratio (median)", "ratio range", ">= 0.8", "index written in"]
    s_head = [
        "store",
        "text",
        "session messages",
        "queries",
        "first search ms",
        "p50 ms",
        "p99 ms",
        "p50 ms, min_matched=2",
        "p99 ms, min_matched=2",
        "build s",
    ]
    a_table, s_table = table(a_head, appends), table(s_head, searches)
    print(a_table, "\n", s_table, sep="\n")
    if args.part != "all":
        return
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "recall_store.md").write_text(
        "# Search in the stores\n\n"
        f"Produced by `python benchmarks/bench_recall_store.py{' --quick' if args.quick else ''}`"
        f" on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Timings were taken on a "
        "shared machine: compare the numbers within one table (same run), not across runs.\n\n"
        "## Append throughput, with the full-text index vs without\n\n"
        "One chat message (12-60 words) per `store.append`, spread over 20 sessions, and in "
        "each session a fold commit of its 15 oldest live messages every 20 appends; two "
        "stores side by side, written turn by turn alternately (so load hits both alike). "
        "Each round uses fresh stores; the table gives the median rate over the rounds, the "
        "median of the rounds' ratios and their range. Without = the same store code with "
        "the index write left out (PostgreSQL: an empty `tsvector`, no GIN index). Where "
        "the index is written: PostgreSQL in the append's statement, SQLite in the fold "
        "commit (the messages it folds), the memory store in the first search that needs "
        "them — its appends and folds write no index, so its ratio is the write path alone; "
        "the last column gives what that first search then spends per message indexed "
        "(measured after the appends: one folded-messages search per session, minus the "
        "same searches again).\n\n"
        f"{a_table}\n\n"
        "## Search latency on one large session\n\n"
        "`store.search(session, terms, folded=True, limit=20)` and the same with "
        "`min_matched=2` (only messages with two of the terms: what recall's relevance gate "
        "needs). Synthetic: 1-4 query words, mostly mid-frequency or rare, a third of the "
        "queries with one of the 20 most frequent words. LoCoMo turns: the dev "
        "conversations' turns repeated to the session's size (their word frequencies), "
        "queried with the dev questions' `query_terms`. 99% of the session folded; build = "
        "filling the session in batches of 500 plus one fold commit. First search: the "
        "first query after the build, before any warm-up (the memory store indexes the "
        "session's folded messages in it).\n\n"
        f"{s_table}\n"
    )


if __name__ == "__main__":
    main()
