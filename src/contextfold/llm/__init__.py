"""Chat models: one async protocol, one module per vendor SDK (each an extra), one retry
layer, and a registry resolving ``provider:model`` strings.

``OpenAIChat``, ``AnthropicChat`` and ``GeminiChat`` are imported on first use, so this
package needs none of the SDKs until one is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    ChatModel,
    Completion,
    FinishReason,
    Usage,
    block_model_requests,
    model_requests_blocked,
)
from .registry import PROVIDERS, ProviderSpec, register_provider, resolve_model
from .retry import CallStats, Deadline, RetryPolicy, complete_with_retry, is_retryable

if TYPE_CHECKING:
    from .anthropic import AnthropicChat
    from .gemini import GeminiChat
    from .openai import OpenAIChat

__all__ = [
    "PROVIDERS",
    "AnthropicChat",
    "CallStats",
    "ChatModel",
    "Completion",
    "Deadline",
    "FinishReason",
    "GeminiChat",
    "OpenAIChat",
    "ProviderSpec",
    "RetryPolicy",
    "Usage",
    "block_model_requests",
    "complete_with_retry",
    "is_retryable",
    "model_requests_blocked",
    "register_provider",
    "resolve_model",
]

_LAZY = {"OpenAIChat": ".openai", "AnthropicChat": ".anthropic", "GeminiChat": ".gemini"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
