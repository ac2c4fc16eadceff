"""Test support that ships with the library: summarizer and chat-model doubles, local fake
provider servers, and the store conformance suite every store must pass."""

from __future__ import annotations

from .conformance import StoreConformance, check_invariant
from .summarizers import ConcatSummarizer, FunctionSummarizer

__all__ = [
    "ConcatSummarizer",
    "FunctionSummarizer",
    "StoreConformance",
    "check_invariant",
]
