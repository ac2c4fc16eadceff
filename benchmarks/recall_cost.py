"""What recall adds to ``context()``: p50 latency beyond the plain context, on a session of
100,000 stored messages, SQLite and PostgreSQL.

One session per store: 100,000 synthetic chat messages (sentences over a 3,000-word
vocabulary, so a query's words are selective as in real chats), all but the newest 40
folded (a stub summarizer: the fold's cost is not what is measured). Then, alternating,
``context(sid)`` without recall and ``context(sid, query=q)`` with it, for a list of
questions built from words of folded messages (every query finds hits). Reported: p50 and
p95 of each and the p50 difference — measured in the same run, on the same session.
Usage::

    python benchmarks/recall_cost.py [--messages 100000] [--runs 200]
        [--stores sqlite,postgres] [--pg URL] [--quick] [--no-write]

``--quick``: 10,000 messages, 60 runs. Writes ``benchmarks/results/recall_cost.md``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retention_data import ROOT

from contextfold import Memory, Message, TokenBudget
from contextfold.recall import Recall
from contextfold.summarizers.base import SummaryRequest, SummaryResult

RESULTS = ROOT / "benchmarks" / "results" / "recall_cost.md"
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"


class StubSummarizer:
    name = "stub"
    runs_inline = True
    needs_redaction = False

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult("Earlier: a long chat about many things.")


def vocabulary(rng: random.Random, n: int = 3000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(n)}
    return sorted(words)


def sentence(rng: random.Random, vocab: list[str]) -> str:
    common = ["I", "we", "the", "a", "was", "and", "to", "it", "that", "really"]
    words = [rng.choice(vocab) if rng.random() < 0.45 else rng.choice(common)
             for _ in range(rng.randint(8, 24))]
    return " ".join(words).capitalize() + "."


def build(url: str, sid: str, n: int, rng: random.Random, vocab: list[str]) -> list[str]:
    """The session, folded but for the newest 40; returns questions about folded turns."""
    texts = [sentence(rng, vocab) for _ in range(n)]
    with Memory(url, policy=TokenBudget(10**9), fold="manual", summarizer=StubSummarizer(),
                fold_lease_seconds=0) as memory:
        batch = 500
        for i in range(0, n - 40, batch):
            memory.add(sid, *(Message(role="user" if (i + j) % 2 == 0 else "assistant",
                                      content=t)
                              for j, t in enumerate(texts[i:min(i + batch, n - 40)])))
        memory.fold(sid, force=True)
        memory.add(sid, *(Message(role="user" if j % 2 == 0 else "assistant", content=t)
                          for j, t in enumerate(texts[n - 40:])))
    questions = []
    for _ in range(50):
        words = [w for w in rng.choice(texts[: n - 40]).rstrip(".").split() if w.islower()
                 and len(w) > 3]
        questions.append("Do you remember when we talked about " + " ".join(words[:3]) + "?")
    return questions


def measure(url: str, sid: str, questions: list[str], runs: int
            ) -> tuple[list[float], list[float], int]:
    plain_ms: list[float] = []
    recall_ms: list[float] = []
    shown = 0
    with Memory(url, policy=TokenBudget(8000)) as plain, \
            Memory(url, policy=TokenBudget(8000), recall=Recall()) as recall:
        plain.context(sid)
        recall.context(sid, query=questions[0])  # warm: views, statements
        for i in range(runs):
            q = questions[i % len(questions)]
            t0 = time.perf_counter()
            plain.context(sid, max_tokens=8000)
            t1 = time.perf_counter()
            ctx = recall.context(sid, max_tokens=8000, query=q)
            t2 = time.perf_counter()
            plain_ms.append((t1 - t0) * 1000)
            recall_ms.append((t2 - t1) * 1000)
            shown += bool(ctx.recalled)
    return plain_ms, recall_ms, shown


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--pg", default=PG_DEFAULT)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.runs = 10_000, 60
    rng = random.Random(7)
    vocab = vocabulary(rng)
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="recall-cost-"))
    for store in args.stores.split(","):
        url = f"sqlite:///{tmp / 'cost.db'}" if store == "sqlite" else args.pg
        sid = f"recall-cost-{args.messages}-{int(time.time())}"
        t0 = time.perf_counter()
        questions = build(url, sid, args.messages, random.Random(11), vocab)
        built = time.perf_counter() - t0
        plain, recalled, shown = measure(url, sid, questions, args.runs)
        if store != "sqlite":
            with Memory(url) as memory:
                memory.delete(sid)
        over = statistics.median(recalled) - statistics.median(plain)
        rows.append(f"| {store} | {args.messages:,} | {statistics.median(plain):.2f} | "
                    f"{pct(plain, 0.95):.2f} | {statistics.median(recalled):.2f} | "
                    f"{pct(recalled, 0.95):.2f} | **{over:.2f}** | {shown}/{args.runs} | "
                    f"{built:.0f} s |")
        print(rows[-1], flush=True)
    lines = [
        "# What recall adds to context()",
        "",
        f"Generated by `python benchmarks/recall_cost.py{' --quick' if args.quick else ''}`; "
        f"{args.runs} alternating calls per store, budget 8,000, one session of "
        f"{args.messages:,} messages (all but the newest 40 folded). Times in ms, measured "
        "on a shared 2-core machine under load: compare the columns of one row.",
        "",
        "| store | messages | plain p50 | plain p95 | recall p50 | recall p95 | "
        "p50 overhead | contexts with a block | build |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
