"""Answer presence with recall, on LoCoMo dev, cross-validated across conversations.

Each conversation is replayed through the real engine (``AsyncMemory`` on the in-memory
store with its own full-text index, inline folds, the offline summarizer) at B = 2,000 /
4,000 / 8,000 tokens. Then every QA question (categories 1-4) is asked: the context the
model would get for it, and whether the answer (SQuAD-normalised) is in that context —
counted over answers present in the full conversation (as ``retention.py`` does).

Four rows per budget:

- **plain**: today's context (summary + newest turns), the same for every question;
- **recall**: ``Memory(recall=Recall(...))`` + ``context(query=question)``; the options
  (share, neighbours, fewest matched terms, hits framed by their neighbours, the turns
  after such a hit that its frame takes) chosen by leave-one-conversation-out
  cross-validation over :data:`GRID`: each conversation is scored with the options chosen
  on the other four (*held-out*, the honest figure); *in-sample* is the choice on all
  five (what ships as the default);
- **recall, held-out, share fixed**: the same cross-validation over the query options
  only, the share held at the shipped one. The share is not a query option: it sets the
  fold policy (:meth:`Recall.fold_policy`), so it is chosen with the fold rule against
  the prompt-cache targets (``recall_bill.py``, ``recall_fold_frontier.py``); chosen here
  on answer presence alone, among three values that each replay the conversation
  differently, leave-one-out picks it from differences of a question or two per
  conversation. Both rows are shown; the first is the stricter estimate (the shipped
  share is also the in-sample choice, so the second leans on all five conversations);
- **defaults**: the shipped ``Recall()`` defaults on every conversation (and, to show what
  it adds, the same without matching a named speaker: ``Recall(speakers=False)``);
- **truncation**: the newest messages that fit;
- **recall-only**: no summary — the newest turns (a one-line stand-in summary) plus the
  recalled block, the same share, the same search.

The same rows per LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop)
and for the *low-overlap* questions (:func:`retention_data.low_overlap`: at most a third of
the question's content words in its evidence turns), which stand in for real chats, whose
questions share fewer words with the answer.

Every context is checked to be within its budget. ``--store postgres``: the same replay
on a real PostgreSQL store (its own ``tsvector`` search and ranking), each replay in a
schema of its own in the database ``--pg`` names (dropped after; analyzed after the
replay, as autovacuum would), so a conversation's search sees its own messages only, as
on the memory store. Usage::

    python benchmarks/retention_recall.py [--data PATH] [--budgets 2000,4000,8000]
        [--jobs 2] [--quick] [--extend] [--store memory|postgres] [--pg URL] [--no-write]

Prints the tables and writes ``benchmarks/results/retention_recall.md`` (with ``--extend``,
the summary extended instead of rewritten at every fold: ``retention_recall_extend.md``;
with ``--store postgres``, ``retention_recall_postgres.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retention_data import (
    ROOT,
    Conversation,
    context_text,
    default_data,
    load,
    low_overlap,
    normalize,
    truncate,
)

from contextfold.engine import AsyncMemory
from contextfold.policy import TokenBudget
from contextfold.recall import Recall
from contextfold.search_terms import asks_about_past
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.tokens import get_counter

RESULTS = ROOT / "benchmarks" / "results" / "retention_recall.md"

#: Candidate options (the replay depends on ``share`` only; the rest is query time).
GRID: dict[str, tuple[Any, ...]] = {
    "share": (0.4, 0.5, 0.6),
    "neighbours": (2, 4),
    "min_matched": (2,),  # 1 finds a little more but is 7x slower on 100,000 messages
    "framed": (0, 3, 5),
    "frame_after": (1, 2),  # (no effect with framed = 0: that pair is run once)
}
QUICK_GRID: dict[str, tuple[Any, ...]] = {
    "share": (0.5,), "neighbours": (4,), "min_matched": (2,), "framed": (0, 5),
    "frame_after": (2,),
}


class StubSummarizer:
    """The recall-only baseline's summarizer: a one-line stand-in, no facts."""

    name = "stub"
    runs_inline = True
    needs_redaction = False

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult("(earlier turns are searched, not summarized)")


