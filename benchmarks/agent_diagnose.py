"""Why call-argument values are missing: for every argument value that ``agent_memory.py``
counts as missed (seen earlier in the conversation, absent from the context just before
the call), where it was when the call was made.

Each message that held the value before the call is classified by how the context showed
it — ``folded`` (in the summary span; the summary did not keep the value), ``omitted``
(live but left out of the trimmed view), ``masked`` (shown as a stand-in that dropped the
value), ``elided`` (cut head + tail and the value was in the cut) — and by its kind
(user text, assistant text, tool result, call arguments). A miss is charged to the
*best* place the value still was (masked > elided > omitted > folded), and to the kind
of its newest source. Also counted: misses whose value was in the context two
contexts earlier (lost by the last step) and whether the summary was over half empty.

    python benchmarks/agent_diagnose.py --budget 500 --half tune

``--half tune`` reads only the tau-bench tasks with an even task id (the held-out half is
``--half held``); ``--synthetic`` diagnoses the synthetic traces instead (``--heldout`` and
``--heldout2`` and ``--heldout3`` the held-out sets: to explain a result, never to choose a
change; set 2 has since been looked at and is tuning data now).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from agent_memory import COUNTER, arg_values, tau_path, text_of  # noqa: E402
from agent_traces import heldout_traces, synthetic_traces  # noqa: E402
from agent_traces_heldout2 import heldout2_traces  # noqa: E402
from agent_traces_heldout3 import heldout3_traces  # noqa: E402

from contextfold import Masking, Memory, Message, TokenBudget  # noqa: E402
from contextfold.masking import STAND_IN_PREFIX  # noqa: E402
from contextfold.stores import MemoryStore  # noqa: E402
from contextfold.summarizers.agent_records import observation_line  # noqa: E402
from contextfold.summarizers.agent_state import call_signature  # noqa: E402

_RANK = ("masked", "elided", "omitted", "summary not shown", "folded")


def tau_half(half: str) -> list[list[dict[str, Any]]]:
    """The tau-bench dev conversations of one half, split by task (the 4 trials of a task
    share ids, so a split by conversation would leak): ``tune`` even task ids, ``held``
    odd ones, ``all`` every conversation."""
    path = tau_path()
    if path is None:
        raise SystemExit("tau-bench data not found; set CONTEXTFOLD_TAU")
    items = json.loads(path.read_text())
    if half == "all":
        return [x["traj"] for x in items]
    want = 0 if half == "tune" else 1
    return [x["traj"] for x in items if int(x["task_id"]) % 2 == want]


def kind(m: Message, value: str) -> str:
    if m.role == "tool":
        return "tool result"
    if any(value in c.arguments for c in m.tool_calls):
        return "call args"
    return f"{m.role} text"


def shape(value: str) -> str:
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", value):
        return "date"
    if re.fullmatch(r"-?[\d.,]+", value):
        return "number"
    if re.search(r"\d", value) and re.search(r"[A-Za-z]", value):
        return "identifier"
    if value.isupper():
        return "code"
    return "word"


def lost_how(value: str, folded: list[Any], stored: list[Any]) -> str:
    """Whether a folded value was dropped by extraction (not in any record or sentence
    its messages give a summary) or by selection (in a record, the summary left it out)."""
    calls = {c.id: c for s in stored for c in s.message.tool_calls}
    for s in folded:
        m = s.message
        if m.role == "tool":
            line = observation_line(calls.get(m.tool_call_id or ""), m.text)
            if value in line:
                return "selection (tool record)"
        elif any(value in call_signature(c.name, c.arguments) for c in m.tool_calls):
            return "selection (call record)"
        elif value in m.text:
            return f"selection/compress ({m.role} text)"
    return "extraction"


def diagnose(convs: list[list[dict[str, Any]]], budget: int, masking: Masking | None,
             examples: int, args_verbose: bool = False) -> None:
    where: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    causes: Counter[str] = Counter()
    shapes: Counter[str] = Counter()
    lost: list[str] = []
    total = hits = 0
    shown: list[str] = []
    for n, conv in enumerate(convs):
        system_prompt = conv[0]["content"] if conv and conv[0]["role"] == "system" else ""
        msgs = [Message.from_openai(m) for m in conv if m["role"] != "system"]
        memory = Memory(MemoryStore(), policy=TokenBudget(budget), masking=masking,
                        tokenizer=COUNTER)
        sid = f"c{n}"
        seen: list[str] = []
        previous: str | None = None
        ctx: Any = None
        for m in msgs:
            if m.tool_calls and ctx is not None:
                earlier = "\n".join(seen)
                stored = memory.messages(sid)
                stats = memory.stats(sid)
                through = stats.through_seq if stats else 0
                live = [s for s in stored if s.seq > through]
                visible = live[ctx.omitted:]
                tool_shown = {x.tool_call_id: x for x in ctx.messages if x.role == "tool"}
                for call in m.tool_calls:
                    for v in arg_values(call.arguments):
                        if v not in earlier or v in system_prompt:
                            continue
                        total += 1
                        if previous is not None and v in previous:
                            hits += 1
                            continue
                        sources = [s for s in stored if v in text_of([s.message])]
                        states = []
                        for s in sources:
                            if s.seq <= through:
                                states.append("folded" if ctx.summary_included
                                              else "summary not shown")
                            elif s not in visible:
                                states.append("omitted")
                            elif s.seq in ctx.elided:
                                states.append("elided")
                            elif s.message.role == "tool" and tool_shown.get(
                                    s.message.tool_call_id) is not None and tool_shown[
                                    s.message.tool_call_id].text.startswith(STAND_IN_PREFIX):
                                states.append("masked")
                            else:
                                states.append("shown?")
                        if "folded" in states:
                            why = lost_how(v, [s for s, st in zip(sources, states, strict=True)
                                               if st == "folded"], stored)
                            causes[why] += 1
                            if why == "extraction" and len(lost) < examples:
                                lost.append(f"  extraction lost {v!r} for {call.name}: "
                                            + text_of([sources[-1].message])[:400])
                        best = min(states, key=lambda x: _RANK.index(x) if x in _RANK else -1)
                        newest = sources[-1]
                        k = kind(newest.message, v)
                        where[best] += 1
                        shapes[shape(v)] += 1
                        kinds[k] += 1
                        pairs[(best, k)] += 1
                        if len(shown) < examples:
                            shown.append(f"  conv {n} call {call.name} value {v!r}: {best}, "
                                         f"newest source {k} seq {newest.seq} "
                                         f"(through {through}, live {len(live)}, "
                                         f"omitted {ctx.omitted})")
                            if args_verbose:
                                summ = memory.summary(sid)
                                shown.append("    summary: " + (summ.text if summ else "-"))
                                shown.append("    source: " + text_of([newest.message])[:600])
            memory.add(sid, m)
            seen.append(text_of([m]))
            ctx = memory.context(sid)
            previous = text_of(ctx.messages)
        memory.close()
    miss = total - hits
    print(f"budget {budget}: {total} values, recall {100 * hits / max(1, total):.1f}%, "
          f"{miss} missed")
    print("  where:", ", ".join(f"{k} {v} ({100 * v / max(1, miss):.0f}%)"
                                for k, v in where.most_common()))
    print("  newest source:", ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    print("  (where, source):", ", ".join(f"{a}/{b} {v}" for (a, b), v in pairs.most_common()))
    print("  shapes:", ", ".join(f"{k} {v}" for k, v in shapes.most_common()))
    print("  folded, lost by:", ", ".join(f"{k} {v}" for k, v in causes.most_common()))
    for line in lost + shown:
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="500,1000,2000,4000")
    parser.add_argument("--half", choices=("tune", "held", "all"), default="tune")
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--heldout", action="store_true",
                        help="the held-out synthetic traces (to explain a result, not to tune)")
    parser.add_argument("--heldout2", action="store_true",
                        help="the second held-out set (retail, calendar, devops; to explain a "
                             "result, never to tune)")
    parser.add_argument("--heldout3", action="store_true",
                        help="the third held-out set (travel, bank, code review, HR, logistics; "
                             "to explain a result, never to tune)")
    parser.add_argument("--no-masking", action="store_true")
    parser.add_argument("--examples", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    convs = (synthetic_traces(12) if args.synthetic else heldout_traces(8) if args.heldout
             else heldout2_traces(18) if args.heldout2
             else heldout3_traces(15) if args.heldout3 else tau_half(args.half))
    for budget in (int(b) for b in args.budget.split(",")):
        diagnose(convs, budget, None if args.no_masking else Masking(), args.examples,
                 args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
