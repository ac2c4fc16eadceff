"""contextfold beside its peers: LangChain 1.x ``SummarizationMiddleware``, langmem's
``summarize_messages`` and LlamaIndex's ``ChatSummaryMemoryBuffer``.

Same LoCoMo turns for everyone (the five dev conversations of
``../shared/data/locomo/locomo_dev.json`` beside the checkout, read at run time, played
back to back and
cycled to ~180,000 tokens so that even the 100,000-token budget folds), same fake
summarizer (it answers 200 tokens, instantly), same ``chars/4`` token counter. Per budget
(2,000 / 4,000 / 8,000 / 32,000 / 100,000) and per system it prints: summarizer calls,
summarizer input ÷ folded tokens, max and mean context ÷ budget (over every turn), and
CPU µs per turn (append one message + get the context the model would receive), taken
with ``time.process_time`` — the whole process's CPU, so work a front does on another
thread counts too — because wall time on a shared machine mostly measures the others.

The peers are installed in a benchmark-only virtualenv, never as a dependency of the
package. ``python benchmarks/bench_peers.py`` creates ``benchmarks/.venv-peers`` on first
use (``pip install "langchain>=1.0" langmem llama-index-core -e .``) and re-runs itself
there. Options: ``--quick`` (fewer turns, for a smoke run), ``--budgets 2000,4000``,
``--data PATH``, ``--no-write``, ``--skip lm,li`` (systems left out: their rows of the
previous report are kept, marked as such), ``--repeat N`` (every system runs N times per
budget, in turn with the others and the other budgets, and its fastest run is reported:
on a shared machine the load moves, and the other columns are the same in every run; a
run longer than 20 s is not repeated). Writes ``benchmarks/results/peers.md``.

Definitions (the same for every system):
- context size: Σ over the context's messages of ceil(len(text) / 4) + 3;
- folded tokens: ceil(len/4) of every original message that has left the verbatim
  window (it is no longer in the context word for word);
- summarizer input: ceil(len/4) of everything the fake summarizer received: for the
  peers their whole prompt (instructions + previous summary + messages); for contextfold
  what its ``Summarizer`` receives (previous summary + the folded messages) — its
  ``LLMSummarizer`` would add its own prompt template to that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "benchmarks" / ".venv-peers"
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
RESULTS = ROOT / "benchmarks" / "results" / "peers.md"
PEERS = ['langchain>=1.0', "langmem", "llama-index-core"]
SUMMARY_TOKENS = 200
TARGET_TOKENS = 180_000
BUDGETS = (2_000, 4_000, 8_000, 32_000, 100_000)
SLOW_SECONDS = 20.0  # a system whose run takes longer is not repeated (--repeat)


def ensure_peers() -> None:
    """Re-run this script in the peers' virtualenv (made on first use) if needed."""
    try:
        import langchain  # noqa: F401
        import langmem  # noqa: F401
        import llama_index.core  # noqa: F401
    except ImportError:
        python = VENV / "bin" / "python"
        if Path(sys.prefix).resolve() == VENV.resolve():
            raise
        if not python.exists():
            print(f"creating {VENV} with {', '.join(PEERS)} (benchmark only)", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", *PEERS, "-e", str(ROOT)],
                           check=True)
        os.execv(str(python), [str(python), *sys.argv])


def toks(text: str) -> int:
    return math.ceil(len(text) / 4)


def measure(texts: Iterable[str]) -> int:
    return sum(toks(t) + 3 for t in texts)


