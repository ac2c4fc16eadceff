"""Whether two source trees of contextfold recall the same blocks from PostgreSQL and
SQLite, and how many statements each sends and how many message rows it reads per
recalled context.

The sessions are written once (this tree), each in a schema of its own in the database
``--pg`` names and each in a SQLite file of its own: the LoCoMo dev conversations replayed
through the engine with recall on (the offline summarizer, inline folds) at each budget,
and a synthetic session (sentences over a 3,000-word vocabulary, as ``recall_cost.py``
builds them) folded but for its newest 40 messages. Then a child process per source tree
(``--baseline SRC``: a directory holding the ``contextfold`` package, e.g. main's ``src``
from ``git archive``; and this tree's ``src``) asks ``context(query=…)`` of every question
— the LoCoMo questions of each conversation, 50 questions built from words of folded
synthetic messages — at each budget and prints, per question, the recalled block's text,
tokens and seqs, and what recall's reads cost (``recall_into``, the plain context's reads
left out): PostgreSQL statements sent and rows they returned; SQLite message rows read
(each is decoded: search hits and fetched turns). The blocks must be byte-identical. Usage::

    python benchmarks/recall_same_blocks.py --baseline SRC [--pg URL]
        [--stores postgres,sqlite] [--budgets 1000,2000,8000] [--synthetic 5000]

Prints the comparison; writes nothing (the sessions' schemas and files are dropped at the
end).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"


def open_store(url: str, schema: str) -> Any:
    """The store of a job: a PostgreSQL schema of ``url``, or (``url`` a directory) a
    SQLite file in it."""
    if os.path.isdir(url):
        from contextfold.stores.sqlite import SQLiteStore

        return SQLiteStore(os.path.join(url, f"{schema}.db"))
    from contextfold.stores.postgres import PostgresStore

    return PostgresStore(url, schema=schema, pool_size=2)


def build(url: str, budgets: list[int], synthetic: int) -> list[dict[str, Any]]:
    """The sessions (this tree): one job per (schema, session, budget, questions)."""
    from recall_cost import sentence, vocabulary
    from retention_data import default_data, load

    from contextfold import AsyncMemory, Message, Recall, TokenBudget
    from contextfold.summarizers.extractive import ExtractiveSummarizer

    jobs: list[dict[str, Any]] = []

    async def replay(schema: str, sid: str, messages: Sequence[Message], budget: int,
                     force: bool) -> None:
        store = open_store(url, schema)
        async with AsyncMemory(store, summarizer=ExtractiveSummarizer(),
                               policy=TokenBudget(budget), raise_errors=True,
                               recall=Recall(), fold="manual" if force else "inline") as memory:
            if force:
                for i in range(0, len(messages) - 40, 500):
                    await memory.add(sid, *messages[i:min(i + 500, len(messages) - 40)])
                await memory.fold(sid, force=True)
                await memory.add(sid, *messages[len(messages) - 40:])
            else:
                for message in messages:
                    await memory.add(sid, message)
        await analyze(url, schema)

    for conv in load(default_data()):
        for budget in budgets:
            schema = f"rsb_{uuid.uuid4().hex[:10]}"
            asyncio.run(replay(schema, conv.sample_id, conv.messages, budget, False))
            jobs.append({"schema": schema, "sid": conv.sample_id, "budgets": [budget],
                         "questions": [q for q in conv.questions if q]})
            print(f"built {conv.sample_id} at {budget}", file=sys.stderr, flush=True)
    rng = random.Random(7)
    vocab = vocabulary(rng)
    msgs = [Message(role="user" if i % 2 == 0 else "assistant", content=sentence(rng, vocab))
            for i in range(synthetic)]
    schema = f"rsb_{uuid.uuid4().hex[:10]}"
    asyncio.run(replay(schema, "synthetic", msgs, 10**9, True))
    texts = [m.text for m in msgs[:-40]]
    questions = []
    for _ in range(50):
        words = [w for w in rng.choice(texts).rstrip(".").split() if w.islower() and len(w) > 3]
        questions.append("Do you remember when we talked about " + " ".join(words[:3]) + "?")
    jobs.append({"schema": schema, "sid": "synthetic", "budgets": budgets,
                 "questions": questions})
    return jobs


async def analyze(url: str, schema: str) -> None:
    if os.path.isdir(url):
        return
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"ANALYZE {schema}.messages")


def drop(url: str, jobs: list[dict[str, Any]]) -> None:
    if os.path.isdir(url):
        shutil.rmtree(url)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for schema in {j["schema"] for j in jobs}:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def child(url: str, jobs_file: str) -> None:
    """Every job's questions at its budgets (the tree on ``PYTHONPATH``): one JSON line per
    context — the block's text, tokens and seqs, and recall's statements and rows read."""
    import psycopg

    from contextfold import AsyncMemory, Recall, TokenBudget, engine
    from contextfold.stores.rows import MessageDecoder

    counts = {"statements": 0, "rows": 0}
    recalling = [False]  # counted only inside recall_into (not the plain context's reads)
    execute = psycopg.AsyncConnection.execute
    fetchall = psycopg.AsyncCursor.fetchall
    decode = MessageDecoder.decode
    recall_into = engine.recall_into  # type: ignore[attr-defined]

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["statements"] += recalling[0]
        return await execute(self, *args, **kwargs)

    async def counted_rows(self: Any) -> Any:
        rows = await fetchall(self)
        counts["rows"] += recalling[0] * len(rows)
        return rows

    def decoded(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts["rows"] += recalling[0] and sqlite
        return decode(self, *args, **kwargs)

    async def recalled(*args: Any, **kwargs: Any) -> Any:
        recalling[0] = True
        try:
            return await recall_into(*args, **kwargs)
        finally:
            recalling[0] = False

    sqlite = os.path.isdir(url)
    psycopg.AsyncConnection.execute = counted  # type: ignore[method-assign]
    psycopg.AsyncCursor.fetchall = counted_rows  # type: ignore[method-assign]
    MessageDecoder.decode = decoded  # type: ignore[method-assign]
    engine.recall_into = recalled  # type: ignore[attr-defined]
    jobs = json.loads(Path(jobs_file).read_text(encoding="utf-8"))

    async def run() -> None:
        for job in jobs:
            store = open_store(url, job["schema"])
            async with AsyncMemory(store, policy=TokenBudget(max(job["budgets"])),
                                   recall=Recall(), fold="manual") as memory:
                await memory.context(job["sid"])  # warm: the live list, the statistics
                for budget in job["budgets"]:
                    for q in job["questions"]:
                        counts.update(statements=0, rows=0)
                        ctx = await memory.context(job["sid"], max_tokens=budget, query=q)
                        block = next((m for m in ctx.messages
                                      if (m.metadata or {}).get("contextfold") == "recalled"),
                                     None)
                        print(json.dumps({
                            "sid": job["sid"], "budget": budget, "q": q,
                            "block": None if block is None else block.content,
                            "tokens": ctx.tokens, "seqs": list(ctx.recalled), **counts}),
                            flush=True)

    asyncio.run(run())


def compare(url: str, baseline: Path, budgets: list[int], synthetic: int) -> int:
    """Build the sessions in ``url`` (a PostgreSQL URL or a directory for SQLite files),
    run both trees on them, print the comparison; the number of contexts that differ."""
    store = "sqlite" if os.path.isdir(url) else "postgres"
    jobs = build(url, budgets, synthetic)
    here = Path(__file__).resolve().parent.parent / "src"
    got: dict[str, list[dict[str, Any]]] = {}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(jobs, f)
    try:
        for name, src in (("baseline", baseline), ("change", here)):
            proc = subprocess.run([sys.executable, __file__, "--child", url, f.name],
                                  env={**os.environ, "PYTHONPATH": str(src)},
                                  capture_output=True, text=True, check=True)
            got[name] = [json.loads(line) for line in proc.stdout.splitlines() if line]
    finally:
        os.unlink(f.name)
        drop(url, jobs)
    base, change = got["baseline"], got["change"]
    assert len(base) == len(change), (len(base), len(change))
    differ = 0
    for kind in ("locomo", "synthetic"):
        for budget in budgets:
            pairs = [(a, b) for a, b in zip(base, change, strict=True) if a["budget"] == budget
                     and (a["sid"] == "synthetic") == (kind == "synthetic")]
            shown = [p for p in pairs if p[0]["block"] is not None]
            same = sum(a["block"] == b["block"] and a["seqs"] == b["seqs"]
                       and a["tokens"] == b["tokens"] for a, b in pairs)
            differ += len(pairs) - same
            per = {(key, name): sum(p[i][key] for p in shown) / max(1, len(shown))
                   for key in ("statements", "rows")
                   for i, name in enumerate(("baseline", "change"))}
            reads = "" if store == "sqlite" else (
                f"statements {per['statements', 'baseline']:.2f} -> "
                f"{per['statements', 'change']:.2f}, ")
            print(f"{store:8} {kind:9} budget {budget:5}: {same}/{len(pairs)} contexts "
                  f"identical, {len(shown)} with a block; per recalled context {reads}rows "
                  f"{per['rows', 'baseline']:.1f} -> {per['rows', 'change']:.1f}", flush=True)
    return differ


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--pg", default=PG_DEFAULT)
    parser.add_argument("--stores", default="postgres,sqlite")
    parser.add_argument("--budgets", default="1000,2000,8000")
    parser.add_argument("--synthetic", type=int, default=5000)
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    differ = 0
    for store in args.stores.split(","):
        if store == "postgres":
            differ += compare(args.pg, args.baseline, budgets, args.synthetic)
        elif store == "sqlite":
            differ += compare(tempfile.mkdtemp(prefix="recall-same-blocks-"), args.baseline,
                              budgets, args.synthetic)
        else:
            parser.error(f"unknown store {store!r} (postgres, sqlite)")
    print("all identical" if not differ else f"{differ} contexts differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
