"""Google Gemini ``generateContent`` through the google-genai SDK. Needs the ``gemini`` extra.

The client is built with ``HttpRetryOptions(attempts=1)``: retries belong to
``contextfold.llm.retry`` alone.
"""

from __future__ import annotations

import re
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
    parse_structured,
    require_non_empty,
    split_system,
)
from .translate import status_error, transport_error

try:
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError(
        'the Gemini chat model needs the google-genai SDK: pip install "contextfold[gemini]"'
    ) from exc

__all__ = ["GeminiChat"]

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
}
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
_DURATION = re.compile(r"^\s*([0-9.]+)s\s*$")


class GeminiChat(ProviderChat):
    provider = "gemini"

    """A Gemini model via ``generateContent``. Keys from ``GEMINI_API_KEY`` or
    ``GOOGLE_API_KEY``; structured output via ``response_json_schema``."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        context_window: int | None = 1_048_576,
        structured_output: bool = True,
        timeout: float = 60.0,
    ) -> None:
        key = self._configure(
            model,
            example="gemini-2.5-flash",
            api_key=api_key,
            key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            base_url=base_url,
            base_url_env="GOOGLE_GEMINI_BASE_URL",
            default_base_url=DEFAULT_BASE_URL,
            context_window=context_window,
            structured_output=structured_output,
        )
        self._client = genai.Client(
            api_key=key,
            http_options=genai_types.HttpOptions(
                base_url=self.base_url,
                timeout=int(timeout * 1000),
                retry_options=genai_types.HttpRetryOptions(attempts=1),
            ),
        )

    async def aclose(self) -> None:
        await self._client.aio.aclose()

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
        config: dict[str, Any] = {"temperature": temperature, "max_output_tokens": max_tokens}
        if system:
            config["system_instruction"] = system
        structured = response_format is not None and self._structured
        if structured:
            assert response_format is not None
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = response_format.model_json_schema()
        contents = [
            genai_types.Content(
                role="model" if m.role == "assistant" else "user",
                parts=[genai_types.Part(text=render_text(m))],
            )
            for m in turns
        ]
        try:
            response = await self._client.aio.models.generate_content(
                model=self.model,
                contents=contents,
                config=genai_types.GenerateContentConfig(**config),
            )
        except genai_errors.APIError as exc:
            raise self._status_error(exc) from exc
        except Exception as exc:
            error = transport_error(self.name, exc)
            if error is None:
                raise
            raise error from exc
        candidate = response.candidates[0] if response.candidates else None
        usage_meta = response.usage_metadata
        usage = Usage(
            input_tokens=(usage_meta.prompt_token_count or 0) if usage_meta else 0,
            output_tokens=(usage_meta.candidates_token_count or 0) if usage_meta else 0,
        )
        if candidate is None:
            blocked = response.prompt_feedback and response.prompt_feedback.block_reason
            return Completion(
                text="",
                finish_reason="content_filter" if blocked else "other",
                usage=usage,
                model=self.model,
                raw_finish_reason=str(blocked) if blocked else None,
            )
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        raw_reason = candidate.finish_reason.value if candidate.finish_reason else None
        reason = _FINISH.get(str(raw_reason), "other")
        parsed, parse_error = None, None
        if structured and reason == "stop":
            assert response_format is not None
            parsed, parse_error = parse_structured(text, response_format)
        return Completion(
            text=text,
            parsed=parsed,
            finish_reason=reason,
            usage=usage,
            model=response.model_version or self.model,
            raw_finish_reason=raw_reason,
            parse_error=parse_error,
        )

    def _status_error(self, exc: genai_errors.APIError) -> ProviderError:
        details = exc.details if isinstance(exc.details, Mapping) else {}
        error = details.get("error", details)
        extra = error.get("details", []) if isinstance(error, Mapping) else []
        headers: dict[str, str] = {}
        response = getattr(exc, "response", None)
        if response is not None and getattr(response, "headers", None) is not None:
            headers = dict(response.headers)
        quota: bool | None = None
        for item in extra if isinstance(extra, list) else []:
            if not isinstance(item, Mapping):
                continue
            kind = str(item.get("@type", ""))
            if kind.endswith("RetryInfo") and "retry-after" not in {h.lower() for h in headers}:
                match = _DURATION.match(str(item.get("retryDelay", "")))
                if match:
                    headers["retry-after"] = match.group(1)
            if kind.endswith("QuotaFailure"):
                ids = " ".join(str(v.get("quotaId", "")) for v in item.get("violations", []))
                quota = "PerDay" in ids
        if exc.code == 429 and quota is None:
            quota = False
        return status_error(
            self.name,
            int(exc.code or 0),
            str(exc.message or exc.status or ""),
            code=str(exc.status) if exc.status else None,
            headers=headers,
            quota=quota,
        )