@dataclass(frozen=True)
class Task:
    conv: int
    budget: int
    share: float
    #: (neighbours, min_matched, framed, frame_after, speakers)
    configs: tuple[tuple[Any, ...], ...]
    stub: bool = False


_convs: list[Conversation] = []
_tokenizer = "o200k"
_extend = False
_pg: str | None = None  # a PostgreSQL URL: replay on that store, else the memory store


def _init(data: str, tokenizer: str, extend: bool = False, pg: str | None = None) -> None:
    global _convs, _tokenizer, _extend, _pg
    _convs = load(Path(data))
    _tokenizer = tokenizer
    _extend = extend
    _pg = pg


@asynccontextmanager
async def _store() -> AsyncIterator[Any]:
    """The store of one replay: ``memory://``, or a PostgreSQL store in a fresh schema
    (dropped when the replay ends)."""
    if _pg is None:
        yield "memory://"
        return
    import psycopg

    from contextfold.stores.postgres import PostgresStore

    schema = f"rr_{uuid.uuid4().hex[:12]}"
    store = PostgresStore(_pg, schema=schema, pool_size=2)
    try:
        yield store
    finally:
        await store.close()
        async with await psycopg.AsyncConnection.connect(_pg, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


async def _analyze(store: Any) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(store.url, autocommit=True) as conn:
        await conn.execute(f"ANALYZE {store.schema}.messages")


def present(conv: Conversation) -> list[int]:
    """Indices of the QA whose answer occurs in the full conversation (or its dates)."""
    full = normalize(context_text(conv.messages) + "\n" + "\n".join(conv.dates))
    return [i for i, a in enumerate(conv.answers) if normalize(a).strip()
            and normalize(a) in full]


def _kept(answer: str, text: str) -> bool:
    return normalize(answer) in text


def run_task(task: Task) -> dict[str, list[int]]:
    """Replay one conversation at one budget; for every query config the list of kept
    flags over the present answers (key ``"plain"`` for the plain context)."""
    return asyncio.run(_run(task))


async def _run(task: Task) -> dict[str, list[int]]:
    conv = _convs[task.conv]
    counter = get_counter(_tokenizer)
    keep = present(conv)
    out: dict[str, list[int]] = {}
    summarizer: Any = StubSummarizer() if task.stub else ExtractiveSummarizer(extend=_extend)
    recall = Recall(share=task.share) if task.share else None
    async with _store() as store, AsyncMemory(
            store, summarizer=summarizer, policy=TokenBudget(task.budget), tokenizer=counter,
            raise_errors=True, recall=recall) as memory:
        for message in conv.messages:
            await memory.add(conv.sample_id, message)
        if _pg is not None:  # the statistics autovacuum gathers (broad terms, term weights)
            await _analyze(store)
        if recall is None:
            ctx = await memory.context(conv.sample_id)
            text = normalize(context_text(ctx.messages))
            out["plain"] = [int(_kept(conv.answers[i], text)) for i in keep]
            return out
        for neighbours, matched, framed, after, speakers in task.configs:
            memory.recall = Recall(share=task.share, neighbours=neighbours,
                                   min_matched=matched, framed=framed, frame_after=after,
                                   speakers=speakers)
            flags = []
            for i in keep:
                ctx = await memory.context(conv.sample_id, query=conv.questions[i])
                if ctx.tokens > task.budget:
                    raise AssertionError(f"{ctx.tokens} tokens over the budget {task.budget}")
                flags.append(int(_kept(conv.answers[i], normalize(context_text(ctx.messages)))))
            out[_key(task.share, neighbours, matched, framed, after, speakers)] = flags
    return out


def _key(share: float, neighbours: int, matched: int, framed: int, after: int,
         speakers: bool = True) -> str:
    return repr((share, neighbours, matched, framed, after)) + (
        "" if speakers else " no speakers")


def _server(url: str) -> str:
    """The PostgreSQL server's version (for the report)."""
    import psycopg

    with psycopg.connect(url) as conn:
        return str(conn.execute("SHOW server_version").fetchone()[0]).split()[0]  # type: ignore[index]


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%" if n else "–"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--tokenizer", default="o200k")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="two conversations, B = 4,000, a two-point grid")
    parser.add_argument("--extend", action="store_true",
                        help="ExtractiveSummarizer(extend=True): the summary is extended")
    parser.add_argument("--store", choices=("memory", "postgres"), default="memory",
                        help="the store replayed into (postgres: each replay in a schema "
                             "of its own in the --pg database)")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    pg = args.pg if args.store == "postgres" else None
    if not args.data.exists():
        print(f"data set not found: {args.data}", file=sys.stderr)
        return 2
    budgets = [4000] if args.quick else [int(b) for b in args.budgets.split(",")]
    grid = QUICK_GRID if args.quick else GRID
    convs = load(args.data)
    if args.quick:
        convs = convs[:2]
    n = len(convs)
    counter = get_counter(args.tokenizer)
    default = Recall()
    query_configs = tuple(
        (nb, mm, fr, af, True) for nb, mm, fr, af in itertools.product(
            grid["neighbours"], grid["min_matched"], grid["framed"], grid["frame_after"])
        if fr or af == min(grid["frame_after"]))
    shipped = (default.neighbours, default.min_matched, default.framed, default.frame_after)
    default_configs = ((*shipped, True), (*shipped, False))
    tasks: list[Task] = []
    for c in range(n):
        for b in budgets:
            tasks.append(Task(c, b, 0.0, ()))
            for share in grid["share"]:
                tasks.append(Task(c, b, share, query_configs))
            tasks.append(Task(c, b, default.share, default_configs))
            tasks.append(Task(c, b, default.share, default_configs[:1], stub=True))
    t0 = time.perf_counter()
    results: dict[tuple[int, int, float, bool], dict[str, list[int]]] = {}
    with ProcessPoolExecutor(args.jobs, initializer=_init,
                             initargs=(str(args.data), args.tokenizer, args.extend, pg)) as pool:
        for task, res in zip(tasks, pool.map(run_task, tasks), strict=True):
            key = (task.conv, task.budget, task.share, task.stub)
            results.setdefault(key, {}).update(res)
            print(f"  {convs[task.conv].sample_id} B={task.budget} share={task.share}"
                  f"{' stub' if task.stub else ''}: {len(res)} config(s)", flush=True)
    elapsed = time.perf_counter() - t0

    configs = [_key(s, *cfg[:4]) for s in grid["share"] for cfg in query_configs]
    default_key = _key(default.share, *shipped)

    def flags(c: int, b: int, config: str) -> list[int]:
        share = float(config.strip("()").split(",")[0])
        return results[(c, b, share, False)][config]

    def share_of(c: int, b: int, config: str) -> float:
        f = flags(c, b, config)
        return 100 * sum(f) / len(f) if f else 0.0

    def objective(config: str, train: Sequence[int]) -> float:
        return statistics.fmean(share_of(c, b, config) for c in train for b in budgets)

    def choose(among: Sequence[str]) -> dict[str, str]:
        """Per held-out conversation (and ``"all"``): the best of ``among`` on the others."""
        out: dict[str, str] = {}
        for held in [*range(n), -1]:
            train = [c for c in range(n) if c != held]
            out["all" if held < 0 else convs[held].sample_id] = max(
                among, key=lambda cfg: (objective(cfg, train), cfg == default_key))
        return out

    chosen = choose(configs)
    # the query options alone, the share held at the shipped one (see the module doc)
    fixed = choose([cfg for cfg in configs
                    if float(cfg.strip("()").split(",")[0]) == default.share])

    def pooled(select: Any) -> list[tuple[int, int]]:
        out = []
        for b in budgets:
            kept = total = 0
            for c in range(n):
                f = select(c, b)
                kept += sum(f)
                total += len(f)
            out.append((kept, total))
        return out

    def mean_of(select: Any) -> list[float]:
        return [statistics.fmean(100 * sum(select(c, b)) / max(1, len(select(c, b)))
                                 for c in range(n)) for b in budgets]

    head = "| | " + " | ".join(f"B = {b:,}" for b in budgets) + " |"
    sep = "|---|" + "---:|" * len(budgets)
    rows: dict[str, Any] = {
        "plain": lambda c, b: results[(c, b, 0.0, False)]["plain"],
        "recall, held-out (CV)": lambda c, b: flags(c, b, chosen[convs[c].sample_id]),
        f"recall, held-out (CV, share {default.share})": lambda c, b: flags(
            c, b, fixed[convs[c].sample_id]),
        "recall, in-sample": lambda c, b: flags(c, b, chosen["all"]),
        "recall, shipped defaults": lambda c, b: results[(c, b, default.share, False)][
            default_key],
        "recall, defaults without speaker names": lambda c, b: results[
            (c, b, default.share, False)][_key(default.share, *shipped, False)],
        "recall-only (no summary)": lambda c, b: results[(c, b, default.share, True)][
            default_key],
    }
    subsets: dict[str, list[list[bool]]] = {
        "low-overlap": [[low_overlap(conv, i) for i in present(conv)] for conv in convs],
        **{f"category {k}": [[conv.categories[i] == k for i in present(conv)]
                             for conv in convs] for k in (1, 2, 3, 4)},
    }

    def subset_table(mask: list[list[bool]]) -> list[str]:
        out = []
        for name, sel in rows.items():
            if name == "recall, in-sample":
                continue
            cells = []
            for b in budgets:
                picked = [f for c in range(n) for f, m in zip(sel(c, b), mask[c], strict=True)
                          if m]
                cells.append(_pct(sum(picked), len(picked)))
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        return out

    sub_lines: list[str] = []
    for label, mask in subsets.items():
        size = sum(sum(m) for m in mask)
        sub_lines += [f"**{label}** ({size} questions):", "", head, sep,
                      *subset_table(mask), ""]
    trunc: list[tuple[int, int]] = []
    for b in budgets:
        kept = total = 0
        for conv in convs:
            text = normalize(truncate(conv, b, counter).context)
            keep = present(conv)
            kept += sum(_kept(conv.answers[i], text) for i in keep)
            total += len(keep)
        trunc.append((kept, total))
    questions = [conv.questions[i] for conv in convs for i in present(conv)]
    gate_open = sum(asks_about_past(q) for q in questions)
    lines = [
        "# Answer presence with recall (LoCoMo dev)",
        "",
        f"Generated by `python benchmarks/retention_recall.py{' --quick' if args.quick else ''}"
        f"{' --extend' if args.extend else ''}"
        f"{' --store postgres' if pg else ''}`{' (PostgreSQL ' + _server(pg) + ')' if pg else ''}"
        f"; tokenizer {counter.name}; {n} conversations, {len(questions)} questions whose "
        f"answer occurs in the conversation; {len(configs)} option sets searched "
        f"({', '.join(f'{k} ∈ {v}' for k, v in grid.items())}); {elapsed:.0f} s on a shared "
        "2-core machine. Each question is the query (`context(query=question)`); every "
        "context was checked to be within B. Pooled: answers in the context / answers "
        "present, over all questions.",
        "",
        head,
        sep,
        "| truncation | " + " | ".join(_pct(k, t) for k, t in trunc) + " |",
        *(f"| {name} | " + " | ".join(_pct(k, t) for k, t in pooled(sel)) + " |"
          for name, sel in rows.items()),
        "",
        "Mean of per-conversation shares (held-out = each conversation scored with the "
        "options chosen on the other four):",
        "",
        head,
        sep,
        *(f"| {name} | " + " | ".join(f"{x:.1f}%" for x in mean_of(sel)) + " |"
          for name, sel in rows.items()),
        "",
        *sub_lines,
        "Options chosen (share, neighbours, min_matched, framed, frame_after): in-sample "
        f"`{chosen['all']}`; per held-out conversation: "
        + ", ".join(f"{convs[c].sample_id} `{chosen[convs[c].sample_id]}`" for c in range(n))
        + f". With the share held at {default.share}: "
        + ", ".join(f"{convs[c].sample_id} `{fixed[convs[c].sample_id]}`" for c in range(n))
        + f". Shipped defaults: `{asdict(default)}`.",
        "",
        f"The gate (`asks_about_past`, used for the implicit query) opens for "
        f"{gate_open}/{len(questions)} of these questions.",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_write:
        out = RESULTS.with_name("retention_recall_extend.md") if args.extend else RESULTS
        out = out.with_name(out.stem + "_postgres.md") if pg else out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
