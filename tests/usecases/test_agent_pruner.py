"""Use case 5: an agent context pruner with the ``agent`` preset."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from contextfold import Memory, Message, SummarizationError, TokenBudget, ToolCall
from contextfold.errors import ProviderError
from contextfold.llm import RetryPolicy
from contextfold.summarizers.llm import LLMSummarizer
from contextfold.summarizers.metadata import WithMetadata
from contextfold.summarizers.prompts import build_prompt
from contextfold.testing import FakeChat

TASK = "Goal: make CI green on branch fix-42. Constraint: do not touch the public API."


def agent_turns() -> list[Message]:
    return [
        Message(role="user", content="Fix the failing test in tests/test_api.py; keep the API."),
        Message(role="assistant", content="Plan: 1) run tests 2) read the failure 3) patch.",
                tool_calls=(ToolCall("c1", "run_tests", '{"path": "tests"}'),)),
        Message(role="tool", tool_call_id="c1",
                content="FAILED tests/test_api.py::test_limits - KeyError: 'max_tokens'"),
        Message(role="assistant", content="Decision: add a default for max_tokens in config.py."),
    ]


def test_build_prompt_holds_turns_roles_task_context_and_instructions() -> None:
    turns = agent_turns()
    original = copy.deepcopy(turns)
    prompt = build_prompt(turns, TASK, preset="agent", nonce="abc123")
    assert prompt == build_prompt(turns, TASK, preset="agent", nonce="abc123")  # pure
    assert turns == original  # the caller's history is not mutated
    for label in ("[USER]:", "[ASSISTANT]:", "[TOOL]:"):
        assert label in prompt.user
    for turn in turns:
        assert turn.text.splitlines()[0] in prompt.user
    assert "run_tests" in prompt.user
    transcript_end = prompt.user.index("</transcript-abc123>")
    assert prompt.user.index("## Active Task Context") > transcript_end
    assert prompt.user.index(TASK) > prompt.user.index("## Active Task Context")
    for instruction in ("goal", "plan", "most recent failing observation",
                        "key decisions", "onstraints", "Omit routine tool calls"):
        assert instruction in prompt.system


def add_run(memory: Memory, session: str = "agent") -> None:
    for i in range(6):
        memory.add(session, *[
            Message(role="user", content=f"Iteration {i}: continue with the plan. " + "x " * 60),
            Message(role="assistant", content=f"Running step {i}.",
                    tool_calls=(ToolCall(f"c{i}", "run_tests", "{}"),)),
            Message(role="tool", tool_call_id=f"c{i}", content=f"step {i}: 1 failed " + "y " * 60),
        ])


def test_one_model_call_per_fold_temperature_and_configured_model() -> None:
    chat = FakeChat(name="fake:agent-model")
    task = {"now": TASK}
    summarizer = WithMetadata(LLMSummarizer(chat, preset="agent"),
                              lambda sid: {"task_context": task["now"]})
    with Memory("memory://", summarizer=summarizer,
                policy=TokenBudget(900, keep_last=2)) as memory:
        add_run(memory)
        usage = memory.usage("agent")
        assert usage.folds >= 1 and chat.calls == usage.folds == usage.calls
        check_every_message_kept(memory)
        assert all(r.temperature == 0.1 for r in chat.requests)
        assert "## Active Task Context" in chat.requests[0].user and TASK in chat.requests[0].user
        assert memory.ledger("agent")[0].model == "fake:agent-model"
        task["now"] = "Goal: ship the fix. Step 3 of 3."
        memory.fold("agent", force=True)
        assert "Step 3 of 3" in chat.requests[-1].user  # the task context is read per fold


def check_every_message_kept(memory: Memory) -> None:
    live = memory.messages("agent", include_folded=False)
    assert [m.seq for m in memory.messages("agent")] == list(range(1, 19))
    summary = memory.summary("agent")
    assert summary is not None and live[0].seq == summary.through_seq + 1


def failing_summarizer() -> LLMSummarizer:
    error = ProviderError("invalid api key", kind="auth", provider="openai", status=401)
    return LLMSummarizer(FakeChat([error]), preset="agent", retry=RetryPolicy(max_retries=0))


def test_provider_failure_raises_summarization_error_with_cause_when_asked() -> None:
    with Memory("memory://", summarizer=failing_summarizer(), policy=TokenBudget(900),
                fold="manual", raise_errors=True) as memory:
        add_run(memory)
        before = memory.messages("agent")
        with pytest.raises(SummarizationError) as info:
            memory.fold("agent", force=True)
        assert isinstance(info.value.__cause__, ProviderError)
        assert info.value.__cause__.status == 401
        assert memory.messages("agent") == before and memory.summary("agent") is None


def test_provider_failure_without_raise_is_a_failed_outcome() -> None:
    options: dict[str, Any] = {"summarizer": failing_summarizer(), "policy": TokenBudget(900),
                               "fold": "manual"}
    with Memory("memory://", **options) as memory:
        add_run(memory)
        outcome = memory.fold("agent", force=True)
        assert outcome.status == "failed" and isinstance(outcome.error, SummarizationError)
        assert isinstance(outcome.error.__cause__, ProviderError)
        assert memory.ledger("agent")[0].error_class == "ProviderError"
