"""What the extractive summarizer works out about one sentence, remembered across folds.

A rolling summary is folded again and again: each fold parses the previous summary back
into facts and scores them with the span's new ones, so most of the sentences a fold
analyses are the ones the fold before analysed — with the same speakers, weights and
language. Their salience features, content words and token counts are pure functions of
those inputs, so they are computed once per process and looked up after that: the
summaries are the very same text, a fold worker spends less CPU per fold.

The memos are bounded together (all emptied when they hold :data:`MAX_SENTENCES`
entries in all: a few tens of megabytes at most) and shared by every thread: a lookup or
an insert is one dictionary operation, and a race costs at most a recomputation. The
values handed out are shared: callers read them and never change them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

from ..tokens import TokenCounter
from .facts import sentence_text
from .salience import Features, content_words, features
from .weights import Weights

__all__ = ["fact_tokens", "forget", "memo_content_words", "memo_features"]

#: Entries remembered in all memos together (sentences × contexts).
MAX_SENTENCES = 32768
#: Contexts remembered: speakers + weights + language, or a counter (a fold worker folds
#: many sessions, most alike).
MAX_CONTEXTS = 64

_Memo = dict[str, object]
_MEMOS: dict[Hashable, _Memo] = {}
_held = [0]  # entries in all memos (approximate under races: a bound, not an account)


def _memo(key: Hashable) -> _Memo:
    memo = _MEMOS.get(key)
    if memo is None:
        if len(_MEMOS) >= MAX_CONTEXTS:
            forget()
        memo = _MEMOS[key] = {}
    return memo


def _remember(memo: _Memo, text: str, value: object) -> None:
    if _held[0] >= MAX_SENTENCES:
        forget()
        memo.clear()  # (a memo a caller holds is emptied too)
    memo[text] = value
    _held[0] += 1


def forget() -> None:
    """Empty every memo."""
    for memo in list(_MEMOS.values()):
        memo.clear()
    _MEMOS.clear()
    _held[0] = 0


def memo_features(
    texts: Sequence[str],
    speakers: Iterable[str],
    weights: Weights,
    function_words: frozenset[str] | None,
) -> list[Features]:
    """``[features(t, speakers, weights, function_words) for t in texts]``, each computed
    once per process for these speakers, weights and function words."""
    names = frozenset(speakers)
    memo = _memo(("features", names, weights, function_words))
    out: list[Features] = []
    for text in texts:
        found = memo.get(text)
        if found is None:
            found = features(text, names, weights, function_words)
            _remember(memo, text, found)
        out.append(found)  # type: ignore[arg-type]
    return out


def memo_content_words(texts: Sequence[str], function_words: frozenset[str] | None) -> list[
    frozenset[str]
]:
    """``[frozenset(content_words(t, function_words)) for t in texts]``, remembered."""
    memo = _memo(("content", function_words))
    out: list[frozenset[str]] = []
    for text in texts:
        found = memo.get(text)
        if found is None:
            found = frozenset(content_words(text, function_words))
            _remember(memo, text, found)
        out.append(found)  # type: ignore[arg-type]
    return out


def fact_tokens(counter: TokenCounter, text: str) -> int:
    """``counter.count(" " + sentence_text(text))``: what a fact costs on its summary line,
    remembered by the counter's class and name (the name says how it counts)."""
    memo = _memo(("tokens", type(counter), counter.name))
    found = memo.get(text)
    if found is None:
        found = counter.count(" " + sentence_text(text))
        _remember(memo, text, found)
    return found  # type: ignore[return-value]
