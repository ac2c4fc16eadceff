"""The one exception hierarchy of contextfold.

::

    ContextFoldError
    ├── ConfigError            the caller's mistake (bad policy numbers, unknown model string)
    ├── ValidationError        bad input: not a valid message, too large, invalid text
    ├── SummarizationError     a fold's summarizer failed (cause attached)
    ├── ProviderError          a chat-model provider call failed (``kind``, ``status``, cause)
    ├── ConflictError          the session changed under a fold (CAS lost); nothing was written
    └── StorageError           the store failed; nothing half-written

Errors raised by libraries underneath (sqlite3, psycopg, provider SDKs) are translated at
the boundary with ``raise ... from exc`` so ``__cause__`` keeps the original.
Messages name the offending value with ``!r`` and, where there is one, the next step.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ConflictError",
    "ContextFoldError",
    "ProviderError",
    "StorageError",
    "SummarizationError",
    "ValidationError",
]


class ContextFoldError(Exception):
    """Root of every error contextfold raises on purpose."""


class ConfigError(ContextFoldError):
    """The caller configured something impossible (bad numbers, unknown names, missing extra)."""


class ValidationError(ContextFoldError, ValueError):
    """Input that is not a valid message or sequence of messages; nothing was written."""


class SummarizationError(ContextFoldError):
    """A summarizer failed or produced unusable output; the session is unchanged.

    ``__cause__`` holds the original error (provider error, bad output) when there is one.
    """

    def __init__(
        self, message: str = "", *, calls: int | None = None, input_tokens: int = 0,
        output_tokens: int = 0,
    ) -> None:
        super().__init__(message)
        #: Summarizer requests made before failing (None: unknown, counted as one).
        self.calls = calls
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens


class ProviderError(ContextFoldError):
    """A chat-model provider call failed: the SDK's error translated at the boundary.

    ``kind`` says what happened in provider-neutral words (``"rate_limit"``,
    ``"timeout"``, ``"context_length"``, ``"quota"``, ...), ``status`` is the HTTP status
    when there was one, ``retry_after`` the delay in seconds the provider asked for.
    Whether it is worth retrying is decided in one place, ``contextfold.llm.retry``.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        provider: str = "",
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.provider = provider
        self.status = status
        self.retry_after = retry_after


class ConflictError(ContextFoldError):
    """The session changed under a fold (compare-and-set lost); nothing was written."""


class StorageError(ContextFoldError):
    """The store failed; the transaction was rolled back, nothing is half-written."""
