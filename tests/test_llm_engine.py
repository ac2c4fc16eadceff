"""The LLM summarizer inside the engine and the CLI: a failed LLM fold changes nothing and
is recorded; a successful one records the provider's usage; ``--model`` on the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextfold import Memory, MessageCount, SummarizationError
from contextfold.cli import cli as main
from contextfold.llm import OpenAIChat, RetryPolicy
from contextfold.summarizers.llm import LLMSummarizer
from contextfold.testing import OpenAIServer, ServerReply, block_model_requests

FAST = RetryPolicy(max_retries=1, initial_delay=0.001, max_delay=0.002)


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    with block_model_requests():
        yield


def fill(memory: Memory, sid: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        memory.add(sid, {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"})


def memory_with(server: OpenAIServer, **options: object) -> Memory:
    chat = OpenAIChat("gpt-4o-mini", api_key="k", base_url=server.url)
    summarizer = LLMSummarizer(chat, retry=FAST, **options)  # type: ignore[arg-type]
    return Memory("memory://", summarizer=summarizer, policy=MessageCount(6, fold=4), fold="manual")


def test_a_successful_llm_fold_records_provider_usage() -> None:
    reply = ServerReply.ok("The user counted turns.", input_tokens=321, output_tokens=12)
    with OpenAIServer([reply]) as server, memory_with(server) as memory:
        fill(memory, "s", 8)
        outcome = memory.fold("s")
        entry = memory.ledger("s")[0]
    assert outcome.status == "committed"
    assert memory_summary_text(outcome) == "The user counted turns."
    assert (entry.outcome, entry.input_tokens, entry.output_tokens, entry.calls) == (
        "committed",
        321,
        12,
        1,
    )
    assert entry.model == "openai:gpt-4o-mini"


def memory_summary_text(outcome: object) -> str:
    summary = getattr(outcome, "summary", None)
    return summary.text if summary is not None else ""


@pytest.mark.parametrize(
    "failure",
    [
        [ServerReply.server_error(), ServerReply.server_error()],
        [ServerReply.refusal()],
        [ServerReply.truncated()],
        [ServerReply.invalid_json()],
        [ServerReply.quota()],
    ],
)
def test_a_failed_llm_fold_leaves_store_and_summary_unchanged(failure: list[ServerReply]) -> None:
    first = ServerReply.ok("First summary of turns 0-3.")
    with OpenAIServer([first]) as server, memory_with(server, fact_check=False) as memory:
        fill(memory, "s", 8)
        assert memory.fold("s").status == "committed"
        fill(memory, "s", 6, start=8)
        before = (memory.summary("s"), memory.messages("s"), memory.stats("s"))
        server.script(*failure)
        outcome = memory.fold("s")
        after = (memory.summary("s"), memory.messages("s"), memory.stats("s"))
        ledger = memory.ledger("s")
    assert outcome.status == "failed"
    assert isinstance(outcome.error, SummarizationError)
    assert after == before
    assert before[0] is not None and before[0].text == "First summary of turns 0-3."
    failed = [e for e in ledger if e.outcome == "failed"]
    assert len(failed) == 1 and failed[0].error_class
    assert failed[0].lo == outcome.lo and failed[0].hi == outcome.hi


def test_the_caller_can_ask_for_the_error_instead() -> None:
    with OpenAIServer([ServerReply.refusal()]) as server:
        chat = OpenAIChat("gpt-4o-mini", api_key="k", base_url=server.url)
        memory = Memory(
            "memory://",
            summarizer=LLMSummarizer(chat),
            policy=MessageCount(6, fold=4),
            fold="manual",
            raise_errors=True,
        )
        with memory:
            fill(memory, "s", 8)
            with pytest.raises(SummarizationError) as info:
                memory.fold("s")
            assert memory.summary("s") is None
    assert info.value.__cause__ is not None


def test_cli_replay_and_demo_use_the_model(tmp_path: Path) -> None:
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text(
        "\n".join(
            json.dumps(
                {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " * 40}
            )
            for i in range(30)
        )
        + "\n"
    )
    runner = CliRunner()
    with OpenAIServer() as server:
        model = f"openai-compatible:llama3.2@{server.url}"
        result = runner.invoke(
            main,
            [
                "replay",
                str(transcript),
                "--max-tokens",
                "600",
                "--model",
                model,
                "--db",
                str(tmp_path / "a.db"),
                "--output",
                "stats",
                "--format",
                "json",
            ],
        )
        assert result.exit_code == 0, result.output
        stats = json.loads(result.output)
        assert stats["folds"] >= 1 and stats["failed_folds"] == 0
        assert stats["summarizer_input_tokens"] > 0
        replay_requests = len(server.requests)
        demo = runner.invoke(
            main, ["demo", "--quiet", "--model", model, "--db", str(tmp_path / "b.db")]
        )
        assert demo.exit_code == 0, demo.output
    assert replay_requests >= 1 and len(server.requests) > replay_requests


def test_cli_model_without_a_key_names_the_env_var(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text('{"role": "user", "content": "hi"}\n')
    result = CliRunner().invoke(
        main,
        [
            "replay",
            str(transcript),
            "--max-tokens",
            "600",
            "--model",
            "openai:gpt-4o-mini",
            "--db",
            str(tmp_path / "a.db"),
        ],
    )
    assert result.exit_code == 2
    assert "OPENAI_API_KEY" in result.output
