# Install: pip install contextfold   # --model openai:…: pip install "contextfold[openai]"
"""An agent whose memory folds at the context limit and when the session goes idle.

Settings come from a YAML file (``examples/agent_autofold.yaml``; defaults for missing
keys, a clear error for unknown keys or wrong types). After every model response the
provider-reported input tokens are recorded: over ``context_limit_tokens`` everything but
the last exchange is folded. Idle for ``timeout_summarize_seconds``: everything is folded;
still idle ``timeout_clear_seconds`` later: the session is cleared; new activity cancels
that. A utility call (a rescheduling helper) reads the context but never touches history.

The demo runs the in-process timers on simulated time (an hour passes in a moment). The
same policy runs out of process with the ``worker`` subcommand (a contextfold Worker over
the store's due marks):

    python examples/agent_autofold.py
    python examples/agent_autofold.py --settings my.yaml --model openai:gpt-4o-mini
    python examples/agent_autofold.py worker --db sqlite:///agent.db --settings my.yaml
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from contextfold import AsyncMemory, Message
from contextfold.idle import IdleScheduler
from contextfold.settings import AgentSettings
from contextfold.testing import FakeChat, FakeClock
from contextfold.worker import Worker

HERE = Path(__file__).resolve().parent
SESSION = "agent"
STEPS = [
    "Check why the nightly build failed.",
    "Look at the test log of job 1182.",
    "Retry the flaky integration test with more memory.",
    "Compare the Docker image sizes of the last two builds.",
    "Draft a fix for the out-of-memory error in the packer step.",
    "Open a pull request with the fix.",
]


def agent_reply(step: str) -> str:
    return (f"Done: {step} Observation: the packer step used 7.8 GB of 8 GB; the integration "
            "test timed out after 600 s; image size grew from 1.2 GB to 1.9 GB after "
            "adding the debug symbols. Next I will keep the plan and report back.")


async def demo(args: argparse.Namespace, settings: AgentSettings) -> None:
    clock = FakeClock(datetime.now(timezone.utc))
    model: Any = FakeChat([agent_reply(s) for s in STEPS] + ["Tomorrow 09:00 works."])
    if args.model:
        from contextfold.llm import resolve_model

        model = resolve_model(args.model)
    memory = AsyncMemory(args.db, clock=clock.now, **settings.options(model=args.model))
    timers = IdleScheduler(memory, sleep=clock.sleep)
    print(f"settings: {settings}\n")
    try:
        for step in STEPS:
            await memory.add(SESSION, {"role": "user", "content": step})
            view = await memory.context(SESSION, system="You are a build-fixing agent.")
            reply = await model.complete(list(view.messages), max_tokens=200, temperature=0.2)
            await memory.add(SESSION, {"role": "assistant", "content": reply.text})
            await timers.touch(SESSION)  # activity: (re)arm the idle timers
            reported = reply.usage.input_tokens or view.tokens
            outcome = await memory.record_usage(SESSION, reported)
            note = ""
            if outcome is not None and outcome.status == "committed":
                note = f" -> over {settings.context_limit_tokens}: folded " \
                       f"{outcome.messages_folded} messages, kept the last exchange"
            print(f"step: {step!r}: provider reported {reported} input tokens{note}")
            clock.advance(60)

        # A utility call: reads the context, is never added, does not count as activity.
        before = await memory.stats(SESSION)
        view = await memory.context(SESSION)
        helper = await model.complete(
            [*view.messages, Message(role="user", content="When should the retry run?")],
            max_tokens=50, temperature=0.0)
        assert await memory.stats(SESSION) == before
        print(f"\nutility call (rescheduling helper): {helper.text.strip()[:80]!r}; "
              "history untouched")

        print(f"\nnext idle timer: {timers.due(SESSION):%H:%M:%S} (simulated clock)")
        clock.advance(settings.timeout_summarize_seconds)
        for outcome in await timers.run_due():
            print(f"idle {settings.timeout_summarize_seconds:g} s: {outcome.status}, "
                  f"{outcome.messages_folded} messages folded")
        clock.advance(settings.timeout_clear_seconds / 2)
        await memory.add(SESSION, {"role": "user", "content": "Any news on the PR?"})
        await timers.touch(SESSION)
        print("new activity: the pending clear is cancelled; "
              f"next timer {timers.due(SESSION):%H:%M:%S}")
        clock.advance(settings.timeout_summarize_seconds)
        for outcome in await timers.run_due():
            print(f"idle again: {outcome.status}")
        clock.advance(settings.timeout_clear_seconds)
        for outcome in await timers.run_due():
            print(f"idle {settings.timeout_clear_seconds:g} s more: {outcome.status}")
        print(f"session exists: {await memory.stats(SESSION) is not None}")
    finally:
        await timers.stop()
        await memory.close()


async def work(args: argparse.Namespace, settings: AgentSettings) -> None:
    memory = AsyncMemory(args.db, **settings.options(model=args.model))
    try:
        stats = await Worker(memory, poll_interval=0.2).run(once=True)
    finally:
        await memory.close()
    print(f"worker: {stats.claimed} due sessions, {stats.committed} folded, "
          f"{stats.cleared} cleared, {stats.failed} failed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=["demo", "worker"], default="demo",
                        help="demo (default), or worker: fold/clear what is due, then exit")
    parser.add_argument("--settings", type=Path, default=HERE / "agent_autofold.yaml",
                        help="YAML settings file (default: examples/agent_autofold.yaml)")
    parser.add_argument("--model", help="model for the agent and its summaries, e.g. "
                        "openai:gpt-4o-mini (default: the settings' model, else offline)")
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    args = parser.parse_args(argv)
    settings = AgentSettings.load(args.settings)
    args.model = args.model or settings.model
    with tempfile.TemporaryDirectory() as tmp:
        args.db = args.db or f"sqlite:///{Path(tmp) / 'agent.db'}"
        asyncio.run((work if args.command == "worker" else demo)(args, settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
