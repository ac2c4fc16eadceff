"""Leave-one-conversation-out cross-validation of the extractive summarizer's weights.

Every weight in :class:`~contextfold.summarizers.weights.Weights` that LoCoMo can inform
has a small set of candidate values (the design value and one either side, ``FULL_GRID``);
by default the nine that move retention most are searched (``GRID``) and the other five
keep their design values (``--grid full`` searches all fourteen; on the shared 2-core
machine that did not fit in the session). A *selection*
starts at the design values (``DESIGN_WEIGHTS``) and does coordinate ascent: for each
weight in turn, the candidate with the best mean retention over its training conversations
(mean over conversations and budgets) is kept; ties keep the current value. Six selections
run in lock-step: one per held-out conversation (trained on the other four) and one on all
five (the in-sample choice, which is what contextfold ships). A conversation's held-out
retention is what its own selection's weights keep on it.

Every (weights, conversation, budget) replay is run once, in a small process pool, and
cached on disk keyed by a hash of the summarizer's source, so a re-run with unchanged code
costs nothing. The burst weights are not selected here: LoCoMo has no bursts.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import tempfile
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from retention_data import Conversation, load, replay, retention

from contextfold.policy import TokenBudget
from contextfold.summarizers.extractive import ExtractiveSummarizer
from contextfold.summarizers.weights import DESIGN_WEIGHTS, Weights
from contextfold.tokens import get_counter

#: Candidate values per weight (the design value is in the middle). ``--grid full``
#: searches every weight; the default searches the nine that move retention most.
FULL_GRID: dict[str, tuple[float, ...]] = {
    "day": (1.5, 3.0, 5.0),
    "cue": (0.25, 0.5, 1.0),
    "max_cues": (2, 3, 5),
    "first_person": (0.0, 0.3, 0.6),
    "question": (0.3, 0.5, 0.8),
    "reaction": (0.3, 0.5, 0.8),
    "generic": (0.4, 0.6, 0.8),
    "fact_cost": (1, 3, 6),
    "min_gain": (0.1, 0.25, 0.5),
    "rarity": (0.5, 1.0, 1.5),
    "entity": (1.5, 2.0, 3.0),
    "place": (2.0, 2.5, 3.5),
    "number": (1.5, 2.0, 3.0),
    "time": (1.0, 1.5, 2.5),
}
_MAIN = ("day", "cue", "generic", "question", "reaction", "fact_cost", "min_gain",
         "rarity", "entity")
GRID: dict[str, tuple[float, ...]] = {k: FULL_GRID[k] for k in _MAIN}
# The summarizer's behaviour for explicit weights (weights.py only holds the defaults,
# and every cached run names its weights).

_convs: list[Conversation] = []
_tokenizer = "o200k"


def code_hash() -> str:
    """Hash of the summarizers package's source, every module of it (the cache is valid
    only for the same code; the agent records are part of the extractive summarizer)."""
    import contextfold.summarizers.extractive as pkg

    base = Path(pkg.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(base.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _key(weights: Weights, conv: int, budget: int) -> str:
    return json.dumps([asdict(weights), conv, budget], sort_keys=True)


def _init(data: str, tokenizer: str) -> None:
    global _convs, _tokenizer
    _convs = load(Path(data))
    _tokenizer = tokenizer


def _run(task: tuple[dict[str, Any], int, int]) -> tuple[int, int, list[float]]:
    params, conv, budget = task
    summarizer = ExtractiveSummarizer(weights=Weights(**params))
    run = replay(_convs[conv], TokenBudget(budget), summarizer, get_counter(_tokenizer))
    if run.tokens > budget:
        raise AssertionError(f"context of {run.tokens} tokens over the budget {budget}")
    kept, present = retention(_convs[conv], run)
    return kept, present, run.fold_seconds


@dataclass
class CVResult:
    budgets: list[int]
    conversations: list[str]
    chosen: dict[str, Weights]  # "all" and each held-out sample id
    in_sample: list[list[float]]  # [conv][budget] retention % with the "all" weights
    held_out: list[list[float]]  # [conv][budget] retention % with that fold's weights
    pooled_in: list[float]
    pooled_out: list[float]
    fold_ms: list[float] = field(default_factory=list)
    configs: int = 0


class Evaluator:
    """Runs and caches replays."""

    def __init__(self, data: Path, budgets: Sequence[int], jobs: int, tokenizer: str,
                 cache: Path | None = None) -> None:
        self.data = data
        self.convs = load(data)
        self.budgets = list(budgets)
        self.jobs = jobs
        self.tokenizer = tokenizer
        self.cache_path = cache or Path(tempfile.gettempdir()) / (
            f"contextfold-retention-cv-{code_hash()}.json")
        self.cache: dict[str, list[Any]] = {}
        if self.cache_path.exists():
            self.cache = json.loads(self.cache_path.read_text(encoding="utf-8"))

    def ensure(self, configs: Sequence[Weights]) -> None:
        tasks = [
            (w, c, b)
            for w in configs
            for c in range(len(self.convs))
            for b in self.budgets
            if _key(w, c, b) not in self.cache
        ]
        if not tasks:
            return
        with ProcessPoolExecutor(self.jobs, initializer=_init,
                                 initargs=(str(self.data), self.tokenizer)) as pool:
            results = pool.map(_run, [(asdict(w), c, b) for w, c, b in tasks], chunksize=1)
            for (w, c, b), (kept, present, seconds) in zip(tasks, results, strict=True):
                self.cache[_key(w, c, b)] = [kept, present, seconds]
        self.cache_path.write_text(json.dumps(self.cache), encoding="utf-8")

    def share(self, weights: Weights, conv: int, budget: int) -> float:
        kept, present, _ = self.cache[_key(weights, conv, budget)]
        return 100.0 * kept / present if present else 0.0

    def objective(self, weights: Weights, convs: Sequence[int]) -> float:
        return statistics.fmean(self.share(weights, c, b) for c in convs for b in self.budgets)


def cross_validate(ev: Evaluator, passes: int = 1, log: Any = print,
                   grid: dict[str, tuple[float, ...]] | None = None) -> CVResult:
    n = len(ev.convs)
    names = [c.sample_id for c in ev.convs]
    training: dict[str, list[int]] = {"all": list(range(n))}
    for i, name in enumerate(names):
        training[name] = [j for j in range(n) if j != i]
    current = dict.fromkeys(training, DESIGN_WEIGHTS)
    ev.ensure([DESIGN_WEIGHTS])
    for p in range(passes):
        for param, values in (grid or GRID).items():
            candidates = {
                sel: [w.with_(**{param: type(getattr(w, param))(v)}) for v in values]
                for sel, w in current.items()
            }
            ev.ensure(sorted({w for ws in candidates.values() for w in ws}, key=repr))
            for sel, ws in candidates.items():
                train = training[sel]
                best = current[sel]
                best_score = ev.objective(best, train)
                for w in ws:
                    score = ev.objective(w, train)
                    if score > best_score + 1e-9:
                        best, best_score = w, score
                current[sel] = best
            log(f"  pass {p + 1}, {param}: all→{getattr(current['all'], param)}; folds→"
                + ", ".join(str(getattr(current[s], param)) for s in names))
    in_sample = [[ev.share(current["all"], c, b) for b in ev.budgets] for c in range(n)]
    held_out = [[ev.share(current[names[c]], c, b) for b in ev.budgets] for c in range(n)]

    def pooled(select: Any) -> list[float]:
        out = []
        for b in ev.budgets:
            kept = present = 0
            for c in range(n):
                k, pr, _ = ev.cache[_key(select(c), c, b)]
                kept += k
                present += pr
            out.append(100.0 * kept / present)
        return out

    fold_ms = [
        s * 1000
        for c in range(n)
        for b in ev.budgets
        for s in ev.cache[_key(current["all"], c, b)][2]
    ]
    configs = len({json.dumps(json.loads(k)[0], sort_keys=True) for k in ev.cache})
    return CVResult(
        ev.budgets, names, current, in_sample, held_out,
        pooled(lambda c: current["all"]), pooled(lambda c: current[names[c]]),
        fold_ms, configs,
    )
