"""The adapter benchmark's harness (see ``bench_adapters.py``): the scripted conversation,
the summarizer double, the CPU clock the memory hooks are timed into, and a row (one
framework's loop with one memory piece) and its result."""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextfold import Memory, Message, TokenBudget
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.tokens import REPLY_PRIMING_TOKENS, count_message, get_counter

SUMMARY = " ".join(f"Order A-{1000 + i} shipped to warehouse W{i % 5}." for i in range(25))
SYSTEM = "You are the order desk of a small shop. Use lookup_order for every order question."
COUNTER = get_counter()


def user_text(turn: int) -> str:
    return (f"Turn {turn}: what is the status of order A-{1000 + turn}? It was placed for "
            f"customer {turn % 17} and should ship to warehouse W{turn % 5}.")


def tool_result(order: str) -> str:
    n = int(order.split("-")[1])
    return json.dumps({"order": order, "status": ["packed", "shipped", "delayed"][n % 3],
                       "items": n % 7 + 1, "total_eur": n * 3 % 997 + 0.5})


def answer_text(turn: int) -> str:
    return f"Order A-{1000 + turn} is being handled; I will keep you posted about it."


def turn_of(text: str) -> int:
    return int(re.search(r"Turn (\d+)", text).group(1))  # type: ignore[union-attr]


class FakeSummarizer:
    """contextfold summarizer double: the fixed ~200-token summary, at once."""

    name = "fake-200"
    needs_redaction = False

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(SUMMARY)


class Clock:
    """Accumulates CPU time spent in memory hooks, minus the model calls nested in them,
    and records what the model received: kept as given during the loop, converted and
    counted after it (so the recording costs every row the same, next to nothing)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self.newest_missing = 0  # requests whose newest message was not sent
        self._sent: list[tuple[Any, Callable[[Any], list[Message]]]] = []

    def sent(self, request: Any, convert: Callable[[Any], list[Message]]) -> None:
        self.calls += 1
        self._sent.append((request, convert))

    @property
    def max_tokens(self) -> int:
        return max((REPLY_PRIMING_TOKENS + sum(count_message(COUNTER, m) for m in convert(r))
                    for r, convert in self._sent), default=0)


def timed(clock: Clock, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            clock.seconds += time.process_time() - start
    return run


def atimed(clock: Clock, fn: Callable[..., Any]) -> Callable[..., Any]:
    async def run(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return await fn(*args, **kwargs)
        finally:
            clock.seconds += time.process_time() - start
    return run


def memory_for(store: str, tmp: Path, budget: int, kind: type = Memory) -> Any:
    url = "memory://" if store == "memory" else f"sqlite:///{tmp / f'{kind.__name__}.db'}"
    return kind(url, policy=TokenBudget(budget), summarizer=FakeSummarizer())


@dataclass
class Config:
    """One row: a framework's loop with one memory piece. ``play(turns, tmp, clock)`` runs
    the whole loop in a fresh directory; ``own`` marks the framework's own piece (the
    baseline); ``info`` rows are shown but never a baseline."""

    framework: str
    label: str
    store: str
    play: Callable[[int, Path, Clock], None]
    own: bool = False
    info: bool = False

    @property
    def name(self) -> str:
        return f"{self.framework} / {self.label} / {self.store}"


@dataclass
class Result:
    config: Config
    clock: Clock
    cpu: float
    wall: float

    def per_call(self, seconds: float) -> float:
        return seconds / max(self.clock.calls, 1)


def run_config(config: Config, turns: int, tmp: Path) -> Result:
    work = Path(tempfile.mkdtemp(dir=tmp))
    clock = Clock()
    cpu, wall = time.process_time(), time.perf_counter()
    config.play(turns, work, clock)
    return Result(config, clock, time.process_time() - cpu, time.perf_counter() - wall)
