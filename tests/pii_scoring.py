"""Scoring a redactor on a labelled corpus: exact spans, per (locale, type).

Shared by the tests and ``benchmarks/bench_redaction.py``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from contextfold.privacy import Redactor

DATA = Path(__file__).parent / "data"
LOCALE_CORPUS = DATA / "pii_locales.jsonl"

Cell = tuple[str, str]  # (locale, type)


def load(path: Path = LOCALE_CORPUS) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def score(redactor: Redactor, rows: Iterable[dict[str, Any]]) -> dict[Cell, tuple[int, int, int]]:
    """(true positives, false positives, false negatives) per (locale, type); a finding
    counts only with the exact span and kind of its label."""
    tp: Counter[Cell] = Counter()
    fp: Counter[Cell] = Counter()
    fn: Counter[Cell] = Counter()
    for row in rows:
        text, locale = row["text"], row.get("locale", "en")
        gold = Counter((lb["type"], lb["value"]) for lb in row["labels"])
        found = Counter((f.kind, text[f.start : f.end]) for f in redactor.detect(text))
        for (kind, _), n in (gold & found).items():
            tp[locale, kind] += n
        for (kind, _), n in (found - gold).items():
            fp[locale, kind] += n
        for (kind, _), n in (gold - found).items():
            fn[locale, kind] += n
    cells = sorted(set(tp) | set(fp) | set(fn))
    return {c: (tp[c], fp[c], fn[c]) for c in cells}


def negatives_untouched(redactor: Redactor, rows: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(untouched, total) over the sentences without labels."""
    negatives = [r for r in rows if not r["labels"]]
    clean = sum(1 for r in negatives if not redactor.detect(r["text"]))
    return clean, len(negatives)


def pr(cell: tuple[int, int, int]) -> tuple[float, float]:
    tp, fp, fn = cell
    return (tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0)


def table(scores: dict[Cell, tuple[int, int, int]]) -> str:
    lines = ["| locale | type | labelled | precision | recall |", "|---|---|---:|---:|---:|"]
    for (locale, kind), cell in scores.items():
        p, r = pr(cell)
        lines.append(f"| {locale} | {kind} | {cell[0] + cell[2]} | {p:.3f} | {r:.3f} |")
    return "\n".join(lines)
