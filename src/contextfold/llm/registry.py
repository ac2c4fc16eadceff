"""Model strings → chat models: ``provider:model``.

::

    openai:gpt-4o-mini                      OPENAI_API_KEY
    anthropic:claude-haiku-4-5              ANTHROPIC_API_KEY
    gemini:gemini-2.5-flash                 GEMINI_API_KEY (or GOOGLE_API_KEY)
    ollama:llama3.2                         http://localhost:11434/v1 (OLLAMA_HOST overrides)
    openai-compatible:MODEL@URL             OPENAI_COMPATIBLE_API_KEY (optional)

Providers are a dict (:data:`PROVIDERS`); :func:`register_provider` adds one. Vendor
modules are imported only when their provider is resolved, so ``import contextfold``
needs no SDK; a missing SDK is a ``ConfigError`` naming the extra to install.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .base import ChatModel

__all__ = ["PROVIDERS", "ProviderSpec", "register_provider", "resolve_model"]

DEFAULT_OLLAMA_URL = "http://localhost:11434/v1"
#: Ollama's default context is small and it silently drops what does not fit; chunk to it.
DEFAULT_OLLAMA_CONTEXT = 4096


@dataclass(frozen=True)
class ProviderSpec:
    """How to build a chat model for one provider prefix. ``factory(model, **options)``."""

    factory: Callable[..., ChatModel]
    example: str


def _openai(model: str, **options: Any) -> ChatModel:
    from .openai import OpenAIChat

    options.setdefault("context_window", 128_000)
    return OpenAIChat(model, provider="openai", **options)


def _anthropic(model: str, **options: Any) -> ChatModel:
    from .anthropic import AnthropicChat

    return AnthropicChat(model, **options)


def _gemini(model: str, **options: Any) -> ChatModel:
    from .gemini import GeminiChat

    return GeminiChat(model, **options)


def _ollama(model: str, **options: Any) -> ChatModel:
    from .openai import OpenAIChat

    host = os.environ.get("OLLAMA_HOST")
    default_url = f"{host.rstrip('/')}/v1" if host and "://" in host else DEFAULT_OLLAMA_URL
    options.setdefault("base_url", default_url)
    options.setdefault("api_key", "ollama")
    options.setdefault("context_window", DEFAULT_OLLAMA_CONTEXT)
    return OpenAIChat(model, provider="ollama", **options)


def _openai_compatible(spec: str, **options: Any) -> ChatModel:
    from .openai import OpenAIChat

    model, sep, url = spec.rpartition("@")
    if not sep or not model or "://" not in url:
        raise ConfigError(
            f"openai-compatible needs MODEL@URL, e.g. "
            f"'openai-compatible:llama3.2@http://127.0.0.1:8000/v1'; got {spec!r}"
        )
    options.setdefault("base_url", url)
    # Never send the real OPENAI_API_KEY to an arbitrary server.
    options.setdefault("api_key", os.environ.get("OPENAI_COMPATIBLE_API_KEY") or "unused")
    options.setdefault("structured_output", False)
    return OpenAIChat(model, provider="openai-compatible", **options)


PROVIDERS: dict[str, ProviderSpec] = {
    "openai": ProviderSpec(_openai, "openai:gpt-4o-mini"),
    "anthropic": ProviderSpec(_anthropic, "anthropic:claude-haiku-4-5"),
    "gemini": ProviderSpec(_gemini, "gemini:gemini-2.5-flash"),
    "ollama": ProviderSpec(_ollama, "ollama:llama3.2"),
    "openai-compatible": ProviderSpec(
        _openai_compatible, "openai-compatible:llama3.2@http://127.0.0.1:8000/v1"
    ),
}


def register_provider(prefix: str, spec: ProviderSpec) -> None:
    """Make ``prefix:model`` resolvable (replaces an existing prefix)."""
    if not prefix or ":" in prefix:
        raise ConfigError(f"provider prefix must be non-empty without ':', got {prefix!r}")
    PROVIDERS[prefix] = spec


def resolve_model(model: str | ChatModel, **options: Any) -> ChatModel:
    """A chat model from a ``provider:model`` string (options go to its constructor:
    ``api_key``, ``base_url``, ``timeout``, ``context_window``, ``structured_output``),
    or the given chat model unchanged."""
    if not isinstance(model, str):
        if isinstance(model, ChatModel):
            return model
        raise ConfigError(f"not a model string or ChatModel: {model!r:.80}")
    prefix, sep, name = model.partition(":")
    if not sep or not name:
        examples = ", ".join(repr(s.example) for s in PROVIDERS.values())
        raise ConfigError(f"model {model!r} is not 'provider:model'; e.g. {examples}")
    spec = PROVIDERS.get(prefix)
    if spec is None:
        raise ConfigError(
            f"unknown model provider {prefix!r} in {model!r}; known: {sorted(PROVIDERS)}"
        )
    return spec.factory(name, **options)
