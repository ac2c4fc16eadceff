"""The rolling-summary recipe of a personal assistant session.

Fold when the session holds more than ``max_messages`` live messages AND all but the
``keep_last`` newest of them (the candidates) hold more than ``min_tokens`` tokens — both
strictly greater — folding the oldest ``fold_messages`` and always leaving the
``keep_last`` most recent messages verbatim. The summary is written with the
``conversation`` preset (third person; topics, decisions, action items, tone; under
``word_limit`` words; incorporating the previous summary) in at most
``max_output_tokens`` output tokens, and travels in the context as the
earlier-conversation block.

::

    recipe = RollingSummary()                         # 30 / 20 / 15,000 / 10 / 1024
    memory = Memory("sqlite:///assistant.db", **recipe.options(model="openai:gpt-4o-mini"))
    result = memory.add("s", {"role": "user", "content": "..."})
    if result.fold and result.fold.status == "committed":
        result.fold.summary, result.fold.messages_folded, result.fold.folded_ids

A failed summarization commits nothing: the outcome has status ``failed``, no summary,
every message is kept, and the engine logs the error class (see ``FoldOutcome``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .policy import MessageCount
from .summarizers.base import Summarizer

__all__ = ["RollingSummary"]

#: Room the summary block's label takes beyond the summary text itself.
_SUMMARY_LABEL_TOKENS = 64


@dataclass(frozen=True)
class RollingSummary:
    """The five numbers of the recipe (all configurable) and the word limit."""

    max_messages: int = 30
    fold_messages: int = 20
    min_tokens: int = 15_000
    keep_last: int = 10
    max_output_tokens: int = 1024
    word_limit: int = 500

    def __post_init__(self) -> None:
        for name in ("max_messages", "fold_messages", "keep_last", "max_output_tokens",
                     "word_limit", "min_tokens"):
            value = getattr(self, name)
            low = 0 if name in ("keep_last", "min_tokens") else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{name} must be an int >= {low}, got {value!r}")
        self.policy()  # MessageCount checks how the numbers relate

    def policy(self) -> MessageCount:
        """The fold policy: ``MessageCount`` with the recipe's numbers."""
        return MessageCount(self.max_messages, fold=self.fold_messages, keep_last=self.keep_last,
                            min_tokens=self.min_tokens)

    def summarizer(self, model: Any = None) -> Summarizer:
        """``LLMSummarizer(model, preset="conversation")`` with the recipe's limits, or the
        offline ``ExtractiveSummarizer`` when ``model`` is None."""
        if model is None:
            from .summarizers.extractive import ExtractiveSummarizer

            return ExtractiveSummarizer()
        from .summarizers.llm import LLMSummarizer

        return LLMSummarizer(model, preset="conversation", word_limit=self.word_limit,
                             max_output_tokens=self.max_output_tokens)

    def options(self, model: Any = None) -> dict[str, Any]:
        """Keyword arguments for ``Memory``/``AsyncMemory``: policy, summarizer and the
        summary cap (the output limit plus the block's label)."""
        return {
            "policy": self.policy(),
            "summarizer": self.summarizer(model),
            "summary_max_tokens": self.max_output_tokens + _SUMMARY_LABEL_TOKENS,
        }
