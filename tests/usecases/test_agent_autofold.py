"""Use case 4: an agent with context-limit (reported usage) and idle-time folding."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypeVar

import pytest

from contextfold import AsyncMemory, ConfigError, Message
from contextfold.idle import IdleScheduler
from contextfold.settings import AgentSettings
from contextfold.testing import ConcatSummarizer, FakeChat, FakeClock
from contextfold.worker import Worker

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# -- settings --------------------------------------------------------------------------------


def test_settings_defaults_for_missing_keys(tmp_path: Path) -> None:
    assert AgentSettings.load(write(tmp_path, "")) == AgentSettings()
    s = AgentSettings.load(write(tmp_path, "context_limit_tokens: 12000\n"))
    assert (s.context_limit_tokens, s.timeout_summarize_seconds, s.timeout_clear_seconds,
            s.model) == (12000, 1800, 3600, None)
    d = AgentSettings()
    assert (d.context_limit_tokens, d.timeout_summarize_seconds, d.timeout_clear_seconds) == (
        8000, 1800, 3600)


@pytest.mark.parametrize(("text", "match"), [
    ("context_limit: 8000\n", r"unknown setting\(s\) 'context_limit'.*known settings"),
    ("context_limit_tokens: lots\n", "context_limit_tokens must be a positive integer"),
    ("context_limit_tokens: true\n", "context_limit_tokens must be a positive integer"),
    ("timeout_clear_seconds: -5\n", "timeout_clear_seconds must be a positive number"),
    ("timeout_summarize_seconds: '30'\n", "timeout_summarize_seconds must be a positive"),
    ("model: 42\n", "model must be a 'provider:model' string"),
    ("- a\n- b\n", "expected a mapping"),
    ("context_limit_tokens: [1\n", "not valid YAML"),
])
def test_settings_errors_name_file_and_key(tmp_path: Path, text: str, match: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=match) as info:
        AgentSettings.load(path)
    assert str(path) in str(info.value)


def test_missing_settings_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read settings file"):
        AgentSettings.load(tmp_path / "nope.yaml")


# -- in-process timers with a fake clock ------------------------------------------------------

Scenario = Callable[[AsyncMemory, IdleScheduler, FakeClock], Awaitable[None]]


def with_agent(scenario: Scenario, settings: AgentSettings | None = None) -> None:
    settings = settings or AgentSettings()
    clock = FakeClock()

    async def main() -> None:
        memory = AsyncMemory("memory://", clock=clock.now,
                             **{**settings.options(), "summarizer": ConcatSummarizer()})
        scheduler = IdleScheduler(memory, sleep=clock.sleep)
        try:
            await scenario(memory, scheduler, clock)
        finally:
            await scheduler.stop()
            await memory.close()

    run(main())


async def exchange(memory: AsyncMemory, scheduler: IdleScheduler, n: int = 1) -> None:
    for i in range(n):
        await memory.add("s", {"role": "user", "content": f"step {i}: run the tests"},
                         {"role": "assistant", "content": f"step {i}: 3 tests failed"})
        await scheduler.touch("s")


def test_fold_after_idle_then_clear_after_the_second_timeout() -> None:
    async def scenario(memory: AsyncMemory, scheduler: IdleScheduler, clock: FakeClock) -> None:
        t0 = clock.now()
        await exchange(memory, scheduler, 3)
        assert scheduler.due("s") == t0 + timedelta(seconds=1800)
        clock.advance(1799)
        assert await scheduler.run_due() == []
        clock.advance(1)
        [outcome] = await scheduler.run_due()
        assert outcome.status == "committed" and outcome.messages_folded == 6
        stats = await memory.stats("s")
        assert stats is not None and stats.live_count == 0
        assert await memory.summary("s") is not None
        assert scheduler.due("s") == t0 + timedelta(seconds=1800 + 3600)
        clock.advance(3599)
        assert await scheduler.run_due() == []
        clock.advance(1)
        [outcome] = await scheduler.run_due()
        assert outcome.status == "cleared"
        assert await memory.stats("s") is None and scheduler.due("s") is None

    with_agent(scenario)


def test_activity_resets_the_timers_and_cancels_the_pending_clear() -> None:
    async def scenario(memory: AsyncMemory, scheduler: IdleScheduler, clock: FakeClock) -> None:
        await exchange(memory, scheduler)
        clock.advance(1000)
        await exchange(memory, scheduler)  # activity: the fold moves to +1800 from now
        clock.advance(1000)
        assert await scheduler.run_due() == []
        clock.advance(800)
        [outcome] = await scheduler.run_due()
        assert outcome.status == "committed"
        clock.advance(3000)
        await exchange(memory, scheduler)  # activity before the clear: no clear
        clock.advance(600)
        assert await scheduler.run_due() == []
        assert await memory.stats("s") is not None
        assert scheduler.due("s") == clock.now() + timedelta(seconds=1200)

    with_agent(scenario)


def test_the_timer_task_sleeps_until_due_without_polling() -> None:
    async def scenario(memory: AsyncMemory, scheduler: IdleScheduler, clock: FakeClock) -> None:
        outcomes: list[str] = []
        scheduler.on_outcome = lambda o: outcomes.append(o.status)
        scheduler.start()
        await exchange(memory, scheduler, 2)
        await settle(lambda: clock.sleepers == 1)  # one sleep until the due time
        clock.advance(1800)
        await settle(lambda: outcomes == ["committed"])
        await settle(lambda: clock.sleepers == 1)
        clock.advance(3600)
        await settle(lambda: outcomes == ["committed", "cleared"])
        assert await memory.stats("s") is None

    with_agent(scenario)


async def settle(condition: Callable[[], bool], rounds: int = 2000) -> None:
    for _ in range(rounds):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


def test_scheduler_picks_up_stored_due_marks_after_a_restart() -> None:
    async def scenario(memory: AsyncMemory, scheduler: IdleScheduler, clock: FakeClock) -> None:
        await exchange(memory, scheduler)
        fresh = IdleScheduler(memory, sleep=clock.sleep)
        assert await fresh.load() == 1 and fresh.due("s") == scheduler.due("s")

    with_agent(scenario)


# -- reported usage and utility calls ---------------------------------------------------------


def test_reported_usage_over_the_limit_folds_all_but_the_last_exchange() -> None:
    async def scenario(memory: AsyncMemory, scheduler: IdleScheduler, clock: FakeClock) -> None:
        await exchange(memory, scheduler, 4)
        assert await memory.record_usage("s", 8000) is None  # not over the limit
        outcome = await memory.record_usage("s", 8001)
        assert outcome is not None and outcome.status == "committed"
        live = await memory.messages("s", include_folded=False)
        assert [m.text for m in live] == ["step 3: run the tests", "step 3: 3 tests failed"]

    with_agent(scenario)


def test_utility_calls_leave_history_and_timers_alone() -> None:
    async def scenario(memory: AsyncMemory, scheduler: IdleScheduler, clock: FakeClock) -> None:
        await exchange(memory, scheduler, 2)
        before = (await memory.messages("s"), await memory.stats("s"), scheduler.due("s"))
        clock.advance(600)
        helper = FakeChat(["Reschedule the test run to 15:00."])
        view = await memory.context("s")  # read-only view
        await helper.complete([*view.messages,
                               Message(role="user", content="When should we retry?")],
                              max_tokens=100, temperature=0.0)
        after = (await memory.messages("s"), await memory.stats("s"), scheduler.due("s"))
        assert after == before

    with_agent(scenario)


# -- the same policy out of process -----------------------------------------------------------


def test_worker_runs_the_same_policy_out_of_process(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'agent.db'}"
    settings = AgentSettings()
    now = datetime.now(timezone.utc)

    async def app(session: str, idle_for: float) -> None:
        """The agent process: activity in the past, timers marked in the store."""
        memory = AsyncMemory(db, clock=lambda: now - timedelta(seconds=idle_for),
                             **settings.options())
        await memory.add(session, {"role": "user", "content": "deploy build 7 to staging"},
                         {"role": "assistant", "content": "deploy failed: disk full on node-2"})
        await IdleScheduler(memory).touch(session)
        await memory.close()

    async def main() -> None:
        await app("folds", 1800 + 60)          # idle past the first timeout only
        await app("clears", 1800 + 3600 + 60)  # idle past both
        worker_memory = AsyncMemory(db, **settings.options())
        stats = await Worker(worker_memory, poll_interval=0.01).run(once=True)
        assert stats.committed == 2 and stats.cleared == 1
        folded = await worker_memory.stats("folds")
        assert folded is not None and folded.live_count == 0 and folded.summary_version == 1
        assert await worker_memory.stats("clears") is None
        await worker_memory.close()

    run(main())


def test_contextfold_fold_due_runs_the_policy_from_the_settings_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from contextfold.cli import cli

    path = tmp_path / "agent.db"
    settings_file = write(tmp_path, "timeout_summarize_seconds: 60\ntimeout_clear_seconds: 60\n")
    settings = AgentSettings.load(settings_file)
    now = datetime.now(timezone.utc)

    async def app() -> None:
        memory = AsyncMemory(f"sqlite:///{path}", clock=lambda: now - timedelta(seconds=90),
                             **settings.options())
        await memory.add("s", {"role": "user", "content": "summarize the incident"},
                         {"role": "assistant", "content": "node-2 ran out of disk at 03:10"})
        await IdleScheduler(memory).touch("s")
        await memory.close()

    run(app())
    runner = CliRunner()
    args = ["fold", "--due", "--settings", str(settings_file), "--db", str(path), "--json"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert '"committed": 1' in result.output
    result = runner.invoke(cli, ["fold", "--db", str(path)])
    assert result.exit_code != 0 and "--due" in result.output
