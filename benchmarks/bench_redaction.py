"""Redaction throughput in MB/s (UTF-8 bytes of input per second of wall time).

Three inputs of ~1 MB each, built from a fixed seed:

* ``clean``: chat prose with numbers, dates, times and versions but no personal data (the
  common case: every candidate is proposed and rejected);
* ``typical``: the same prose with one corpus sentence holding personal data every ~10
  sentences;
* ``dense``: only the labelled corpus's PII-bearing sentences.

Each is redacted in chat-message-sized pieces (~400 characters) and as one document, with
the default ``Redactor()``, with a session scope, and with libphonenumber regions when the
``phonenumbers`` extra is installed. Best of ``--repeat`` runs.

Usage: python benchmarks/bench_redaction.py [--quick] [--repeat N]
Writes benchmarks/results/redaction.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import random
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from contextfold.privacy import Redactor

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
CORPUS = ROOT / "tests" / "data" / "pii_corpus.jsonl"
PROSE = [
    "The quarterly review moved to Tuesday at 10:30, room 4.12.",
    "We shipped version 2.14.1 and the error rate dropped by 37 percent.",
    "Can you summarise the thread about the Lisbon offsite for me?",
    "Order 20240315-0042 arrived on 2024-03-18, two days late.",
    "The deploy failed at 14:22:07 because the disk on build-7 was full.",
    "I'd like the vegetarian option and a window seat if possible.",
    "The budget is 12,500 EUR for Q3, with 2,000 held back for travel.",
    "Remind me to call the plumber after the 3pm standup.",
    "Chapter 12 covers retries, backoff and idempotency keys.",
    "The model answered in 1.8 seconds with 412 output tokens.",
]


def build_inputs(size: int, seed: int = 11) -> dict[str, str]:
    rng = random.Random(seed)
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    pii = [r["text"] for r in rows if r["labels"]]

    def fill(pick: Callable[[], str]) -> str:
        parts: list[str] = []
        n = 0
        while n < size:
            s = pick()
            parts.append(s)
            n += len(s) + 1
        return " ".join(parts)

    return {
        "clean": fill(lambda: rng.choice(PROSE)),
        "typical": fill(lambda: rng.choice(pii) if rng.random() < 0.1 else rng.choice(PROSE)),
        "dense": fill(lambda: rng.choice(pii)),
    }


def chunks(text: str, size: int = 400) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def redact_each(redactor: Redactor, pieces: list[str], scope: str | None) -> None:
    for piece in pieces:
        redactor.redact(piece, scope)


def measure(run: Callable[[], object], nbytes: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~100 KB inputs instead of ~1 MB")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    inputs = build_inputs(100_000 if args.quick else 1_000_000)

    configs: list[tuple[str, Redactor, bool]] = [
        ("Redactor(), per message", Redactor(), False),
        ("Redactor(), scope=session, per message", Redactor(), True),
    ]
    if importlib.util.find_spec("phonenumbers") is not None:
        configs.append(
            (
                "phone_regions=US,GB,DE,FR, per message",
                Redactor(phone_regions=("US", "GB", "DE", "FR")),
                False,
            )
        )
    rows: list[tuple[str, str, float]] = []
    for label, redactor, scoped in configs:
        for name, text in inputs.items():
            pieces = chunks(text)
            nbytes = len(text.encode())
            scope = "bench" if scoped else None
            mbps = measure(partial(redact_each, redactor, pieces, scope), nbytes, args.repeat)
            rows.append((label, name, mbps))
    for name, text in inputs.items():
        r = Redactor()
        rows.append(
            (
                "Redactor(), one document",
                name,
                measure(partial(r.redact, text), len(text.encode()), args.repeat),
            )
        )

    names = list(inputs)
    header = "| configuration | " + " | ".join(f"{n} MB/s" for n in names) + " |"
    lines = [header, "|---|" + "---:|" * len(names)]
    for label in dict.fromkeys(r[0] for r in rows):
        vals = {n: v for lab, n, v in rows if lab == label}
        lines.append(f"| {label} | " + " | ".join(f"{vals[n]:.2f}" for n in names) + " |")
    sizes = ", ".join(f"{n} {len(t.encode()) / 1e6:.2f} MB" for n, t in inputs.items())
    report = "\n".join(
        [
            "# Redaction throughput",
            "",
            f"Inputs: {sizes}; messages of 400 characters; best of {args.repeat}.",
            f"Python {platform.python_version()} on {platform.machine()} ({platform.system()}).",
            "",
            *lines,
            "",
            "Produced by `python benchmarks/bench_redaction.py`.",
            "",
        ]
    )
    print(report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "redaction.md").write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
