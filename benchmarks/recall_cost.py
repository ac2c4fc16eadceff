"""What recall adds to ``context()``: p50 latency beyond the plain context, on a session of
100,000 stored messages, SQLite and PostgreSQL.

One session per store: 100,000 synthetic chat messages (sentences over a 3,000-word
vocabulary, so a query's words are selective as in real chats), all but the newest 40
folded (a stub summarizer: the fold's cost is not what is measured). Then, alternating,
``context(sid)`` without recall and ``context(sid, query=q)`` with it, for a list of
questions built from words of folded messages (every query finds hits). Reported: p50 and
p95 of each and the p50 difference — measured in the same run, on the same session.
``--others N``: the database also holds N messages of 10 other sessions (same
vocabulary), as a shared database does. The baseline, in the same run and alternating with
the rest: recall with every match ranked (no term counted broad,
``contextfold.stores.search.BROAD_MESSAGES`` set out of reach). PostgreSQL: the table is
analyzed after loading (what autovacuum does within a minute of a bulk load), since broad
terms are read from its statistics. For the LoCoMo text, the share of questions whose
answer is in the recall context is reported too (the session repeats each turn about 17
times, so a top 40 holds few distinct turns: compare the two columns, not with
``retention_recall.py``).
``--baseline SRC``: also the same recall timed with another source tree of contextfold
(``SRC``: a directory holding the ``contextfold`` package, e.g. an older commit's ``src``
from ``git archive``) — the two alternate in child processes on the same session and
questions (``--rounds`` blocks each), so a change is compared with what it replaces on
the same machine at the same time.
Usage::

    python benchmarks/recall_cost.py [--messages 100000] [--runs 200] [--others 0]
        [--stores sqlite,postgres] [--pg URL] [--quick] [--no-write]
        [--baseline SRC] [--rounds 4]

``--quick``: 10,000 messages, 60 runs. Writes ``benchmarks/results/recall_cost.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retention_data import ROOT, context_text, default_data, load, normalize, publish

from contextfold import Memory, Message, TokenBudget
from contextfold.recall import Recall
from contextfold.stores import search
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


def locomo() -> tuple[list[Message], list[str], dict[str, str]]:
    """The LoCoMo dev conversations' messages (speakers, dates), their questions and the
    answer of each question."""
    convs = load(default_data())
    messages = [m for c in convs for m in c.messages]
    questions = [q for c in convs for q in c.questions if q]
    answers = {q: str(a) for c in convs for q, a in zip(c.questions, c.answers, strict=True)
               if q and a}
    return messages, questions, answers


def build(url: str, sid: str, n: int, rng: random.Random, vocab: list[str],
          text: str = "synthetic") -> list[str]:
    """The session, folded but for the newest 40; returns questions about folded turns."""
    if text == "locomo":  # real turns, repeated to n (their word frequencies), real questions
        turns, asked, _ = locomo()
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
    analyze(url)
    if text == "locomo":
        return asked
    texts = [m.text for m in msgs]
    questions = []
    for _ in range(50):
        words = [w for w in rng.choice(texts[: n - 40]).rstrip(".").split() if w.islower()
                 and len(w) > 3]
        questions.append("Do you remember when we talked about " + " ".join(words[:3]) + "?")
    return questions


def analyze(url: str) -> None:
    """PostgreSQL: the statistics autovacuum would gather after a bulk load."""
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE contextfold.messages")


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
    analyze(url)


def measure(url: str, sid: str, questions: list[str], runs: int,
            answers: dict[str, str]) -> dict[str, Any]:
    """Alternating: the plain context, recall with every match ranked (the baseline),
    recall as shipped. Times in ms, contexts with a block, answers in the context."""
    out: dict[str, Any] = {"plain": [], "every": [], "recall": [],
                           "shown": {"every": 0, "recall": 0},
                           "answered": {"every": 0, "recall": 0}}
    broad = search.BROAD_MESSAGES
    with Memory(url, policy=TokenBudget(8000)) as plain, \
            Memory(url, policy=TokenBudget(8000), recall=Recall()) as recall:
        plain.context(sid)
        recall.context(sid, query=questions[0])  # warm: views, statements
        for i in range(runs):
            q = questions[i % len(questions)]
            t0 = time.perf_counter()
            plain.context(sid, max_tokens=8000)
            out["plain"].append((time.perf_counter() - t0) * 1000)
            for name, limit in (("every", 10**12), ("recall", broad)):
                search.BROAD_MESSAGES = limit
                try:
                    t0 = time.perf_counter()
                    ctx = recall.context(sid, max_tokens=8000, query=q)
                    out[name].append((time.perf_counter() - t0) * 1000)
                finally:
                    search.BROAD_MESSAGES = broad
                out["shown"][name] += bool(ctx.recalled)
                if q in answers:
                    text = normalize(context_text(ctx.messages))
                    out["answered"][name] += normalize(answers[q]) in text
    return out


def timed(url: str, sid: str, questions: list[str], start: int, runs: int) -> dict[str, Any]:
    """Alternating: the plain context and recall as shipped, ``runs`` questions from
    ``start`` (what a child process of ``--baseline`` measures). Times in ms: wall clock,
    and this process's CPU time (``cpu_``: SQLite runs in the process, so on a loaded
    machine that is the steadier figure; it leaves out a PostgreSQL server's work)."""
    out: dict[str, Any] = {"plain": [], "recall": [], "cpu_plain": [], "cpu_recall": []}
    with Memory(url, policy=TokenBudget(8000)) as plain, \
            Memory(url, policy=TokenBudget(8000), recall=Recall()) as recall:
        plain.context(sid)
        recall.context(sid, query=questions[0])
        for i in range(start, start + runs):
            q = questions[i % len(questions)]
            for name, call in (("plain", lambda q=q: plain.context(sid, max_tokens=8000)),
                               ("recall", lambda q=q: recall.context(sid, max_tokens=8000,
                                                                     query=q))):
                t0, c0 = time.perf_counter(), time.process_time()
                call()
                out[f"cpu_{name}"].append((time.process_time() - c0) * 1000)
                out[name].append((time.perf_counter() - t0) * 1000)
    return out


