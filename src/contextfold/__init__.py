"""contextfold: bounded LLM conversation memory.

Store every message of a session; when a policy says so, fold the oldest live messages
into a rolling summary while recent turns stay verbatim — without losing a message,
splitting a tool call from its result, or exceeding the token budget.
"""

from __future__ import annotations

from .context import Context
from .errors import (
    ConfigError,
    ConflictError,
    ContextFoldError,
    ProviderError,
    StorageError,
    SummarizationError,
    ValidationError,
)
from .masking import Masking
from .memory import AddResult, AsyncMemory, BatchResult, FoldOutcome, Memory, Usage
from .messages import MediaPart, Message, StoredMessage, TextPart, ToolCall
from .policy import (
    FixedCells,
    FoldPlan,
    Idle,
    MessageCount,
    Policy,
    ReportedUsage,
    SessionStats,
    TokenBudget,
    all_of,
    any_of,
)
from .search_terms import query_terms
from .stores import MemoryStore, Store, open_store
from .stores.base import LedgerEntry, SearchHit, Summary
from .summarizers.base import Summarizer, SummaryRequest, SummaryResult
from .tokens import ApproximateCounter, TiktokenCounter, TokenCounter, get_counter

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "ApproximateCounter",
    "AsyncMemory",
    "BatchResult",
    "ConfigError",
    "ConflictError",
    "Context",
    "ContextFoldError",
    "FixedCells",
    "FoldOutcome",
    "FoldPlan",
    "Idle",
    "LedgerEntry",
    "Masking",
    "MediaPart",
    "Memory",
    "MemoryStore",
    "Message",
    "MessageCount",
    "Policy",
    "ProviderError",
    "ReportedUsage",
    "SearchHit",
    "SessionStats",
    "StorageError",
    "Store",
    "StoredMessage",
    "SummarizationError",
    "Summarizer",
    "Summary",
    "SummaryRequest",
    "SummaryResult",
    "TextPart",
    "TiktokenCounter",
    "TokenBudget",
    "TokenCounter",
    "ToolCall",
    "Usage",
    "ValidationError",
    "__version__",
    "all_of",
    "any_of",
    "get_counter",
    "open_store",
    "query_terms",
]
