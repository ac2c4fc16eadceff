"""The chat-model extension point: one abstract method, :meth:`ChatModel.complete`.

A chat model sends one request and returns one :class:`Completion`; it does not retry
(``contextfold.llm.retry`` is the one retry layer) and does not judge the output (the
summarizer checks refusals, truncation, empty or schema-invalid text). Provider SDK
errors come out as :class:`~contextfold.errors.ProviderError` with ``__cause__`` set.

:func:`block_model_requests` is the switch that keeps tests from reaching a real
provider: while it is on, provider modules refuse any base URL that is not loopback.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from ..errors import ConfigError
from ..messages import Message

__all__ = [
    "BLOCK_ENV_VAR",
    "ChatModel",
    "Completion",
    "FinishReason",
    "Usage",
    "block_model_requests",
    "check_request_allowed",
    "model_requests_blocked",
    "parse_structured",
]

FinishReason = Literal["stop", "length", "refusal", "content_filter", "other"]
"""Provider-neutral stop reasons. ``length``: the output hit ``max_tokens`` (truncated);
``refusal``: the model declined; ``content_filter``: the provider's filter cut it."""

#: Set to ``1`` to block real provider calls in a whole process (CI, test runs).
BLOCK_ENV_VAR = "CONTEXTFOLD_BLOCK_MODEL_REQUESTS"


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported token usage of one call (0 when the provider did not say)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True, slots=True)
class Completion:
    """One model reply.

    ``parsed`` is the ``response_format`` model instance when structured output was asked
    for and the reply validated; otherwise ``None`` and ``parse_error`` says why (the raw
    reply stays in ``text``). ``raw_finish_reason`` keeps the provider's own word.
    """

    text: str
    parsed: BaseModel | None = None
    finish_reason: FinishReason = "stop"
    usage: Usage = Usage()
    model: str = ""
    refusal: str | None = None
    raw_finish_reason: str | None = None
    parse_error: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """An async chat model. Implementations: ``OpenAIChat``, ``AnthropicChat``,
    ``GeminiChat``, and the doubles in ``contextfold.testing``."""

    @property
    def name(self) -> str:
        """``provider:model``, recorded in the ledger."""
        ...

    @property
    def context_window(self) -> int | None:
        """Input tokens the model accepts, if known; the summarizer chunks to fit it."""
        ...

    @property
    def supports_structured_output(self) -> bool:
        """Whether ``response_format`` is honoured (JSON schema enforced by the provider)."""
        ...

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        response_format: type[BaseModel] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Send one request; raise ``ProviderError`` (cause attached) on failure.

        Must not retry: a request that failed is retried, if at all, by the one layer
        in ``contextfold.llm.retry``.
        """
        ...


# -- blocking real requests in tests ------------------------------------------------------

_blocked: list[bool] = []


@contextlib.contextmanager
def block_model_requests(blocked: bool = True) -> Iterator[None]:
    """Refuse real provider requests inside the ``with`` block (or allow them again with
    ``blocked=False``). Loopback URLs (the fake servers of ``contextfold.testing``) are
    always allowed. The env var ``CONTEXTFOLD_BLOCK_MODEL_REQUESTS=1`` blocks process-wide.
    """
    _blocked.append(blocked)
    try:
        yield
    finally:
        _blocked.pop()


def model_requests_blocked() -> bool:
    if _blocked:
        return _blocked[-1]
    return os.environ.get(BLOCK_ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def check_request_allowed(provider: str, base_url: str | None) -> None:
    """Raise ``ConfigError`` if real model requests are blocked and ``base_url`` is not
    loopback. Provider modules call this before every request."""
    if not model_requests_blocked() or _is_loopback(base_url):
        return
    raise ConfigError(
        f"real {provider} model requests are blocked (contextfold.testing.block_model_requests "
        f"or {BLOCK_ENV_VAR}); target {base_url or 'the default endpoint'!r}. "
        "Use contextfold.testing.FakeChat or a local provider server in tests"
    )


def _is_loopback(base_url: str | None) -> bool:
    if not base_url:
        return False
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- helpers shared by provider modules ---------------------------------------------------


def parse_structured(
    text: str, response_format: type[BaseModel]
) -> tuple[BaseModel | None, str | None]:
    """Validate a JSON reply against ``response_format``: ``(instance, None)`` or
    ``(None, reason)``. The reason names the problem, never the reply's content."""
    try:
        data: Any = json.loads(_strip_code_fence(text))
    except json.JSONDecodeError as exc:
        return None, f"reply is not valid JSON ({exc.msg} at position {exc.pos})"
    try:
        return response_format.model_validate(data), None
    except PydanticValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        return None, f"reply does not match {response_format.__name__}: {problems}"


def _strip_code_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and stripped.count("\n") >= 1:
        stripped = stripped[stripped.index("\n") + 1 : -3]
    return stripped


def json_schema_for(response_format: type[BaseModel]) -> dict[str, Any]:
    """A strict JSON schema (no extra properties, every field required) for providers
    that enforce schemas (OpenAI ``strict``, Anthropic ``output_config``)."""
    schema = response_format.model_json_schema()
    _close_objects(schema)
    return schema


def _close_objects(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            node["additionalProperties"] = False
            node["required"] = list(node["properties"])
        for value in node.values():
            _close_objects(value)
    elif isinstance(node, list):
        for value in node:
            _close_objects(value)


def split_system(messages: Sequence[Message]) -> tuple[str, list[Message]]:
    """Providers with a separate system field (Anthropic, Gemini): the system messages
    joined, and the rest in order."""
    system = "\n\n".join(m.text for m in messages if m.role == "system")
    return system, [m for m in messages if m.role != "system"]


def require_non_empty(provider: str, messages: Sequence[Message]) -> None:
    """Every provider rejects a request with no user turn; say so before sending it."""
    if not any(m.role != "system" for m in messages):
        raise ConfigError(f"{provider}: a request needs at least one non-system message")


class ProviderChat:
    """What the SDK-backed chat models share: model identity, the API key and base URL
    from arguments or the environment (with the error that names what to set), and the
    capability flags. Subclasses build their SDK client and implement ``complete``."""

    provider: str = ""

    def _configure(
        self,
        model: str,
        *,
        example: str,
        api_key: str | None,
        key_env: Sequence[str],
        base_url: str | None,
        base_url_env: str,
        default_base_url: str,
        context_window: int | None,
        structured_output: bool,
    ) -> str:
        """Set the shared attributes; return the API key."""
        if not model:
            raise ConfigError(f"{type(self).__name__} needs a model name, e.g. {example!r}")
        key = api_key or next((os.environ[v] for v in key_env if os.environ.get(v)), None)
        if not key:
            names = " (or ".join(key_env) + ")" * (len(key_env) - 1)
            raise ConfigError(
                f"no API key for {self.provider}:{model}; set {names} or pass api_key=..."
            )
        self.model = model
        self.base_url = base_url or os.environ.get(base_url_env) or default_base_url
        self._context_window = context_window
        self._structured = structured_output
        return key

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def context_window(self) -> int | None:
        return self._context_window

    @property
    def supports_structured_output(self) -> bool:
        return self._structured

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"