def compare(url: str, sid: str, questions: list[str], runs: int, rounds: int,
            baseline: Path) -> dict[str, dict[str, list[float]]]:
    """The questions timed by child processes, the baseline source tree and this one
    alternating, ``rounds`` blocks each (each child warms its own caches alike)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(questions, f)
    here = Path(__file__).resolve().parent.parent / "src"
    got: dict[str, dict[str, list[float]]] = {
        name: {"plain": [], "recall": [], "cpu_plain": [], "cpu_recall": []}
        for name in ("baseline", "change")}
    per = max(1, runs // rounds)
    try:
        for r in range(rounds):
            for name, src in (("baseline", baseline), ("change", here)):
                env = {**os.environ, "PYTHONPATH": str(src)}
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", url, sid, f.name, str(r * per),
                     str(per)], env=env, capture_output=True, text=True, check=True)
                for key, values in json.loads(proc.stdout.splitlines()[-1]).items():
                    got[name][key] += values
    finally:
        os.unlink(f.name)
    return got


def _answered(got: dict[str, Any], name: str, asked: int) -> str:
    return f"{got['answered'][name]}/{asked}" if asked else "–"


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run_one(store: str, url: str, text: str, n: int, others: list[int], runs: int,
            vocab: list[str], baseline: Path | None = None, rounds: int = 4,
            ab_rows: list[str] | None = None) -> list[str]:
    """Table rows of one store and kind of text: the session built, then measured once per
    size of the other sessions."""
    rows = []
    sid = f"recall-cost-{text}-{n}-{int(time.time())}"
    t0 = time.perf_counter()
    questions = build(url, sid, n, random.Random(11), vocab, text)
    answers = locomo()[2] if text == "locomo" else {}
    built = time.perf_counter() - t0
    have = 0
    for i, n_others in enumerate(others):
        t0 = time.perf_counter()
        build_others(url, f"{sid}-{i}", n_others - have, random.Random(13 + i), vocab)
        built += time.perf_counter() - t0
        have = n_others
        got = measure(url, sid, questions, runs, answers)
        plain = statistics.median(got["plain"])
        asked = sum(questions[j % len(questions)] in answers for j in range(runs))

        rows.append(f"| {store} | {text} | {n:,} | {n_others:,} | {plain:.2f} | "
                    f"{pct(got['plain'], 0.95):.2f} | "
                    f"{statistics.median(got['every']) - plain:.2f} | "
                    f"{pct(got['every'], 0.95):.2f} | "
                    f"{statistics.median(got['recall']):.2f} | "
                    f"{pct(got['recall'], 0.95):.2f} | "
                    f"**{statistics.median(got['recall']) - plain:.2f}** | "
                    f"{got['shown']['every']}/{got['shown']['recall']} | "
                    f"{_answered(got, 'every', asked)} / {_answered(got, 'recall', asked)} | "
                    f"{built:.0f} s |")
        print(rows[-1], flush=True)
        if baseline is not None and ab_rows is not None:
            ab = compare(url, sid, questions, runs, rounds, baseline)
            cells = []
            over: dict[str, float] = {}
            for name in ("baseline", "change"):
                got_ = ab[name]
                base = statistics.median(got_["plain"])
                over[name] = statistics.median(got_["recall"]) - base
                over[f"cpu_{name}"] = (statistics.median(got_["cpu_recall"])
                                       - statistics.median(got_["cpu_plain"]))
                cells += [f"{base:.2f}", f"{over[name]:.2f}", f"{pct(got_['recall'], 0.95):.2f}",
                          f"{over[f'cpu_{name}']:.2f}"]
            ab_rows.append(f"| {store} | {text} | {n:,} | {n_others:,} | {' | '.join(cells)} "
                           f"| **{over['change'] / over['baseline']:.2f}** "
                           f"| **{over['cpu_change'] / over['cpu_baseline']:.2f}** |")
            print(ab_rows[-1], flush=True)
    if store != "sqlite":
        with Memory(url) as memory:
            memory.delete(sid)
            for i in range(len(others)):
                for k in range(10):
                    memory.delete(f"{sid}-{i}-other-{k}")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:  # a block of --baseline's comparison, in this source tree
        url, sid, qfile, start, runs = argv[1:6]
        questions = json.loads(Path(qfile).read_text(encoding="utf-8"))
        print(json.dumps(timed(url, sid, questions, int(start), int(runs))))
        return 0
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
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another source tree of contextfold to compare with (its src)")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    if args.quick:
        args.messages, args.runs = 10_000, 60
    others = sorted({int(x) for x in args.others.split(",")})
    rng = random.Random(7)
    vocab = vocabulary(rng)
    rows: list[str] = []
    ab_rows: list[str] = []
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="recall-cost-"))
    for store in args.stores.split(","):
        url = f"sqlite:///{tmp / 'cost.db'}" if store == "sqlite" else args.pg
        for text in args.text.split(","):
            rows += run_one(store, url, text, args.messages, others, args.runs, vocab,
                            args.baseline, args.rounds, ab_rows)
    lines = [
        "# What recall adds to context()",
        "",
        f"Generated by `python benchmarks/recall_cost.py{' --quick' if args.quick else ''}"
        f"{'' if args.stores == 'sqlite,postgres' else ' --stores ' + args.stores}"
        f"{'' if args.text == 'synthetic,locomo' else ' --text ' + args.text}"
        f"{'' if others == [0] else ' --others ' + args.others}"
        f"{'' if args.baseline is None else f' --baseline SRC --rounds {args.rounds}'}`; "
        f"{args.runs} alternating calls per store, budget 8,000, one session of "
        f"{args.messages:,} messages (all but the newest 40 folded). Text: *synthetic* — "
        "sentences over a 3,000-word vocabulary, queried with questions built from words of "
        "folded messages (rare words: few hits); *locomo* — the LoCoMo dev turns repeated "
        "to the session's size (speakers, dates, their word frequencies: names and common "
        "words in thousands of messages), queried with the dev questions. Other sessions' "
        "messages: 10 other sessions in the same database (synthetic, folded) when the row "
        "was measured. *Every match ranked*: the baseline, recall with no term counted "
        "broad (ranking every message that matches the query), alternating with the "
        "others in the same run. PostgreSQL: the table analyzed after loading. Times in "
        "ms, measured on a shared 2-core machine under load (load average "
        f"{load_before[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end): "
        "compare the columns of one row.",
        "",
        "| store | text | messages | other sessions' messages | plain p50 | plain p95 "
        "| every match ranked: p50 overhead | every match ranked: p95 | recall p50 "
        "| recall p95 | p50 overhead | contexts with a block (every / shipped) "
        "| answers in the context (every / shipped) | build |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    if ab_rows:
        lines += [
            f"Against a baseline source tree (`--baseline`, {args.rounds} alternating blocks "
            f"of child processes per tree, {args.runs} questions each; ms):",
            "",
            "| store | text | messages | other sessions' messages | baseline: plain p50 "
            "| baseline: p50 overhead | baseline: recall p95 | baseline: CPU p50 overhead "
            "| change: plain p50 | change: p50 overhead | change: recall p95 "
            "| change: CPU p50 overhead | overhead change / baseline "
            "| CPU overhead change / baseline |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *ab_rows,
            "",
        ]
    publish(lines, RESULTS, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
