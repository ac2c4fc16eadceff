"""Agent memory: tool-using conversations replayed message by message, ``context()`` asked
after every message as an agent loop does, at 500 / 1,000 / 2,000 / 4,000 tokens.

Data: the tau-bench airline dev split (``../shared/data/tau_airline/airline_dev.json``,
read at run time, never copied; the system prompt is kept out of the budget), reported as
a whole and on each half of a split by task (rules and weights were chosen on the even
task ids only; the odd ones are held out — a task's four trials share ids, so a split by
conversation would leak); the synthetic traces of ``agent_traces.py`` used while tuning
(coding agent with long logs and file dumps, search agent, parallel calls, failing tools);
held-out synthetic traces of other shapes never tuned on (on-call agent, data agent); and a
second held-out set in other domains (``agent_traces_heldout2.py``: retail order support,
calendar/email assistant, devops agent with plain-text CLI output), committed before it
was first measured and never tuned on; and a third (``agent_traces_heldout3.py``: travel
booking, bank support, code review, HR/IT ticketing, logistics), likewise; and a fourth
(``agent_traces_heldout4.py``: clinic scheduling, insurance claims, property management,
school administration), likewise.
Systems, side by side:

- ``contextfold agent``: ``Memory(policy=TokenBudget(B), masking=Masking())`` (the agent
  preset's masking), the offline extractive summarizer;
- ``contextfold agent + recall``: the same with ``recall=True`` (the query: the
  identifiers and words of the newest messages; folded results' facts come back);
- ``contextfold``: the same without masking (elision only);
- ``sliding window``: the newest whole tool-call groups that fit, nothing else;
- ``langchain``: LangChain 1.x ``SummarizationMiddleware`` (trigger at B tokens, keep B/2,
  a fake summarizer answering ~B/5 tokens of filler) + ``ContextEditingMiddleware``
  (``ClearToolUsesEdit(trigger=B/2, keep=3)``), counted with the same o200k counter. Runs
  only where LangChain is importable: a benchmark-only virtualenv, never a dependency::

      python3 -m venv benchmarks/.venv-peers
      benchmarks/.venv-peers/bin/pip install -e . "langchain>=1.0"
      benchmarks/.venv-peers/bin/python benchmarks/agent_memory.py

Printed per budget: contexts, exceptions, contexts over budget, provider-rule violations
(``check_provider_rules``), newest tool result not visible, folds, call-argument recall
(before each tool call, the share of its argument values — at least 3 characters, seen
earlier in the conversation, not in the system prompt — present in the context the agent
had just before), and the share of the conversation's identifiers (tokens mixing letters
and digits) still in the final context. Then the per-turn cost of masking (CPU time,
interleaved runs). A report goes to ``benchmarks/results/agent_memory.md``;
``agent_diagnose.py`` says where each missed value was.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # this checkout, also from the peers virtualenv
sys.path.insert(0, str(ROOT / "benchmarks"))

from agent_traces import heldout_traces, synthetic_traces  # noqa: E402
from agent_traces_heldout2 import heldout2_traces  # noqa: E402
from agent_traces_heldout3 import heldout3_traces  # noqa: E402
from agent_traces_heldout4 import heldout4_traces  # noqa: E402

from contextfold import Masking, Memory, Message, TokenBudget, ToolCall  # noqa: E402
from contextfold.policy import safe_cuts  # noqa: E402
from contextfold.stores import MemoryStore  # noqa: E402
from contextfold.testing.provider_rules import check_provider_rules  # noqa: E402
from contextfold.testing.summarizers import FunctionSummarizer  # noqa: E402
from contextfold.tokens import count_message, count_messages, get_counter  # noqa: E402

COUNTER = get_counter("o200k")
BUDGETS = (500, 1000, 2000, 4000)
TARGETS = {500: 85.0, 1000: 95.0, 2000: 98.0, 4000: 99.5}
_IDENT = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{2,}[A-Za-z0-9]")


def tau_path() -> Path | None:
    env = os.environ.get("CONTEXTFOLD_TAU")
    for cand in ([Path(env)] if env else []) + [
        ROOT.parent / "shared/data/tau_airline/airline_dev.json",
        ROOT.parents[1] / "shared/data/tau_airline/airline_dev.json",
    ]:
        if cand.is_file():
            return cand
    return None


# -- systems --------------------------------------------------------------------------------


class System:
    name = "?"
    folds = 0

    def start(self, budget: int) -> None:
        raise NotImplementedError

    def add(self, message: Message) -> None:
        raise NotImplementedError

    def context(self) -> list[Message]:
        raise NotImplementedError


class ContextFold(System):
    def __init__(self, masking: Masking | None, name: str, recall: bool = False) -> None:
        self.masking, self.name, self.recall = masking, name, recall
        self.memory: Memory | None = None
        self.sid = 0

    def start(self, budget: int) -> None:
        if self.memory is not None:
            self.memory.close()
        self.memory = Memory(MemoryStore(), policy=TokenBudget(budget), masking=self.masking,
                             tokenizer=COUNTER, recall=self.recall)
        self.sid += 1

    def add(self, message: Message) -> None:
        assert self.memory is not None
        result = self.memory.add(str(self.sid), message)
        self.folds += bool(result.fold and result.fold.status == "committed")

    def context(self) -> list[Message]:
        assert self.memory is not None
        return list(self.memory.context(str(self.sid)).messages)


class SlidingWindow(System):
    name = "sliding window"

    def start(self, budget: int) -> None:
        self.budget, self.live = budget, []  # type: ignore[var-annotated]

    def add(self, message: Message) -> None:
        from contextfold.messages import StoredMessage

        tokens = count_message(COUNTER, message)
        self.live.append(StoredMessage(len(self.live) + 1, message, tokens))

    def context(self) -> list[Message]:
        starts = [c for c in safe_cuts(self.live) if c < len(self.live)] or [0]
        chosen = starts[-1]
        suffix = [m.tokens for m in self.live]
        for s in reversed(starts):
            if 3 + sum(suffix[s:]) > self.budget:
                break
            chosen = s
        return [m.message for m in self.live[chosen:]]


class LangChainPeer(System):
    name = "langchain mw"

    def __init__(self) -> None:
        import itertools

        from langchain.agents.middleware import (
            ClearToolUsesEdit,
            SummarizationMiddleware,
        )
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage

        self._ai = AIMessage
        self._fake = lambda n: GenericFakeChatModel(messages=itertools.repeat(
            AIMessage(content=" ".join(["earlier turns were summarized"] * max(1, n // 4)))))
        self._summ_cls, self._edit_cls = SummarizationMiddleware, ClearToolUsesEdit

    def _count(self, messages: Iterable[Any]) -> int:
        return count_messages(COUNTER, [from_lc(m) for m in messages])

    def start(self, budget: int) -> None:
        self.state: list[Any] = []
        self.summ = self._summ_cls(model=self._fake(budget // 5), trigger=("tokens", budget),
                                   keep=("tokens", budget // 2), token_counter=self._count)
        self.edit = self._edit_cls(trigger=budget // 2, keep=3)
        self.n = 0

    def add(self, message: Message) -> None:
        self.n += 1
        self.state.append(to_lc(message, f"m{self.n}"))

    def context(self) -> list[Message]:
        from langchain_core.messages import RemoveMessage

        update = self.summ.before_model({"messages": self.state}, None)  # type: ignore[arg-type]
        if update:
            self.folds += 1
            self.state = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
        edited = deepcopy(self.state)
        self.edit.apply(edited, count_tokens=self._count)
        return [from_lc(m) for m in edited]


def to_lc(m: Message, mid: str) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    if m.role == "user":
        return HumanMessage(content=m.text, id=mid)
    if m.role == "system":
        return SystemMessage(content=m.text, id=mid)
    if m.role == "tool":
        return ToolMessage(content=m.text, tool_call_id=m.tool_call_id, id=mid)
    calls = [{"id": c.id, "name": c.name, "args": json.loads(c.arguments or "{}"),
              "type": "tool_call"} for c in m.tool_calls]
    return AIMessage(content=m.text, tool_calls=calls, id=mid)


def from_lc(m: Any) -> Message:
    kind = m.type
    text = m.content if isinstance(m.content, str) else json.dumps(m.content)
    if kind == "human":
        return Message(role="user", content=text)
    if kind == "system":
        return Message(role="system", content=text)
    if kind == "tool":
        return Message(role="tool", content=text, tool_call_id=m.tool_call_id)
    calls = tuple(ToolCall(c["id"], c["name"], json.dumps(c["args"])) for c in m.tool_calls)
    return Message(role="assistant", content=text, tool_calls=calls)


# -- metrics ----------------------------------------------------------------------------------


def text_of(messages: Iterable[Message]) -> str:
    return "\n".join(m.text + " " + " ".join(c.arguments for c in m.tool_calls)
                     for m in messages)


def arg_values(arguments: str) -> list[str]:
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, bool) or v is None:
            return
        elif isinstance(v, (int, float, str)):
            s = str(v)
            if len(s) >= 3:
                out.append(s)

    with contextlib.suppress(ValueError):
        walk(json.loads(arguments))
    return out


@dataclass
class Tally:
    contexts: int = 0
    exceptions: int = 0
    over: int = 0
    violations: int = 0
    newest_missing: int = 0
    folds: int = 0
    recall_hit: int = 0
    recall_all: int = 0
    ids_hit: int = 0
    ids_all: int = 0
    errors: list[str] = field(default_factory=list)
    per_conv: list[tuple[int, int]] = field(default_factory=list)  # (hits, values) each

    def row(self) -> list[str]:
        rec = 100 * self.recall_hit / max(1, self.recall_all)
        ids = 100 * self.ids_hit / max(1, self.ids_all)
        return [f"{self.contexts:,}", str(self.exceptions), str(self.over), str(self.violations),
                str(self.newest_missing), str(self.folds), f"{rec:.1f}%", f"{ids:.1f}%"]

    @property
    def recall(self) -> float:
        return 100 * self.recall_hit / max(1, self.recall_all)

    def recall_of(self, indices: Iterable[int]) -> float:
        """Call-argument recall over the conversations at ``indices`` only."""
        chosen = [self.per_conv[i] for i in indices]
        return 100 * sum(h for h, _ in chosen) / max(1, sum(n for _, n in chosen))


def replay(system: System, conversations: list[list[dict[str, Any]]], budget: int) -> Tally:
    tally = Tally()
    for conv in conversations:
        system_prompt = conv[0]["content"] if conv and conv[0]["role"] == "system" else ""
        msgs = [Message.from_openai(m) for m in conv if m["role"] != "system"]
        system.start(budget)
        folds_before = system.folds
        hits_before, all_before = tally.recall_hit, tally.recall_all
        # rules the recorded conversation itself breaks (tau-bench reuses call ids) are the
        # data's, not the memory's: only other violations count
        own = {v.rule for v in check_provider_rules(msgs)}
        seen: list[str] = []
        previous: str | None = None
        newest_tool: str | None = None
        final: list[Message] = []
        for m in msgs:
            if m.tool_calls:
                earlier = "\n".join(seen)
                for call in m.tool_calls:
                    for v in arg_values(call.arguments):
                        if v in earlier and v not in system_prompt:
                            tally.recall_all += 1
                            tally.recall_hit += previous is not None and v in previous
            system.add(m)
            seen.append(text_of([m]))
            if m.role == "tool":
                newest_tool = m.tool_call_id
            try:
                ctx = system.context()
            except Exception as exc:  # counted, the loop goes on
                tally.exceptions += 1
                tally.errors.append(f"{type(exc).__name__}: {exc}"[:160])
                previous = None
                continue
            tally.contexts += 1
            final = ctx
            tally.over += count_messages(COUNTER, ctx) > budget
            tally.violations += any(v.rule not in own for v in check_provider_rules(ctx))
            if newest_tool is not None and not any(
                    x.role == "tool" and x.tool_call_id == newest_tool for x in ctx):
                tally.newest_missing += 1
            previous = text_of(ctx)
        ids = {t for t in _IDENT.findall("\n".join(seen)) if t not in system_prompt}
        last = text_of(final)
        tally.ids_all += len(ids)
        tally.ids_hit += sum(1 for t in ids if t in last)
        tally.folds += system.folds - folds_before
        tally.per_conv.append((tally.recall_hit - hits_before, tally.recall_all - all_before))
    return tally


# -- per-turn cost ------------------------------------------------------------------------------


_STAND_IN_CPU = [0.0]  # CPU seconds spent making stand-ins (LiveView._form), all runs


def _timed_forms() -> None:
    """Count the CPU time the view spends making stand-ins (masking's own work; a share
    that the load on a shared machine does not blur the way it blurs two totals)."""
    from contextfold.context import LiveView

    form = LiveView._form
    if getattr(form, "_timed", False):
        return

    def timed(self: LiveView, i: int) -> Any:
        started = time.process_time()
        shown = form(self, i)
        _STAND_IN_CPU[0] += time.process_time() - started
        return shown

    timed._timed = True  # type: ignore[attr-defined]
    timed._untimed = form  # type: ignore[attr-defined]
    LiveView._form = timed  # type: ignore[method-assign]


def _untimed_forms() -> None:
    from contextfold.context import LiveView

    untimed = getattr(LiveView._form, "_untimed", None)
    if untimed is not None:
        LiveView._form = untimed  # type: ignore[method-assign]


def per_turn_cost(messages: list[Message], budget: int, masking: Masking | None,
                  store: Callable[[], Any], stand_ins: bool = False) -> tuple[float, float]:
    """µs per message of ``add`` + ``context()``, and (``stand_ins``: timed apart, in runs
    not used for the totals, as the timer itself costs) of that the µs spent making
    stand-ins; the summarizer is a fake answering a fixed ~200-token text at once, so its
    time is not what is measured."""
    if stand_ins:
        _timed_forms()
    else:
        _untimed_forms()
    fake = FunctionSummarizer(lambda request: "earlier work summarized " * 50, name="fake")
    with Memory(store(), policy=TokenBudget(budget), masking=masking, summarizer=fake,
                tokenizer=COUNTER, redactor=False) as memory:
        _STAND_IN_CPU[0] = 0.0
        started = time.process_time()
        for m in messages:
            memory.add("s", m)
            memory.context("s")
        total = (time.process_time() - started) / len(messages) * 1e6
        return total, _STAND_IN_CPU[0] / len(messages) * 1e6


def _sqlite() -> Any:
    import tempfile

    from contextfold.stores.sqlite import SQLiteStore

    return SQLiteStore(Path(tempfile.mkdtemp()) / "cost.db")


def table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=12, help="synthetic traces (12)")
    parser.add_argument("--heldout", type=int, default=8,
                        help="held-out synthetic traces of other shapes (8)")
    parser.add_argument("--heldout2", type=int, default=18,
                        help="second held-out set: retail, calendar/email, devops traces (18)")
    parser.add_argument("--heldout3", type=int, default=15,
                        help="third held-out set: travel, bank, code review, HR, logistics (15)")
    parser.add_argument("--heldout4", type=int, default=16,
                        help="fourth held-out set: clinic, claims, property, school (16)")
    parser.add_argument("--tau-limit", type=int, default=None, help="first N tau conversations")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--cost-messages", type=int, default=1500)
    parser.add_argument("--no-cost", action="store_true", help="skip the per-turn cost")
    parser.add_argument("--cost-runs", type=int, default=7, help="interleaved runs per cell")
    parser.add_argument("--cost-only", action="store_true", help="only the per-turn cost")
    parser.add_argument("--systems", default="", help="only these systems (comma-separated)")
    parser.add_argument("--report", default=str(ROOT / "benchmarks/results/agent_memory.md"))
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]

    systems: list[System] = [ContextFold(Masking(), "contextfold agent"),
                             ContextFold(Masking(), "contextfold agent + recall", recall=True),
                             ContextFold(None, "contextfold"), SlidingWindow()]
    try:
        systems.append(LangChainPeer())
    except ImportError as exc:
        print(f"(LangChain not importable here, its rows are skipped: {exc})")
    if args.systems:
        systems = [s for s in systems if s.name in args.systems.split(",")]
    # (label, conversations, halves: name -> conversation indices)
    datasets: list[tuple[str, list[list[dict[str, Any]]], dict[str, list[int]]]] = []
    tau = tau_path() if args.tau_limit != 0 else None
    if tau is not None:
        items = json.loads(tau.read_text())[: args.tau_limit]
        # split by task (a task's 4 trials share its ids): rules were tuned on even task ids
        halves = {
            "tuning half (even task ids)":
                [i for i, x in enumerate(items) if int(x["task_id"]) % 2 == 0],
            "held-out half (odd task ids)":
                [i for i, x in enumerate(items) if int(x["task_id"]) % 2 == 1],
        }
        datasets.append((f"tau-bench airline dev ({len(items)} conversations)",
                         [x["traj"] for x in items], halves))
    elif args.tau_limit != 0:
        print("(tau-bench data not found; set CONTEXTFOLD_TAU)")
    if args.synthetic:
        datasets.append((f"synthetic agent traces ({args.synthetic}, coding and search agents)",
                         synthetic_traces(args.synthetic), {}))
    if args.heldout:
        datasets.append((f"held-out synthetic traces ({args.heldout}, on-call and data agents, "
                         "never tuned on)", heldout_traces(args.heldout), {}))
    if args.heldout2:
        datasets.append((f"held-out set 2 ({args.heldout2}, retail, calendar/email and devops "
                         "agents, never tuned on)", heldout2_traces(args.heldout2), {}))
    if args.heldout3:
        datasets.append((f"held-out set 3 ({args.heldout3}, travel, bank, code review, HR and "
                         "logistics agents, never tuned on)", heldout3_traces(args.heldout3), {}))
    if args.heldout4:
        datasets.append((f"held-out set 4 ({args.heldout4}, clinic scheduling, insurance claims, "
                         "property management and school administration agents, never tuned "
                         "on)", heldout4_traces(args.heldout4), {}))

    head = ["budget", "system", "contexts", "exceptions", "over budget", "rule violations",
            "newest result not visible", "folds", "call-arg recall", "ids in final context"]
    report = ["# Agent memory benchmark", "",
              "Machine shared with other jobs (2 cores); timings are noisy, ratios in one run "
              "are what counts.", ""]
    recall: dict[tuple[str, str, int], float] = {}
    for label, convs, halves in [] if args.cost_only else datasets:
        rows = []
        split: dict[tuple[str, str, int], float] = {}
        for budget in budgets:
            for system in systems:
                started = time.perf_counter()
                t = replay(system, convs, budget)
                recall[(label, system.name, budget)] = t.recall
                for half, indices in halves.items():
                    split[(half, system.name, budget)] = t.recall_of(indices)
                rows.append([f"{budget:,}", system.name, *t.row()])
                print(f"  {label[:20]} {budget} {system.name}: {t.row()} "
                      f"({time.perf_counter() - started:.1f}s)", flush=True)
                if t.errors:
                    print("    e.g.", t.errors[0])
        block = f"## {label}\n\n" + table(head, rows)
        if halves:
            half_rows = [[half, name, *(f"{split[(half, name, b)]:.1f}%" for b in budgets)]
                         for name in [s.name for s in systems] for half in halves]
            block += ("\n\nCall-argument recall on each half of the split by task "
                      f"({', '.join(f'{h}: {len(ix)} conversations' for h, ix in halves.items())})"
                      ":\n\n" + table(["half", "system", *(f"{b:,}" for b in budgets)],
                                       half_rows))
        print("\n" + block + "\n")
        report += [block, ""]
        if not any(s.name == "contextfold agent" for s in systems):
            continue
        got = {b: recall[(label, "contextfold agent", b)] for b in budgets}
        tgt = [f"{b:,}: {got[b]:.1f}% (target {TARGETS.get(b, 0)}%, "
               f"{'met' if got[b] >= TARGETS.get(b, 0) else 'missed'})" for b in budgets]
        line = "Call-argument recall of `contextfold agent` vs target — " + "; ".join(tgt)
        print(line + "\n")
        report += [line, ""]
    if args.no_cost:
        return 0

    # per-turn cost of masking: one long agent session, add + context every message
    long_run: list[Message] = []
    for conv in synthetic_traces(60, offset=500):
        long_run += [Message.from_openai(m) for m in conv]
        if len(long_run) >= args.cost_messages:
            break
    long_run = long_run[: args.cost_messages]
    # the traces restart with a user turn: drop a trailing unanswered call group
    while long_run and (long_run[-1].tool_calls or long_run[-1].role == "tool"):
        long_run.pop()
    cost_rows = []
    for store_name, store in (("memory", MemoryStore), ("sqlite", _sqlite)):
        for budget in (4000, 32000):
            offs: list[float] = []
            ons: list[float] = []
            own: list[float] = []
            for _ in range(args.cost_runs):  # interleaved, so load drifts hit both alike
                offs.append(per_turn_cost(long_run, budget, None, store)[0])
                ons.append(per_turn_cost(long_run, budget, Masking(), store)[0])
            for _ in range(3):  # the stand-ins' share, timed in runs of their own
                own.append(per_turn_cost(long_run, budget, Masking(), store, True)[1])
            off, on = min(offs), min(ons)
            paired = statistics.median(b / a for a, b in zip(offs, ons, strict=True))
            cost_rows.append([store_name, f"{budget:,}", f"{len(long_run):,}", f"{off:.0f}",
                              f"{on:.0f}", f"{on / off:.2f}", f"{paired:.2f}",
                              f"{min(own):.0f} ({100 * min(own) / off:.0f}%)"])
            print("  cost", cost_rows[-1], flush=True)
    block = ("## Per-turn cost of masking (add + context every message, fake summarizer)\n\n"
             f"CPU time (`time.process_time`), the fastest of {args.cost_runs} interleaved runs "
             "each; the median of the on/off ratios of runs made one after the other (less "
             "sensitive to load that comes and goes); and the CPU time the view spends making "
             "stand-ins, per turn and as a share of the unmasked cost (masking's own work; "
             "fastest of 3 runs of its own, since timing each stand-in costs time too).\n\n"
             + table(["store", "budget", "messages", "µs/turn, masking off", "µs/turn, masking on",
                      "ratio of fastest (target ≤ 1.10)", "median paired ratio",
                      "µs/turn making stand-ins"], cost_rows))
    print(block)
    report += [block, ""]
    if args.cost_only and Path(args.report).exists():  # keep the recall sections there
        kept = Path(args.report).read_text()
        head = kept.split("## Per-turn cost of masking")[0].rstrip("\n")
        report = [head, "", block, ""]
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    Path(args.report).write_text("\n".join(report) + "\n")
    print(f"\nreport: {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