FILLER = " ".join(["summary"] * (SUMMARY_TOKENS * 4 // 8))[: SUMMARY_TOKENS * 4]


def load_turns(path: Path, target: int) -> list[tuple[str, str]]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    one: list[tuple[str, str]] = []
    for sample in raw:
        conv = sample["conversation"]
        i = 1
        while f"session_{i}" in conv:
            for turn in conv[f"session_{i}"]:
                role = "user" if turn["speaker"] == conv["speaker_a"] else "assistant"
                one.append((role, f"{turn['speaker']}: {turn['text']}"))
            i += 1
    turns: list[tuple[str, str]] = []
    n = 0
    while sum(toks(t) for _, t in turns) < target:
        turns.extend((r, f"[{n + k}] {t}") for k, (r, t) in enumerate(one))
        n += len(one)
    return turns


# -- bookkeeping shared by every system --------------------------------------------------


@dataclass
class Run:
    system: str
    budget: int
    calls: int = 0
    summarizer_input: int = 0
    seconds: float = 0.0
    sizes: list[int] = field(default_factory=list)
    folded: int = 0
    turns: int = 0

    def ratio(self) -> float:
        return self.summarizer_input / self.folded if self.folded else float("nan")

    def us_per_turn(self) -> float:
        return self.seconds / self.turns * 1e6


class Tracker:
    """Folded tokens: originals that left the verbatim window (each counted once)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.gone = 0  # index of the first original still possibly verbatim
        self.folded = 0

    def add(self, text: str) -> None:
        self.seen.append(text)

    def update(self, context_texts: Sequence[str]) -> None:
        verbatim = set(context_texts)
        while self.gone < len(self.seen) and self.seen[self.gone] not in verbatim:
            self.folded += toks(self.seen[self.gone])
            self.gone += 1


def play(run: Run, turns: list[tuple[str, str]],
         step: Callable[[str, str], Callable[[], list[str]]]) -> Run:
    """Time ``step`` (append one message, get the context the model would receive); the
    texts it returns are read afterwards, untimed, for every system alike."""
    tracker = Tracker()
    for role, text in turns:
        t0 = time.process_time()
        read = step(role, text)
        run.seconds += time.process_time() - t0
        context = read()
        tracker.add(text)
        tracker.update(context)
        run.sizes.append(measure(context))
    run.turns = len(turns)
    run.folded = tracker.folded
    return run


# -- the peers ---------------------------------------------------------------------------


def langchain_chat_model(run: Run) -> Any:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class FakeSummarizer(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "fake-200"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            run.calls += 1
            run.summarizer_input += sum(toks(str(m.content)) for m in messages)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=FILLER))])

    return FakeSummarizer()


def lc_counter(messages: Iterable[Any]) -> int:
    return measure(str(getattr(m, "content", m)) for m in messages)


def run_langchain(turns: list[tuple[str, str]], budget: int) -> Run:
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import AIMessage, HumanMessage

    run = Run("LangChain SummarizationMiddleware", budget)
    mw = SummarizationMiddleware(
        langchain_chat_model(run), trigger=("tokens", budget), keep=("tokens", budget // 2),
        token_counter=lc_counter,
    )
    messages: list[Any] = []

    def step(role: str, text: str) -> Callable[[], list[str]]:
        nonlocal messages
        messages.append(HumanMessage(text) if role == "user" else AIMessage(text))
        update = mw.before_model({"messages": messages}, None)  # type: ignore[arg-type]
        if update is not None:
            messages = list(update["messages"][1:])  # drop RemoveMessage(ALL)
        shown = messages  # read right after this step, before the next append
        return lambda: [str(m.content) for m in shown]

    return play(run, turns, step)


def run_langmem(turns: list[tuple[str, str]], budget: int) -> Run:
    from langchain_core.messages import AIMessage, HumanMessage
    from langmem.short_term import summarize_messages

    run = Run("langmem summarize_messages", budget)
    model = langchain_chat_model(run)
    messages: list[Any] = []
    summary = None

    def step(role: str, text: str) -> Callable[[], list[str]]:
        nonlocal summary
        mid = f"m{len(messages)}"
        messages.append(HumanMessage(text, id=mid) if role == "user" else AIMessage(text, id=mid))
        result = summarize_messages(
            messages, running_summary=summary, model=model, max_tokens=budget,
            max_tokens_before_summary=budget, max_summary_tokens=SUMMARY_TOKENS + 56,
            token_counter=lc_counter,
        )
        summary = result.running_summary
        return lambda: [str(m.content) for m in result.messages]

    return play(run, turns, step)


def run_llamaindex(turns: list[tuple[str, str]], budget: int) -> Run:
    from llama_index.core.base.llms.types import (
        ChatMessage,
        CompletionResponse,
        LLMMetadata,
        MessageRole,
    )
    from llama_index.core.llms.custom import CustomLLM
    from llama_index.core.memory import ChatSummaryMemoryBuffer

    run = Run("LlamaIndex ChatSummaryMemoryBuffer", budget)

    class FakeSummarizer(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="fake-200")

        def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
            run.calls += 1
            run.summarizer_input += toks(prompt)
            return CompletionResponse(text=FILLER)

        def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:
            raise NotImplementedError

    memory = ChatSummaryMemoryBuffer.from_defaults(
        llm=FakeSummarizer(), token_limit=budget, tokenizer_fn=lambda s: [0] * toks(s)
    )

    def step(role: str, text: str) -> Callable[[], list[str]]:
        memory.put(ChatMessage(role=MessageRole.USER if role == "user"
                               else MessageRole.ASSISTANT, content=text))
        got = memory.get()
        return lambda: [m.content or "" for m in got]

    return play(run, turns, step)


# -- contextfold ---------------------------------------------------------------------------


def contextfold_summarizer(run: Run) -> Any:
    from contextfold.summarizers.base import SummaryRequest, SummaryResult

    class FakeSummarizer:
        name = "fake-200"
        runs_inline = True  # answers without I/O, like a local model would not; see note

        async def summarize(self, request: SummaryRequest) -> SummaryResult:
            run.calls += 1
            run.summarizer_input += toks(request.previous) + sum(
                toks(m.message.text) for m in request.messages)
            return SummaryResult(text=FILLER, calls=1)

    return FakeSummarizer()


def run_contextfold(turns: list[tuple[str, str]], budget: int, front: str, store: str) -> Run:
    from contextfold import AsyncMemory, Memory, TokenBudget

    run = Run(f"contextfold {front} ({store})", budget)
    tmp = tempfile.mkdtemp(prefix="cf-peers-")
    url = "memory://" if store == "memory" else f"sqlite:///{tmp}/peers.db"
    options: dict[str, Any] = {"policy": TokenBudget(budget), "tokenizer": "approx",
                               "summarizer": contextfold_summarizer(run)}
    if front == "Memory":
        memory = Memory(url, **options)

        def step(role: str, text: str) -> Callable[[], list[str]]:
            memory.add("s", {"role": role, "content": text})
            ctx = memory.context("s")
            return lambda: [m.text for m in ctx.messages]

        play(run, turns, step)
        memory.close()
        return run

    async def main() -> None:
        amem = AsyncMemory(url, **options)
        tracker = Tracker()
        for role, text in turns:
            t0 = time.process_time()
            await amem.add("s", {"role": role, "content": text})
            ctx = await amem.context("s")
            run.seconds += time.process_time() - t0
            texts = [m.text for m in ctx.messages]
            tracker.add(text)
            tracker.update(texts)
            run.sizes.append(measure(texts))
        run.turns, run.folded = len(turns), tracker.folded
        await amem.close()

    asyncio.run(main())
    return run


# -- report --------------------------------------------------------------------------------


def row(r: Run) -> str:
    steady = r.sizes
    return (f"| {r.system} | {r.calls:,} | {r.ratio():.2f} | {max(r.sizes) / r.budget:.2f} | "
            f"{statistics.fmean(steady) / r.budget:.2f} | {r.us_per_turn():.0f} |")


KEPT = "†"  # marks a row carried over from the previous report (the system was skipped)


def previous_rows(path: Path) -> dict[int, dict[str, str]]:
    """Per budget, system name → table row of the report at ``path`` (its first tables)."""
    out: dict[int, dict[str, str]] = {}
    if not path.exists():
        return out
    budget = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## Budget "):
            budget = int(line.split()[2].replace(",", ""))
        elif line.startswith("## "):
            if out:
                break  # the first run's tables only
            budget = None
        elif budget is not None and line.startswith("| ") and not line.startswith("| system"):
            cells = line.split("|")
            name = cells[1].strip().removesuffix(KEPT).strip()
            cells[1] = f" {name} {KEPT} "
            out.setdefault(budget, {})[name] = "|".join(cells)
    return out


def best_of(runs: list[Run]) -> Run:
    """The fastest of repeated runs (everything but the time is the same in each)."""
    return min(runs, key=lambda r: r.seconds)


def main() -> None:
    ensure_peers()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--quick", action="store_true", help="~40,000 tokens of turns")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--skip", default="", help="e.g. li@100000,lm (system keys: lc lm "
                        "li cf-sync-mem cf-async-mem cf-sync-sqlite; @B: at that budget only)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per system and budget, fastest reported")
    args = parser.parse_args()
    skip = {s for s in args.skip.split(",") if s}
    if not args.data.exists():
        sys.exit(f"data set not found: {args.data}")
    budgets = [int(b) for b in args.budgets.split(",")]
    turns = load_turns(args.data, 40_000 if args.quick else TARGET_TOKENS)
    total = sum(toks(t) for _, t in turns)
    import langchain
    import langmem  # noqa: F401
    import llama_index.core

    systems: list[tuple[str, Callable[[int], Run]]] = [
        ("lc", lambda b: run_langchain(turns, b)),
        ("lm", lambda b: run_langmem(turns, b)),
        ("li", lambda b: run_llamaindex(turns, b)),
        ("cf-sync-mem", lambda b: run_contextfold(turns, b, "Memory", "memory")),
        ("cf-async-mem", lambda b: run_contextfold(turns, b, "AsyncMemory", "memory")),
        ("cf-sync-sqlite", lambda b: run_contextfold(turns, b, "Memory", "SQLite")),
    ]
    lines = [
        "# contextfold beside its peers",
        "",
        f"{len(turns):,} LoCoMo turns ({total:,} tokens by chars/4: the five dev "
        "conversations back to back, cycled), one session; fake summarizer answering "
        f"{SUMMARY_TOKENS} tokens; chars/4 counter for everyone. Generated by "
        "`python benchmarks/bench_peers.py`.",
        "",
        f"Versions: langchain {langchain.__version__}, langmem "
        f"{_version('langmem')}, llama-index-core {llama_index.core.__version__}; "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs. **The machine may be "
        "shared with other jobs (load average {LOAD}): µs/turn is process CPU time "
        "(`time.process_time`, all threads), less sensitive to the load than wall time but "
        "still noisy; compare within a budget, not across runs.**"
        + (f" Each system ran {args.repeat} times per budget, in turn with the others and "
           "the other budgets "
           "(once when a run took over 20 s); the fastest run is reported."
           if args.repeat > 1 else ""),
        "",
        "Configurations: LangChain `SummarizationMiddleware(trigger=('tokens', B), "
        "keep=('tokens', B // 2))` (its default prompt and `trim_tokens_to_summarize`); "
        "langmem `summarize_messages(max_tokens=B, max_tokens_before_summary=B, "
        "max_summary_tokens=256)`; LlamaIndex `ChatSummaryMemoryBuffer(token_limit=B)`; "
        "contextfold `TokenBudget(B)` defaults.",
        "",
        "Summarizer input ÷ folded: the peers' figure includes their prompt template; "
        "contextfold's is previous summary + folded messages (its `LLMSummarizer` "
        "template would add to it).",
        "",
    ]
    kept = previous_rows(RESULTS)
    loads = [os.getloadavg()[0]]
    results: dict[int, list[Run]] = {}
    chosen = {b: [(n, fn) for n, fn in systems if n not in skip and f"{n}@{b}" not in skip]
              for b in budgets}
    tries: dict[tuple[int, str], list[Run]] = {(b, n): [] for b in budgets for n, _ in chosen[b]}
    slow: set[tuple[int, str]] = set()
    # Every system at every budget in turn, repeat after repeat: a load that moves during
    # the run hits one try of each, so per-turn ratios across budgets stay comparable.
    for _ in range(max(1, args.repeat)):
        for budget in budgets:
            for name, fn in chosen[budget]:
                if (budget, name) in slow:
                    continue
                started = time.perf_counter()
                tries[budget, name].append(fn(budget))
                if time.perf_counter() - started > SLOW_SECONDS:
                    slow.add((budget, name))  # a slow run once: noise is small next to it
    for budget in budgets:
        runs = [best_of(tries[budget, n]) for n, _ in chosen[budget]]
        for r in runs:
            print(f"B={budget:>7,} {row(r)}", flush=True)
        results[budget] = runs
        ran = {r.system for r in runs}
        carried = [line for name, line in kept.get(budget, {}).items() if name not in ran]
        lines += [f"## Budget {budget:,} tokens", "",
                  "| system | summarizer calls | summarizer input ÷ folded | max context ÷ B "
                  "| mean context ÷ B | CPU µs / turn |",
                  "|---|---:|---:|---:|---:|---:|", *map(row, runs), *carried, ""]
        if carried:
            lines += ["† from the previous report (not re-run this time; its CPU time was "
                      "taken under other load, compare it with care).", ""]
    lines += targets(results)
    loads.append(os.getloadavg()[0])
    text = ("\n".join(lines) + "\n").replace(
        "{LOAD}", " → ".join(f"{x:.1f}" for x in loads) + " at start → end of the run, on "
        f"{os.cpu_count()} CPUs")
    print(text)
    if not args.no_write:
        RESULTS.write_text(text, encoding="utf-8")
        print(f"wrote {RESULTS}")


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def targets(results: dict[int, list[Run]]) -> list[str]:
    out = ["## Issue 14 targets", "", "| target | measured | met |", "|---|---|---|"]

    def by(runs: list[Run], prefix: str) -> Run:
        return next(r for r in runs if r.system.startswith(prefix))

    for b, runs in results.items():
        try:
            cf = by(runs, "contextfold Memory (memory)")
            lc = by(runs, "LangChain")
            am = by(runs, "contextfold AsyncMemory")
        except StopIteration:
            continue
        mean = statistics.fmean(cf.sizes) / b
        if b <= 8000:
            out.append(f"| B={b:,}: mean context ≥ 0.75 B | {mean:.2f} | "
                       f"{'yes' if mean >= 0.75 else 'no'} |")
            out.append(f"| B={b:,}: summarizer input ≤ 1.20 × folded | {cf.ratio():.2f} | "
                       f"{'yes' if cf.ratio() <= 1.20 else 'no'} |")
        ratio = cf.us_per_turn() / am.us_per_turn()
        out.append(f"| B={b:,}: Memory ≤ 1.2 × AsyncMemory per turn | {ratio:.2f} | "
                   f"{'yes' if ratio <= 1.2 else 'no'} |")
        vs = max(cf.us_per_turn(), am.us_per_turn()) / lc.us_per_turn()
        limit = 0.5 if b >= 32000 else 1.0
        out.append(f"| B={b:,}: contextfold ≤ {limit:g} × LangChain per turn | {vs:.2f} | "
                   f"{'yes' if vs <= limit else 'no'} |")
    if 4000 in results and 100000 in results:
        for prefix in ("contextfold Memory (memory)", "contextfold AsyncMemory"):
            try:
                g = (by(results[100000], prefix).us_per_turn()
                     / by(results[4000], prefix).us_per_turn())
            except StopIteration:
                continue
            out.append(f"| {prefix}: per turn at 100k ≤ 1.3 × at 4k | {g:.2f} | "
                       f"{'yes' if g <= 1.3 else 'no'} |")
    return [*out, ""]


if __name__ == "__main__":
    main()
