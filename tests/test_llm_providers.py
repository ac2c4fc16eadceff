"""Each provider module through its real SDK against a local server speaking its wire
format. No test patches an SDK: the SDKs make real HTTP requests to 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pytest

from contextfold.errors import ConfigError, ProviderError
from contextfold.llm import (
    AnthropicChat,
    ChatModel,
    Deadline,
    GeminiChat,
    OpenAIChat,
    RetryPolicy,
    complete_with_retry,
)
from contextfold.messages import Message, StoredMessage
from contextfold.summarizers.base import SummaryRequest
from contextfold.summarizers.llm import (
    LLMSummarizationError,
    LLMSummarizer,
    SummaryOutput,
    SummaryOutputError,
)
from contextfold.summarizers.prompts import build_prompt
from contextfold.testing import (
    AnthropicServer,
    GeminiServer,
    OpenAIServer,
    ServerReply,
    block_model_requests,
)
from contextfold.testing.provider_servers import FakeProviderServer
from contextfold.tokens import get_counter

FAST = RetryPolicy(max_retries=2, initial_delay=0.001, max_delay=0.01, attempt_timeout=5)


@dataclass(frozen=True)
class Provider:
    name: str
    server: type[FakeProviderServer]
    chat: Callable[..., ChatModel]
    refusal_problem: str


PROVIDERS = [
    Provider(
        "openai",
        OpenAIServer,
        lambda url, **kw: OpenAIChat("gpt-4o-mini", api_key="k", base_url=url, **kw),
        "refusal",
    ),
    Provider(
        "anthropic",
        AnthropicServer,
        lambda url, **kw: AnthropicChat("claude-haiku-4-5", api_key="k", base_url=url, **kw),
        "refusal",
    ),
    Provider(
        "gemini",
        GeminiServer,
        lambda url, **kw: GeminiChat("gemini-2.5-flash", api_key="k", base_url=url, **kw),
        "content_filter",
    ),
]


@pytest.fixture(autouse=True)
def _no_real_models() -> Iterator[None]:
    with block_model_requests():
        yield


@pytest.fixture(params=PROVIDERS, ids=[p.name for p in PROVIDERS])
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


MESSAGES = [Message("system", "Be brief."), Message("user", "Say hello.")]


def make_request(
    n: int = 4, previous: str = "", max_tokens: int = 400, words: int = 0
) -> SummaryRequest:
    ts = datetime(2025, 3, 1, 9, 30, tzinfo=timezone.utc)
    messages = [
        StoredMessage(
            seq=i + 1,
            message=Message(
                "user" if i % 2 == 0 else "assistant",
                f"turn {i + 1}: about topic {i}" + " lorem" * words,
                timestamp=ts,
            ),
            tokens=10,
        )
        for i in range(n)
    ]
    return SummaryRequest("s1", previous, messages, max_tokens, get_counter("approx"))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def call(chat: ChatModel, **kw: Any) -> Any:
    return await chat.complete(MESSAGES, max_tokens=64, temperature=0.1, **kw)


# -- the wire: success, usage, structured output ------------------------------------------


def test_success_reports_text_and_usage(provider: Provider) -> None:
    with provider.server([ServerReply.ok("Hello!", input_tokens=42, output_tokens=7)]) as server:
        completion = run(call(provider.chat(server.url)))
    assert completion.text == "Hello!"
    assert completion.finish_reason == "stop"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (42, 7)
    assert "Be brief." in server.requests[0].prompt and "Say hello." in server.requests[0].prompt


def test_structured_output_is_requested_and_parsed(provider: Provider) -> None:
    with provider.server([ServerReply.ok("The user said hello.")]) as server:
        completion = run(call(provider.chat(server.url), response_format=SummaryOutput))
    assert server.requests[0].structured
    assert isinstance(completion.parsed, SummaryOutput)
    assert completion.parsed.summary == "The user said hello."


def test_temperature_and_max_tokens_reach_the_wire(provider: Provider) -> None:
    with provider.server() as server:
        run(call(provider.chat(server.url)))
    body = json.dumps(server.requests[0].body)
    assert '"temperature": 0.1' in body
    assert "64" in body


def test_invalid_json_for_structured_output_is_a_parse_error(provider: Provider) -> None:
    with provider.server([ServerReply.invalid_json()]) as server:
        completion = run(call(provider.chat(server.url), response_format=SummaryOutput))
    assert completion.parsed is None
    assert completion.parse_error and "JSON" in completion.parse_error


# -- the retry layer ----------------------------------------------------------------------


def test_429_with_retry_after_is_retried_after_the_asked_delay(provider: Provider) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    with provider.server(
        [ServerReply.rate_limit(retry_after=0.25), ServerReply.ok("ok")]
    ) as server:
        completion = run(
            complete_with_retry(
                provider.chat(server.url),
                MESSAGES,
                max_tokens=64,
                temperature=0.1,
                response_format=None,
                policy=FAST,
                deadline=Deadline(30),
                sleep=sleep,
            )
        )
    assert completion.text == "ok"
    assert len(server.requests) == 2
    assert slept == [pytest.approx(0.25)]


def test_retry_after_ms_wins_over_retry_after() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    reply = ServerReply.rate_limit(retry_after=5, retry_after_ms=20)
    with OpenAIServer([reply, ServerReply.ok("ok")]) as server:
        run(
            complete_with_retry(
                PROVIDERS[0].chat(server.url),
                MESSAGES,
                max_tokens=64,
                temperature=0.1,
                response_format=None,
                policy=FAST,
                deadline=Deadline(30),
                sleep=sleep,
            )
        )
    assert slept == [pytest.approx(0.02)]


def test_500_then_success(provider: Provider) -> None:
    with provider.server([ServerReply.server_error(), ServerReply.ok("fine")]) as server:
        summarizer = LLMSummarizer(provider.chat(server.url), retry=FAST)
        result = run(summarizer.summarize(make_request()))
    assert result.text == "fine"
    assert result.calls == 2
    assert len(server.requests) == 2


def test_anthropic_529_overloaded_is_retried() -> None:
    with AnthropicServer([ServerReply.overloaded(), ServerReply.ok("fine")]) as server:
        result = run(
            LLMSummarizer(PROVIDERS[1].chat(server.url), retry=FAST).summarize(make_request())
        )
    assert result.text == "fine" and len(server.requests) == 2


@pytest.mark.parametrize("max_retries", [0, 1, 3])
def test_retries_never_exceed_the_configured_total(provider: Provider, max_retries: int) -> None:
    policy = RetryPolicy(max_retries=max_retries, initial_delay=0.001, max_delay=0.002)
    with provider.server([ServerReply.server_error(503)] * 10) as server:
        summarizer = LLMSummarizer(provider.chat(server.url), retry=policy)
        with pytest.raises(LLMSummarizationError) as info:
            run(summarizer.summarize(make_request()))
    assert len(server.requests) == max_retries + 1
    assert info.value.calls == max_retries + 1
    assert isinstance(info.value.__cause__, ProviderError)


def test_quota_errors_are_not_retried(provider: Provider) -> None:
    with (
        provider.server([ServerReply.quota(), ServerReply.ok("never")]) as server,
        pytest.raises(LLMSummarizationError) as info,
    ):
        run(LLMSummarizer(provider.chat(server.url), retry=FAST).summarize(make_request()))
    assert len(server.requests) == 1
    cause = info.value.__cause__
    assert isinstance(cause, ProviderError) and cause.kind == "quota"


def test_other_4xx_are_not_retried(provider: Provider) -> None:
    with (
        provider.server([ServerReply.error(401, "bad key"), ServerReply.ok("never")]) as server,
        pytest.raises(LLMSummarizationError) as info,
    ):
        run(LLMSummarizer(provider.chat(server.url), retry=FAST).summarize(make_request()))
    assert len(server.requests) == 1
    assert isinstance(info.value.__cause__, ProviderError)
    assert info.value.__cause__.kind == "auth"
    assert info.value.__cause__.__cause__ is not None  # the SDK's own exception


def test_timeout_is_retried_then_succeeds(provider: Provider) -> None:
    policy = RetryPolicy(max_retries=1, initial_delay=0.001, attempt_timeout=0.5)
    with provider.server([ServerReply.hang(10), ServerReply.ok("after the timeout")]) as server:
        result = run(
            LLMSummarizer(provider.chat(server.url), retry=policy).summarize(make_request())
        )
    assert result.text == "after the timeout"
    assert len(server.requests) == 2


def test_the_fold_deadline_bounds_all_attempts(provider: Provider) -> None:
    policy = RetryPolicy(max_retries=5, initial_delay=0.001, attempt_timeout=10)
    with provider.server([ServerReply.hang(10)] * 6) as server:
        summarizer = LLMSummarizer(provider.chat(server.url), retry=policy, deadline=0.6)
        loop_start = asyncio.run(_timed(summarizer.summarize(make_request())))
    assert isinstance(loop_start[1], LLMSummarizationError)
    assert loop_start[0] < 3.0
    assert "timeout" in str(loop_start[1])


async def _timed(coro: Any) -> tuple[float, BaseException | None]:
    start = asyncio.get_running_loop().time()
    try:
        await coro
    except BaseException as exc:
        return asyncio.get_running_loop().time() - start, exc
    return asyncio.get_running_loop().time() - start, None


# -- output checks through the wire -------------------------------------------------------


@pytest.mark.parametrize(
    "reply, problem",
    [
        (ServerReply.truncated(), "truncated"),
        (ServerReply.invalid_json(), "schema_invalid"),
    ],
)
def test_bad_output_is_a_failed_fold(provider: Provider, reply: ServerReply, problem: str) -> None:
    with provider.server([reply]) as server, pytest.raises(LLMSummarizationError) as info:
        run(LLMSummarizer(provider.chat(server.url), retry=FAST).summarize(make_request()))
    cause = info.value.__cause__
    assert isinstance(cause, SummaryOutputError) and cause.problem == problem
    assert len(server.requests) == 1


def test_refusal_is_a_failed_fold(provider: Provider) -> None:
    with (
        provider.server([ServerReply.refusal()]) as server,
        pytest.raises(LLMSummarizationError) as info,
    ):
        run(LLMSummarizer(provider.chat(server.url), retry=FAST).summarize(make_request()))
    cause = info.value.__cause__
    assert isinstance(cause, SummaryOutputError)
    assert cause.problem == provider.refusal_problem
    assert "sorry" not in str(info.value).lower()  # the refusal text is never the summary


def test_context_length_error_splits_the_input(provider: Provider) -> None:
    request = make_request(n=8, words=50)
    whole = len(build_prompt([m.message for m in request.messages]).text)
    frame = len(build_prompt([]).text)
    limit = frame + (whole - frame) * 3 // 4  # the whole span is too long, half of it fits
    with provider.server(context_limit=limit) as server:
        result = run(LLMSummarizer(provider.chat(server.url), retry=FAST).summarize(request))
    rejected = [r for r in server.requests if len(r.prompt) > limit]
    accepted = [r for r in server.requests if len(r.prompt) <= limit]
    assert rejected and len(accepted) >= 2
    prompts = [r.prompt for r in server.requests]
    assert len(set(prompts)) == len(prompts) or _only_nonce_differs(prompts)
    for i in range(1, 9):  # every turn reached the model in an accepted request: none trimmed
        assert any(f"turn {i}:" in r.prompt for r in accepted)
    assert result.text and result.calls == len(server.requests)


def _only_nonce_differs(prompts: list[str]) -> bool:
    import re

    stripped = [re.sub(r"[0-9a-f]{16}", "N", p) for p in prompts]
    return len(set(stripped)) == len(stripped)


# -- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls, env",
    [
        (OpenAIChat, "OPENAI_API_KEY"),
        (AnthropicChat, "ANTHROPIC_API_KEY"),
        (GeminiChat, "GEMINI_API_KEY"),
    ],
)
def test_missing_key_names_the_env_var(
    cls: Callable[..., ChatModel], env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match=env):
        cls("some-model")


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    with OpenAIServer() as server:
        run(call(OpenAIChat("gpt-4o-mini", base_url=server.url)))
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_blocked_requests_never_leave_the_machine(provider: Provider) -> None:
    chat = provider.chat(None)
    with pytest.raises(ConfigError, match="blocked"):
        run(call(chat))


def test_loopback_servers_stay_allowed_while_blocked(provider: Provider) -> None:
    with provider.server() as server:
        completion = run(call(provider.chat(server.url)))
    assert completion.text
