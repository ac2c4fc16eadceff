"""Provider errors → :class:`~contextfold.errors.ProviderError`, in provider-neutral kinds.

Each provider module extracts (status, message, code, headers) from its SDK's exception
and calls :func:`status_error`; transport failures go through :func:`transport_error`.
The *kind* decides everything downstream: retry (``contextfold.llm.retry``), splitting
the input (``context_length``), and what the ledger records.
"""

from __future__ import annotations

import asyncio
import email.utils
import re
import time
from collections.abc import Mapping
from typing import Literal

from ..errors import ProviderError

__all__ = ["ErrorKind", "retry_after_from_headers", "status_error", "transport_error"]

ErrorKind = Literal[
    "auth",
    "permission",
    "not_found",
    "bad_request",
    "context_length",
    "quota",
    "rate_limit",
    "timeout",
    "conflict",
    "server",
    "overloaded",
    "connection",
    "invalid_response",
]

_CONTEXT_LENGTH = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens"
    r"|exceeds? the (?:maximum|available) (?:number of tokens|context)|input token count"
    r"|exceed_context_size|context size|input is too long",
    re.IGNORECASE,
)
_QUOTA_CODES = frozenset(
    {"insufficient_quota", "billing_hard_limit_reached", "billing_error", "billing_not_active"}
)
_QUOTA_TEXT = re.compile(
    r"insufficient[_ ]quota|credit balance|spend(?:ing)? (?:limit|cap)|billing", re.IGNORECASE
)


def status_error(
    provider: str,
    status: int,
    message: str,
    *,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
    quota: bool | None = None,
) -> ProviderError:
    """Classify an HTTP error reply. ``quota`` overrides the quota guess when the provider
    module knows better (e.g. Gemini's per-day quota details)."""
    kind = _kind_for(status, message, code, quota)
    retry_after = retry_after_from_headers(headers) if headers is not None else None
    detail = f" ({code})" if code else ""
    return ProviderError(
        f"{provider} returned HTTP {status}{detail}: {_short(message)}",
        kind=kind,
        provider=provider,
        status=status,
        retry_after=retry_after,
    )


def _kind_for(status: int, message: str, code: str | None, quota: bool | None) -> ErrorKind:
    code_l = (code or "").lower()
    if quota is None:
        quota = code_l in _QUOTA_CODES or status == 402 or bool(_QUOTA_TEXT.search(message))
    if quota and status in (400, 402, 403, 429):
        return "quota"
    if status == 413 or code_l in ("context_length_exceeded", "request_too_large"):
        return "context_length"
    if status in (400, 422) and _CONTEXT_LENGTH.search(message):
        return "context_length"
    kinds: dict[int, ErrorKind] = {
        401: "auth",
        403: "permission",
        404: "not_found",
        408: "timeout",
        409: "conflict",
        429: "rate_limit",
        529: "overloaded",
        503: "overloaded",
    }
    if status in kinds:
        return kinds[status]
    if status >= 500:
        return "server"
    return "bad_request"


def transport_error(provider: str, exc: BaseException) -> ProviderError | None:
    """A timeout or connection failure, recognised by exception class (SDK errors, httpx,
    asyncio, OS); ``None`` when ``exc`` is neither."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or names & {
        "APITimeoutError",
        "TimeoutException",
        "ReadTimeout",
        "ConnectTimeout",
        "ServerTimeoutError",
    }:
        return ProviderError(f"{provider} request timed out", kind="timeout", provider=provider)
    if isinstance(exc, OSError) or names & {
        "APIConnectionError",
        "TransportError",
        "NetworkError",
        "ConnectError",
        "RemoteProtocolError",
        "ClientConnectionError",
    }:
        return ProviderError(
            f"{provider} connection failed: {type(exc).__name__}",
            kind="connection",
            provider=provider,
        )
    return None


def retry_after_from_headers(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    lower = {k.lower(): v for k, v in headers.items()}
    raw_ms = lower.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _short(message: str, limit: int = 300) -> str:
    """Provider error text is about the request, not its content; still cap its length."""
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 1] + "…"
