"""A new summary's tokens, counted once per fold rather than three times.

A fold counts the summary it commits more than once: the summarizer checks that its text
fits the cap, :func:`~contextfold.summarizers.base.check_summary` checks it again, and the
fold records what the summary block (:func:`~contextfold.summary_block.render_summary`:
the header, a line break, the text) costs. With the ``o200k``/``cl100k`` encodings each
count is a full encoding of a text of about a thousand tokens — most of a fold worker's
CPU outside the summarizer. Here:

- :func:`count_summary` remembers the last few texts a tiktoken counter counted, so the
  second and third counts of the same text are lookups (tiktoken counts are a pure
  function of the encoding and the text; other counters are always asked, as they may
  count in their own way);
- :func:`summary_block_tokens` is ``count_message(counter, render_summary(text))``
  exactly; for the tiktoken encodings it is the block's fixed cost plus the text's own
  count, because their pre-tokenizer ends the header's last piece (``"):"`` and the line
  break) at the line break whenever the text starts with anything but whitespace or
  ``/`` (tokens are never merged across pieces). Any other text, or counter, is counted
  whole. ``tests/test_summary_tokens.py`` holds the two equal on generated texts.
"""

from __future__ import annotations

from .summary_block import SUMMARY_HEADER, render_summary, summary_overhead
from .tokens import TiktokenCounter, TokenCounter, count_message

__all__ = ["count_summary", "summary_block_tokens"]

#: Texts remembered per process (a fold counts one text a few times, close together).
MAX_TEXTS = 64

_COUNTED: dict[tuple[str, str], int] = {}
_OVERHEAD: dict[str, int] = {}


def count_summary(counter: TokenCounter, text: str) -> int:
    """``counter.count(text)``, remembered for a tiktoken counter."""
    if type(counter) is not TiktokenCounter:
        return counter.count(text)
    key = (counter.encoding, text)
    tokens = _COUNTED.get(key)
    if tokens is None:
        if len(_COUNTED) >= MAX_TEXTS:
            _COUNTED.clear()
        tokens = _COUNTED[key] = counter.count(text)
    return tokens


def summary_block_tokens(counter: TokenCounter, text: str) -> int:
    """``count_message(counter, render_summary(text))``: what ``text`` costs in the
    context as the summary block."""
    if (
        type(counter) is TiktokenCounter
        and SUMMARY_HEADER.endswith(":")
        and text
        and not text[0].isspace()
        and text[0] != "/"
    ):
        overhead = _OVERHEAD.get(counter.encoding)
        if overhead is None:
            overhead = _OVERHEAD[counter.encoding] = summary_overhead(counter)
        return overhead + count_summary(counter, text)
    return count_message(counter, render_summary(text))
