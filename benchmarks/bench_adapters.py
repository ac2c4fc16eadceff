"""Adapter benchmark: each framework's agent loop with contextfold as its memory, against
the same loop with the framework's own memory piece.

One scripted tool-using conversation (each turn: a question, a tool call — two in parallel
every 10th turn on LangChain — its result, an answer; two model calls per turn) runs
through each framework with an instant scripted model. The figure that matters is the
**whole loop's CPU time per model call** (``time.process_time``: every thread of the
process, so work a framework does on a worker thread counts too), for:

* LangChain ``create_agent``: ``ContextFoldMiddleware`` vs LangChain's
  ``SummarizationMiddleware`` (trigger at the budget, keep 20 messages); shown too, never
  a baseline: the loop with no memory piece and ``ContextFoldMiddleware(trim_state=False)``
  (the whole transcript kept in the graph state);
* a hand-built LangGraph loop: the ``ContextFold`` helper vs langmem's
  ``summarize_messages`` (``max_tokens`` = budget);
* pydantic-ai: ``ContextFoldCapability`` vs the loop without a processor (full history);
* OpenAI Agents SDK: ``ContextFoldSession`` vs the SDK's ``SQLiteSession`` (last 40 items;
  in memory beside contextfold's memory store, in a file beside its SQLite store);
* LlamaIndex ``FunctionAgent``: ``ContextFoldMemory`` vs ``ChatMemoryBuffer`` and its
  replacement ``Memory`` (token-limit truncation, no summary).

contextfold runs on its memory store and on SQLite (a file); "÷ own" is its CPU per call
over the framework's own piece (the cheapest own row of that framework for that store).
Every config is warmed up first (imports, first calls) and, with ``--repeat N``, run N
times in turn with the others, its fastest run reported. Also reported: the time spent
inside the memory hooks (process CPU, model call excluded), the largest request the model
received relative to the budget (contextfold's exact counter), and how often the newest
message was not sent. Every summarizer is a fake answering a fixed ~200-token summary at
once, so the figures are the memory machinery's cost, not an LLM's.

Usage: python benchmarks/bench_adapters.py [--turns 150] [--budget 4000] [--repeat 3]
       [--quick] [--only TEXT] [--profile]
Needs the framework extras plus langmem (benchmark only: pip install langmem). The rows are
in ``adapter_rows_langchain.py`` and ``adapter_rows_frameworks.py``, the shared harness in
``adapter_harness.py``.
Writes benchmarks/results/adapters.md (not with --only or --profile).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adapter_harness import Clock, Result, run_config
from adapter_rows_frameworks import (
    llamaindex_configs,
    openai_agents_configs,
    pydantic_ai_configs,
)
from adapter_rows_langchain import langchain_configs, langgraph_configs

RESULTS = Path(__file__).parent / "results"


# -- report -------------------------------------------------------------------------------------


def baseline(result: Result, results: list[Result]) -> Result | None:
    """The cheapest own row of ``result``'s framework for its store (None for own rows)."""
    config = result.config
    if config.own or config.info:
        return None
    owns = [r for r in results if r.config.own and not r.config.info
            and r.config.framework == config.framework and r.config.store in ("-", config.store)]
    return min(owns, key=lambda r: r.per_call(r.cpu), default=None)


def render(results: list[Result], args: argparse.Namespace, load: str) -> str:
    lines = [
        f"# Adapter overhead ({args.turns} user turns, budget {args.budget:,} tokens)",
        "",
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"load average {load} (start → end). CPU is `time.process_time` of the whole loop "
        "(all threads), divided by the model calls; "
        + (f"fastest of {args.repeat} runs per row, run in turn; " if args.repeat > 1 else "")
        + "each row warmed up first. Compare rows within one framework: the machine may be "
        "shared. Reproduce: `python benchmarks/bench_adapters.py"
        + (f" --repeat {args.repeat}" if args.repeat > 1 else "")
        + (f" --turns {args.turns}" if args.turns != TURNS else "") + "`.",
        "",
        "| framework | memory | store | model calls | loop CPU ms / call | ÷ own "
        "| memory hooks CPU µs / call | max request ÷ budget | newest message not sent |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        base = baseline(r, results)
        ratio = "-" if base is None else f"**{r.per_call(r.cpu) / base.per_call(base.cpu):.2f}**"
        c = r.clock
        top = c.max_tokens
        size = f"{top / args.budget:.2f}" if top else "-"
        hooks = "-" if (r.config.info and not r.config.own) or r.config.label.startswith("no ") \
            else f"{r.per_call(c.seconds) * 1e6:,.0f}"
        lines.append(f"| {r.config.framework} | {r.config.label} | {r.config.store} | "
                     f"{c.calls} | {r.per_call(r.cpu) * 1e3:.2f} | {ratio} | {hooks} | {size} | "
                     f"{c.newest_missing} |")
    return "\n".join(lines) + "\n"


TURNS = 150
SLOW_SECONDS = 20.0  # a row whose run takes longer is not repeated (--repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="40 turns, one run")
    parser.add_argument("--only", default="", help="rows whose name contains this text")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the chosen rows: contextfold's functions by own time")
    args = parser.parse_args(argv)
    if args.quick:
        args.turns, args.repeat = 40, 1
    configs = [c for part in (langchain_configs, langgraph_configs, pydantic_ai_configs,
                              openai_agents_configs, llamaindex_configs)
               for c in part(args.budget) if args.only.lower() in c.name.lower()]
    load = [os.getloadavg()[0]]
    best: dict[str, Result] = {}
    slow: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for config in configs:  # imports and first calls, untimed
            config.play(3, Path(tempfile.mkdtemp(dir=tmp)), Clock())
        for _ in range(max(1, args.repeat)):
            for config in configs:
                if config.name in slow:
                    continue
                if args.profile:
                    profile = cProfile.Profile(time.thread_time)
                    profile.enable()
                result = run_config(config, args.turns, Path(tmp))
                if args.profile:
                    profile.disable()
                    print(f"== {config.name}: {result.per_call(result.cpu) * 1e3:.2f} ms/call")
                    stats = pstats.Stats(profile)
                    stats.sort_stats("tottime").print_stats("contextfold", 25)
                    stats.sort_stats("cumulative").print_stats("contextfold", 25)
                if result.wall > SLOW_SECONDS:
                    slow.add(config.name)  # noise is small next to its cost: run it once
                kept = best.get(config.name)
                if kept is None or result.cpu < kept.cpu:
                    best[config.name] = result
                print(f"{config.name}: {result.per_call(result.cpu) * 1e3:.2f} ms CPU / call",
                      flush=True)
    load.append(os.getloadavg()[0])
    report = render([best[c.name] for c in configs], args,
                    " → ".join(f"{x:.1f}" for x in load))
    print("\n" + report)
    if not (args.only or args.profile):
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "adapters.md").write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
