"""What recall adds to ``context()``: p50 latency beyond the plain context, on a session of
100,000 stored messages, SQLite and PostgreSQL.

One session per store: 100,000 synthetic chat messages (sentences over a 3,000-word
vocabulary, so a query's words are selective as in real chats), all but the newest 40
folded (a stub summarizer: the fold's cost is not what is measured). Then, alternating,
``context(sid)`` without recall and ``context(sid, query=q)`` with it, for a list of
questions built from words of folded messages (every query finds hits). Reported: p50 and
p95 of each and the p50 difference — measured in the same run, on the same session.
``--others N``: the database also holds N messages of 10 other sessions (same
vocabulary), as a shared database does.
Usage::

    python benchmarks/recall_cost.py [--messages 100000] [--runs 200] [--others 0]
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

from retention_data import ROOT, default_data, load

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


def locomo() -> tuple[list[Message], list[str]]:
    """The LoCoMo dev conversations' messages (speakers, dates) and their questions."""
    convs = load(default_data())
    messages = [m for c in convs for m in c.messages]
    questions = [q for c in convs for q in c.questions if q]
    return messages, questions


def build(url: str, sid: str, n: int, rng: random.Random, vocab: list[str],
          text: str = "synthetic") -> list[str]:
    """The session, folded but for the newest 40; returns questions about folded turns."""
    if text == "locomo":  # real turns, repeated to n (their word frequencies), real questions
        turns, asked = locomo()
        msgs = [turns[i % len(turns)] for i in range(n)]
    else:
        msgs = [Message(role="user" if i % 2 == 0 else "assistant",
                        content=sentence(rng, vocab)) for i in range(n)]
    with Memory(url, policy=TokenBudget(10**9), fold="manual", summarizer=StubSummarizer(),
                fold_lease_seconds=0) as memory:
        batch = 500
        for i in range(0, n - 40, batch):
            memory.add(sid, *msgs[i:min(i + batch, n - 40)])
        memory.fold(sid, force=True)
        memory.add(sid, *msgs[n - 40:])
    if text == "locomo":
        return asked
    texts = [m.text for m in msgs]
    questions = []
    for _ in range(50):
        words = [w for w in rng.choice(texts[: n - 40]).rstrip(".").split() if w.islower()
                 and len(w) > 3]
        questions.append("Do you remember when we talked about " + " ".join(words[:3]) + "?")
    return questions


def build_others(url: str, prefix: str, n: int, rng: random.Random, vocab: list[str]) -> None:
    """``n`` more messages over 10 other sessions, same vocabulary, all but 40 folded: the
    rest of a shared database, whose postings a search of one session must not read."""
    if n <= 0:
        return
    with Memory(url, policy=TokenBudget(10**9), fold="manual", summarizer=StubSummarizer(),
                fold_lease_seconds=0) as memory:
        for k in range(10):
            sid = f"{prefix}-other-{k}"
            for i in range(0, n // 10, 500):
                memory.add(sid, *(Message(role="user" if j % 2 == 0 else "assistant",
                                          content=sentence(rng, vocab))
                                  for j in range(min(500, n // 10 - i))))
            memory.fold(sid, force=True)


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


def run_one(store: str, url: str, text: str, n: int, others: list[int], runs: int,
            vocab: list[str]) -> list[str]:
    """Table rows of one store and kind of text: the session built, then measured once per
    size of the other sessions."""
    rows = []
    sid = f"recall-cost-{text}-{n}-{int(time.time())}"
    t0 = time.perf_counter()
    questions = build(url, sid, n, random.Random(11), vocab, text)
    built = time.perf_counter() - t0
    have = 0
    for i, n_others in enumerate(others):
        t0 = time.perf_counter()
        build_others(url, f"{sid}-{i}", n_others - have, random.Random(13 + i), vocab)
        built += time.perf_counter() - t0
        have = n_others
        plain, recalled, shown = measure(url, sid, questions, runs)
        over = statistics.median(recalled) - statistics.median(plain)
        rows.append(f"| {store} | {text} | {n:,} | {n_others:,} | "
                    f"{statistics.median(plain):.2f} | "
                    f"{pct(plain, 0.95):.2f} | {statistics.median(recalled):.2f} | "
                    f"{pct(recalled, 0.95):.2f} | **{over:.2f}** | {shown}/{runs} | "
                    f"{built:.0f} s |")
        print(rows[-1], flush=True)
    if store != "sqlite":
        with Memory(url) as memory:
            memory.delete(sid)
            for i in range(len(others)):
                for k in range(10):
                    memory.delete(f"{sid}-{i}-other-{k}")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--pg", default=PG_DEFAULT)
    parser.add_argument("--others", default="0",
                        help="comma-separated: measure again after other sessions of the "
                             "same database hold this many messages (e.g. 0,300000)")
    parser.add_argument("--text", default="synthetic,locomo",
                        help="comma-separated: synthetic sentences; locomo: the LoCoMo dev "
                             "turns repeated to the session's size, queried with the dev "
                             "questions")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.runs = 10_000, 60
    others = sorted({int(x) for x in args.others.split(",")})
    rng = random.Random(7)
    vocab = vocabulary(rng)
    rows: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="recall-cost-"))
    for store in args.stores.split(","):
        url = f"sqlite:///{tmp / 'cost.db'}" if store == "sqlite" else args.pg
        for text in args.text.split(","):
            rows += run_one(store, url, text, args.messages, others, args.runs, vocab)
    lines = [
        "# What recall adds to context()",
        "",
        f"Generated by `python benchmarks/recall_cost.py{' --quick' if args.quick else ''}"
        f"{'' if others == [0] else ' --others ' + args.others}`; "
        f"{args.runs} alternating calls per store, budget 8,000, one session of "
        f"{args.messages:,} messages (all but the newest 40 folded). Text: *synthetic* — "
        "sentences over a 3,000-word vocabulary, queried with questions built from words of "
        "folded messages (rare words: few hits); *locomo* — the LoCoMo dev turns repeated "
        "to the session's size (speakers, dates, their word frequencies: names and common "
        "words in thousands of messages), queried with the dev questions. Other sessions' "
        "messages: 10 other sessions in the same database (synthetic, folded) when the row "
        "was measured. Times in ms, measured "
        "on a shared 2-core machine under load: compare the columns of one row.",
        "",
        "| store | text | messages | other sessions' messages | plain p50 | plain p95 | recall p50 "
        "| recall p95 | p50 overhead | contexts with a block | build |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
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
