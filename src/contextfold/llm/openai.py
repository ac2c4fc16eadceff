"""OpenAI chat completions, and any server that speaks them (Ollama, vLLM, llama.cpp
server, LM Studio) through ``base_url``. Needs the ``openai`` extra.

The SDK client is built with ``max_retries=0``: retries belong to
``contextfold.llm.retry`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..errors import ConfigError, ProviderError
from ..messages import Message
from .base import (
    Completion,
    FinishReason,
    ProviderChat,
    Usage,
    check_request_allowed,
    json_schema_for,
    parse_structured,
    require_non_empty,
)
from .translate import status_error, transport_error

try:
    import openai
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError(
        'the OpenAI chat model needs the openai SDK: pip install "contextfold[openai]"'
    ) from exc

__all__ = ["OpenAIChat"]

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "other",
    "function_call": "other",
}
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIChat(ProviderChat):
    """A chat model behind the OpenAI chat-completions API.

    ``provider`` is the name in ``provider:model`` (``openai``, ``ollama``,
    ``openai-compatible``); for anything but ``openai`` the request uses ``max_tokens``
    (what compatible servers understand) instead of ``max_completion_tokens``.
    ``structured_output`` asks for a JSON schema response format; turn it off for
    servers that do not support ``response_format={"type": "json_schema"}``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        provider: str = "openai",
        context_window: int | None = None,
        structured_output: bool = True,
        timeout: float = 60.0,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        self.provider = provider
        key = self._configure(
            model,
            example="gpt-4o-mini",
            api_key=api_key,
            key_env=("OPENAI_API_KEY",),
            base_url=base_url,
            base_url_env="OPENAI_BASE_URL",
            default_base_url=DEFAULT_BASE_URL,
            context_window=context_window,
            structured_output=structured_output,
        )
        self._client = openai.AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            max_retries=0,
            timeout=timeout,
            default_headers=dict(default_headers or {}),
        )

    def __repr__(self) -> str:
        return f"OpenAIChat({self.model!r}, provider={self.provider!r}, base_url={self.base_url!r})"

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        response_format: type[BaseModel] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        require_non_empty(self.name, messages)
        check_request_allowed(self.name, self.base_url)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_openai() for m in messages],
            "temperature": temperature,
        }
        params["max_completion_tokens" if self.provider == "openai" else "max_tokens"] = max_tokens
        structured = response_format is not None and self._structured
        if structured:
            assert response_format is not None
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": response_format.__name__,
                    "schema": json_schema_for(response_format),
                    "strict": True,
                },
            }
        if timeout is not None:
            params["timeout"] = timeout
        try:
            response = await self._client.chat.completions.create(**params)
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except openai.APIResponseValidationError as exc:
            raise ProviderError(
                f"{self.name} sent a reply that is not a chat completion",
                kind="invalid_response",
                provider=self.name,
            ) from exc
        except openai.APIConnectionError as exc:
            raise _transport(self.name, exc) from exc
        if not response.choices:
            raise ProviderError(
                f"{self.name} returned no choices", kind="invalid_response", provider=self.name
            )
        choice = response.choices[0]
        text = choice.message.content or ""
        refusal = choice.message.refusal
        raw_reason = choice.finish_reason
        reason: FinishReason = "refusal" if refusal else _FINISH.get(str(raw_reason), "other")
        usage = Usage(
            input_tokens=response.usage.prompt_tokens if response.usage else 0,
            output_tokens=response.usage.completion_tokens if response.usage else 0,
        )
        parsed, parse_error = None, None
        if structured and reason == "stop":
            assert response_format is not None
            parsed, parse_error = parse_structured(text, response_format)
        return Completion(
            text=text,
            parsed=parsed,
            finish_reason=reason,
            usage=usage,
            model=response.model or self.model,
            refusal=refusal,
            raw_finish_reason=str(raw_reason) if raw_reason is not None else None,
            parse_error=parse_error,
        )

    def _status_error(self, exc: openai.APIStatusError) -> ProviderError:
        body = exc.body
        message = exc.message
        if isinstance(body, Mapping) and isinstance(body.get("message"), str):
            message = body["message"]
        return status_error(
            self.name, exc.status_code, message, code=exc.code, headers=exc.response.headers
        )


def _transport(name: str, exc: BaseException) -> ProviderError:
    return transport_error(name, exc) or ProviderError(
        f"{name} connection failed", kind="connection", provider=name
    )
