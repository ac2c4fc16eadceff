"""Use case 3: a personal assistant session with a rolling summary (30 / 20 / 15,000 / 10)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from contextfold import ConfigError, Memory, Message
from contextfold.context import SUMMARY_HEADER
from contextfold.rolling import RollingSummary
from contextfold.summarizers.llm import LLMSummarizer
from contextfold.testing import ConcatSummarizer, FakeChat, FunctionSummarizer


def summarizer() -> FunctionSummarizer:
    return FunctionSummarizer(lambda r: f"The user and the assistant exchanged {len(r.messages)} "
                                        "messages about travel plans.")


def messages_with_candidate_tokens(memory: Memory, count: int, candidate_tokens: int,
                                   candidates: int = 20) -> list[Message]:
    """``count`` alternating messages whose oldest ``candidates`` (the policy's candidates:
    all but the newest ``keep_last``) hold exactly ``candidate_tokens`` tokens as the engine
    counts them."""
    engine = memory.engine

    def msg(i: int, words: int) -> Message:
        role = "user" if i % 2 == 0 else "assistant"
        return Message(role=role, content="plan" + " plan" * (words - 1), id=f"m{i + 1}")

    def tokens(m: Message) -> int:
        return engine.prepare([m])[0].tokens

    per = candidate_tokens // candidates
    out = [msg(i, per) for i in range(candidates - 1)]
    used = sum(tokens(m) for m in out)
    words = max(1, candidate_tokens - used)
    last = msg(candidates - 1, words)
    while tokens(last) > candidate_tokens - used:
        words -= 1
        last = msg(candidates - 1, words)
    while tokens(last) < candidate_tokens - used:
        words += 1
        last = msg(candidates - 1, words)
    out.append(last)
    assert sum(tokens(m) for m in out) == candidate_tokens
    out += [msg(i, 5) for i in range(candidates, count)]
    return out


@pytest.mark.parametrize(("count", "tokens", "folds"), [
    (30, 15_001, False),  # 30 messages do not fold, whatever the tokens
    (31, 15_000, False),  # 15,000 tokens in all but the newest 10 do not fold
    (31, 15_001, True),   # 31 messages and 15,001 tokens do
])
def test_exact_thresholds(count: int, tokens: int, folds: bool) -> None:
    with Memory("memory://", **{**RollingSummary().options(), "summarizer": summarizer()}) as m:
        msgs = messages_with_candidate_tokens(m, count, tokens, candidates=count - 10)
        for msg in msgs[:-1]:
            assert m.add("s", msg).fold is None
        result = m.add("s", msgs[-1])
        if not folds:
            assert result.fold is None or result.fold.status == "skipped"
            assert m.summary("s") is None and len(m.messages("s", include_folded=False)) == count
            return
        outcome = result.fold
        assert outcome is not None and outcome.status == "committed"
        assert outcome.messages_folded == 20
        assert outcome.folded_ids == tuple(f"m{i}" for i in range(1, 21))
        assert outcome.summary is not None and "travel plans" in outcome.summary.text
        live = m.messages("s", include_folded=False)
        assert len(live) == count - 20 and len(live) >= 10
        context = m.context("s")
        block = [x for x in context.messages if x.role == "system" and SUMMARY_HEADER in x.text]
        assert block and "travel plans" in block[0].text
        assert [x.id for x in context.messages if x.role != "system"][-10:] == [
            f"m{i}" for i in range(count - 9, count + 1)]


def test_defaults() -> None:
    recipe = RollingSummary()
    assert (recipe.max_messages, recipe.fold_messages, recipe.min_tokens, recipe.keep_last,
            recipe.max_output_tokens, recipe.word_limit) == (30, 20, 15_000, 10, 1024, 500)
    policy = recipe.policy()
    assert (policy.max_messages, policy.fold, policy.min_tokens, policy.keep_last) == (
        30, 20, 15_000, 10)
    llm = recipe.summarizer(FakeChat())
    assert isinstance(llm, LLMSummarizer)
    assert (llm.preset, llm.max_output_tokens, llm.word_limit) == ("conversation", 1024, 500)
    assert type(recipe.summarizer()).__name__ == "ExtractiveSummarizer"


def test_conversation_preset_prompt_and_output_limit() -> None:
    chat = FakeChat()
    recipe = RollingSummary(max_messages=4, fold_messages=3, min_tokens=0, keep_last=1)
    with Memory("memory://", **recipe.options(model=chat)) as m:
        for i in range(5):
            m.add("s", {"role": "user" if i % 2 == 0 else "assistant",
                        "content": f"message {i} about the Lisbon trip"})
        assert m.summary("s") is not None
    request = chat.requests[0]
    assert request.max_tokens == 1024
    assert "third person" in request.system and "under 500 words" in request.system
    for topic in ("topics", "decisions", "action items", "emotional tone"):
        assert topic in request.system


def test_custom_numbers() -> None:
    recipe = RollingSummary(max_messages=6, fold_messages=3, min_tokens=10, keep_last=2)
    with Memory("memory://", **{**recipe.options(), "summarizer": summarizer()}) as m:
        for i in range(6):
            assert m.add("s", {"role": "user", "content": f"a long enough message {i}",
                               "id": f"m{i + 1}"}).fold is None
        outcome = m.add("s", {"role": "user", "content": "the seventh", "id": "m7"}).fold
        assert outcome is not None and outcome.status == "committed"
        assert outcome.folded_ids == ("m1", "m2", "m3") and outcome.messages_folded == 3
    with pytest.raises(ConfigError):
        RollingSummary(max_messages=5, keep_last=10)
    with pytest.raises(ConfigError):
        RollingSummary(min_tokens=-1)


def test_empty_session() -> None:
    with Memory("memory://", **RollingSummary().options()) as m:
        assert m.fold("nobody").status == "skipped"
        assert m.summary("nobody") is None and len(m.context("nobody")) == 0


def test_failed_summarization_keeps_every_message_and_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recipe = RollingSummary(max_messages=4, fold_messages=3, min_tokens=0, keep_last=1)
    options: dict[str, Any] = {**recipe.options(),
                               "summarizer": ConcatSummarizer(fail_with=TimeoutError("slow"))}
    with Memory("memory://", **options) as m, caplog.at_level(logging.WARNING):
        for i in range(4):
            m.add("s", {"role": "user", "content": f"message {i}"})
        outcome = m.add("s", {"role": "user", "content": "message 4"}).fold
        assert outcome is not None and outcome.status == "failed"
        assert outcome.summary is None and outcome.folded_ids == () and not outcome.ok
        assert m.summary("s") is None and len(m.messages("s", include_folded=False)) == 5
        assert any("TimeoutError" in r.getMessage() for r in caplog.records)
        assert m.ledger("s")[0].error_class == "TimeoutError"
