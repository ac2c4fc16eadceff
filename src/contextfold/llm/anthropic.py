"""Anthropic messages API. Needs the ``anthropic`` extra.

The SDK client is built with ``max_retries=0``: retries belong to
``contextfold.llm.retry`` alone (which also retries Anthropic's 529 "overloaded").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..errors import ConfigError, ProviderError
from ..messages import Message, render_text
from .base import (
    Completion,
    FinishReason,
    ProviderChat,
    Usage,
    check_request_allowed,
    json_schema_for,
    parse_structured,
    require_non_empty,
    split_system,
)
from .translate import status_error, transport_error

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError(
        'the Anthropic chat model needs the anthropic SDK: pip install "contextfold[anthropic]"'
    ) from exc

__all__ = ["AnthropicChat"]

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
}
DEFAULT_BASE_URL = "https://api.anthropic.com"


class AnthropicChat(ProviderChat):
    provider = "anthropic"

    """A Claude model behind the Anthropic messages API. System messages go to the
    ``system`` field; structured output uses ``output_config.format`` (JSON schema).
    ``send_temperature=False`` for models that reject sampling parameters."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        context_window: int | None = 200_000,
        structured_output: bool = True,
        send_temperature: bool = True,
        timeout: float = 60.0,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        key = self._configure(
            model,
            example="claude-haiku-4-5",
            api_key=api_key,
            key_env=("ANTHROPIC_API_KEY",),
            base_url=base_url,
            base_url_env="ANTHROPIC_BASE_URL",
            default_base_url=DEFAULT_BASE_URL,
            context_window=context_window,
            structured_output=structured_output,
        )
        self._send_temperature = send_temperature
        self._client = anthropic.AsyncAnthropic(
            api_key=key,
            base_url=self.base_url,
            max_retries=0,
            timeout=timeout,
            default_headers=dict(default_headers or {}),
        )

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
        system, turns = split_system(messages)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": _alternating(turns),
        }
        if self._send_temperature:
            # The 1.x+ SDK dropped sampling parameters from its signature; the API still
            # takes them on models that support them.
            params["extra_body"] = {"temperature": temperature}
        if system:
            params["system"] = system
        structured = response_format is not None and self._structured
        if structured:
            assert response_format is not None
            params["output_config"] = {
                "format": {"type": "json_schema", "schema": json_schema_for(response_format)}
            }
        if timeout is not None:
            params["timeout"] = timeout
        try:
            response = await self._client.messages.create(**params)
        except anthropic.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except anthropic.APIResponseValidationError as exc:
            raise ProviderError(
                f"{self.name} sent a reply that is not a message",
                kind="invalid_response",
                provider=self.name,
            ) from exc
        except anthropic.APIConnectionError as exc:
            raise transport_error(self.name, exc) or ProviderError(
                f"{self.name} connection failed", kind="connection", provider=self.name
            ) from exc
        text = "".join(
            block.text for block in response.content if getattr(block, "type", "") == "text"
        )
        raw_reason = response.stop_reason
        reason = _FINISH.get(str(raw_reason), "other")
        usage = Usage(response.usage.input_tokens or 0, response.usage.output_tokens or 0)
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
            refusal=text if reason == "refusal" else None,
            raw_finish_reason=str(raw_reason) if raw_reason is not None else None,
            parse_error=parse_error,
        )

    def _status_error(self, exc: anthropic.APIStatusError) -> ProviderError:
        body = exc.body
        message, code = exc.message, None
        if isinstance(body, Mapping):
            error = body.get("error", body)
            if isinstance(error, Mapping):
                message = str(error.get("message", message))
                code = str(error["type"]) if error.get("type") else None
        return status_error(
            self.name, exc.status_code, message, code=code, headers=exc.response.headers
        )


def _alternating(turns: Sequence[Message]) -> list[dict[str, Any]]:
    """Anthropic wants user/assistant turns alternating and starting with the user: tool
    results and consecutive turns of one role are merged into text."""
    out: list[dict[str, Any]] = []
    for message in turns:
        role = "assistant" if message.role == "assistant" else "user"
        text = render_text(message)
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": "(conversation continues)"})
    return out
