# Install: pip install contextfold   # --model openai:…: pip install "contextfold[openai]"
"""An agent context pruner: a tool-using agent's transcript folded with the ``agent`` preset.

The summary keeps the plan and goal, the most recent failing observation, key decisions and
constraints, and leaves out routine tool calls. The summarizer sees the folded turns as
``[ROLE]: content`` lines followed by ``## Active Task Context`` and the agent's current
task context (read at every fold). The model is configuration (``--model``); offline the
``FakeChat`` test double plays it, so you can see the prompt that would be sent.

    python examples/agent_pruner.py --show-prompt
    python examples/agent_pruner.py --model openai:gpt-4o-mini --budget 800
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from contextfold import Memory, Message, SummarizationError, TokenBudget, ToolCall
from contextfold.summarizers.llm import LLMSummarizer
from contextfold.summarizers.metadata import WithMetadata
from contextfold.summarizers.prompts import build_prompt
from contextfold.testing import FakeChat

TASK = {"context": "Goal: make CI green on branch fix-42. Constraints: do not change the "
                   "public API; Python 3.10 must keep working. Plan: reproduce, fix, test."}


def transcript() -> list[list[Message]]:
    """The agent's run, one group of messages per step (a call and its result together)."""
    steps: list[list[Message]] = [[Message(
        role="user", content="CI fails on fix-42. Make it green without touching the API.")]]
    observations = [
        ("run_tests", '{"path": "tests"}', "3 passed, 1 failed: test_limits KeyError 'max_tokens'"),
        ("read_file", '{"path": "config.py"}', "DEFAULTS = {'timeout': 30}  # 120 lines"),
        ("grep", '{"pattern": "max_tokens"}', "api.py:88 cfg['max_tokens']; tests/test_api.py:12"),
        ("edit_file", '{"path": "config.py"}', "ok: added 'max_tokens': 4096 to DEFAULTS"),
        ("run_tests", '{"path": "tests"}', "FAILED test_py310 SyntaxError: match statement"),
        ("edit_file", '{"path": "api.py"}', "ok: replaced match with if/elif (3.10 compatible)"),
        ("run_tests", '{"path": "tests"}', "5 passed in 2.1s"),
    ]
    for i, (tool, arguments, result) in enumerate(observations, 1):
        steps.append([
            Message(role="assistant", content=f"Step {i}: calling {tool}.",
                    tool_calls=(ToolCall(f"call_{i}", tool, arguments),)),
            Message(role="tool", tool_call_id=f"call_{i}", content=result + " " + "log " * 80),
        ])
    steps.append([Message(role="assistant", content="All tests pass; opening the PR.")])
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="summarizer model, e.g. openai:gpt-4o-mini "
                        "(default: the offline FakeChat double)")
    parser.add_argument("--budget", type=int, default=600, help="context token budget (600)")
    parser.add_argument("--show-prompt", action="store_true",
                        help="print the prompt build_prompt makes for the whole run")
    parser.add_argument("--raise-errors", action="store_true",
                        help="a failed fold raises SummarizationError instead of returning")
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args(argv)

    steps = transcript()
    if args.show_prompt:
        prompt = build_prompt([m for s in steps for m in s], TASK["context"], preset="agent")
        print("---- system ----\n" + prompt.system)
        print("---- user ----")
        for line in prompt.user.splitlines():
            print(textwrap.shorten(line, 100, placeholder=" […]") if line.strip() else "")
        print("----------------\n")

    model: Any = args.model or FakeChat(name="fake:agent-summarizer")
    summarizer = WithMetadata(LLMSummarizer(model, preset="agent"),
                              lambda session_id: {"task_context": TASK["context"]})
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'agent.db'}"
        with Memory(db, summarizer=summarizer, policy=TokenBudget(args.budget, keep_last=2),
                    raise_errors=args.raise_errors) as memory:
            for i, group in enumerate(steps):
                if i == 5:
                    TASK["context"] += " Status: API fixed; now fixing Python 3.10."
                try:
                    fold = memory.add("run", *group).fold
                except SummarizationError as exc:
                    print(f"fold failed: {exc} (cause: {type(exc.__cause__).__name__})")
                    return 1
                if fold is not None and fold.status == "committed":
                    print(f"step {i}: folded {fold.messages_folded} messages "
                          f"(seq {fold.lo}..{fold.hi}) with {fold.calls} model call(s)")
                elif fold is not None and fold.status == "failed":
                    print(f"step {i}: fold failed, nothing lost ({type(fold.error).__name__})")
            context = memory.context("run")
            usage = memory.usage("run")
            print(f"\ncontext: {context.tokens} tokens of {args.budget}; "
                  f"{usage.folds} folds, {usage.calls} model calls")
            for message in context.messages:
                print(f"  [{message.role}] {textwrap.shorten(message.text or '(tool call)', 110)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
