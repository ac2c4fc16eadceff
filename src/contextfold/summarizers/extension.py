"""Cache-stable folds: extend the previous summary instead of rewriting it.

A provider's prompt cache keeps a prefix of the request. When every fold rewrites the
whole summary, the summary and every turn after it are written to the cache again after
each fold. :class:`~.extractive.ExtractiveSummarizer` with ``extend=True`` (off by default:
the room hysteresis leaves empty costs answers kept, see
``benchmarks/results/summary_extension.md``) instead keeps the
previous summary text verbatim and appends the new span's best facts after
:data:`~contextfold.summary_block.SEGMENT_BREAK`, so the rendered summary block begins
with the previous one byte for byte. Each extension gets the span's *fair share* of the
cap — the cap times the span's share of the conversation so far (by message count) — so
a span is worth as much room as the same span would win, on average, in a reselection.
When the share no longer fits (the summary is full), or a new fact corrects an old one,
the fold *compacts*: the usual reselection over old and new facts, to ``compact_to`` of
the cap, which leaves room for the next several folds to extend again (hysteresis).

Deferred to the next compaction: an old fact that a fuller new one contains stays (the
new one competes with it covered); a new fact that an old one already holds is dropped.

Pure code, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..messages import StoredMessage
from ..summary_block import SEGMENT_BREAK
from .facts import Fact
from .languages import Language
from .salience import content_words

__all__ = ["extended_text", "fair_share", "known_to"]


def fair_share(max_tokens: int, messages: Sequence[StoredMessage], boost: float) -> int:
    """Tokens an extension may add for ``messages``: ``boost`` × the cap × the span's share of
    the conversation so far (its messages over the newest seq, seqs counting every message
    from 1)."""
    if not messages:
        return 0
    total = max(messages[-1].seq, len(messages))
    return math.ceil(max_tokens * boost * len(messages) / total)


def known_to(old: Sequence[Fact], new: Sequence[Fact], lang: Language) -> list[Fact]:
    """``new`` without the facts whose content words an ``old`` fact of the same speaker
    already holds (the old text stays as it was written)."""
    fw = None if lang.code == "en" else lang.function_words
    held: dict[str | None, list[frozenset[str]]] = {}
    for fact in old:
        key = frozenset(content_words(fact.text, fw))
        if key:
            held.setdefault(fact.speaker, []).append(key)
    out = []
    for fact in new:
        key = frozenset(content_words(fact.text, fw))
        if key and any(key <= k for k in held.get(fact.speaker, ())):
            continue
        out.append(fact)
    return out


def extended_text(previous: str, addition: str) -> str:
    """``previous`` verbatim, then the segment break and ``addition``."""
    return f"{previous}{SEGMENT_BREAK}{addition}" if addition else previous
