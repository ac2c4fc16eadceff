"""Test support that ships with the library: summarizer and chat-model doubles, local fake
provider servers, the store conformance suite every store must pass, and the provider-rule
checker (:func:`check_provider_rules`) to run on any context before sending it."""

from __future__ import annotations

from ..llm.base import block_model_requests
from .chat import ChatRequest, FakeChat, FunctionChat
from .clock import FakeClock
from .conformance import StoreConformance, check_invariant
from .provider_rules import Violation, assert_provider_rules, check_provider_rules
from .provider_servers import (
    AnthropicServer,
    GeminiServer,
    OpenAIServer,
    ReceivedRequest,
    ServerReply,
)
from .summarizers import ConcatSummarizer, FunctionSummarizer

__all__ = [
    "AnthropicServer",
    "ChatRequest",
    "ConcatSummarizer",
    "FakeChat",
    "FakeClock",
    "FunctionChat",
    "FunctionSummarizer",
    "GeminiServer",
    "OpenAIServer",
    "ReceivedRequest",
    "ServerReply",
    "StoreConformance",
    "Violation",
    "assert_provider_rules",
    "block_model_requests",
    "check_invariant",
    "check_provider_rules",
]
