"""What the inspector shows, computed from stored rows: pure code, no I/O.

* :func:`context_series` — the context (summary + live messages, in tokens) the model
  received after each message, from message token counts and the summary versions'
  numbers (``at_seq``: the fold happened right after that message).
* :func:`fold_markers` — each fold's context just before and right after it.
* :func:`covering_version` — which fold covered a message.
* :func:`word_diff` — a readable word-level diff of two summaries.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..stores.base import SummaryVersion

__all__ = [
    "DiffOp",
    "FoldMarker",
    "SeriesPoint",
    "context_series",
    "covering_version",
    "fold_markers",
    "needed_from",
    "word_diff",
]


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """After message ``seq``: the context's tokens (None: the messages it needs were
    deleted by ``delete`` retention) and the summary's tokens then."""

    seq: int
    context_tokens: int | None
    summary_tokens: int


@dataclass(frozen=True, slots=True)
class FoldMarker:
    version: int
    at_seq: int
    lo: int
    through_seq: int
    summary_tokens: int
    before_tokens: int | None
    after_tokens: int


@dataclass(frozen=True, slots=True)
class DiffOp:
    op: str  # "equal" | "insert" | "delete"
    text: str


def _active(versions: Sequence[SummaryVersion], at_seqs: Sequence[int], seq: int) -> int:
    """Index of the newest version committed at or before message ``seq`` (-1: none)."""
    return bisect.bisect_right(at_seqs, seq) - 1


def needed_from(versions: Sequence[SummaryVersion], first_seq: int) -> int:
    """The first message seq whose tokens a series starting at ``first_seq`` needs."""
    at_seqs = [v.at_seq for v in versions]
    i = _active(versions, at_seqs, first_seq)
    return min(first_seq, (versions[i].through_seq if i >= 0 else 0) + 1)


class _Spans:
    """Sums of message tokens over seq ranges, knowing which seqs are stored."""

    def __init__(self, tokens: Mapping[int, int]) -> None:
        self.known = sorted(tokens)
        self.prefix = list(itertools.accumulate(tokens[s] for s in self.known))

    def total(self, lo: int, hi: int) -> int | None:
        """Tokens of messages lo..hi; None if one of them is not stored."""
        if hi < lo:
            return 0
        i = bisect.bisect_left(self.known, lo)
        j = bisect.bisect_right(self.known, hi)
        if j - i != hi - lo + 1:
            return None
        return self.prefix[j - 1] - (self.prefix[i - 1] if i else 0)


def context_series(
    tokens: Mapping[int, int], versions: Sequence[SummaryVersion], seqs: Sequence[int]
) -> list[SeriesPoint]:
    """The context after each message of ``seqs``. ``tokens``: seq → tokens of every
    stored message from :func:`needed_from` on; ``versions``: oldest first."""
    at_seqs = [v.at_seq for v in versions]
    spans = _Spans(tokens)
    out: list[SeriesPoint] = []
    for seq in seqs:
        i = _active(versions, at_seqs, seq)
        through = versions[i].through_seq if i >= 0 else 0
        summary = versions[i].tokens if i >= 0 else 0
        live = spans.total(through + 1, seq)
        out.append(SeriesPoint(seq, None if live is None else summary + live, summary))
    return out


def fold_markers(
    tokens: Mapping[int, int], versions: Sequence[SummaryVersion]
) -> list[FoldMarker]:
    """Each version's fold: the context just before it (the previous summary plus the
    live messages up to ``at_seq``; None if those are not stored) and right after it."""
    spans = _Spans(tokens)
    out = []
    for i, v in enumerate(versions):
        prev_through = versions[i - 1].through_seq if i else 0
        prev_tokens = versions[i - 1].tokens if i else 0
        live = spans.total(prev_through + 1, v.at_seq)
        out.append(
            FoldMarker(
                v.version, v.at_seq, v.lo, v.through_seq, v.tokens,
                None if live is None else prev_tokens + live, v.tokens + v.live_tokens,
            )
        )  # fmt: skip
    return out


def covering_version(versions: Sequence[SummaryVersion], seq: int) -> int | None:
    """The version of the fold that covered message ``seq`` (None: still live)."""
    throughs = [v.through_seq for v in versions]
    i = bisect.bisect_left(throughs, seq)
    return versions[i].version if i < len(versions) else None


_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(before: str, after: str) -> list[DiffOp]:
    """``before`` → ``after`` as equal/insert/delete runs of words (whitespace kept), so
    concatenating the equal+delete texts gives ``before`` and equal+insert gives ``after``."""
    a, b = _WORDS.findall(before), _WORDS.findall(after)
    ops: list[DiffOp] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "delete", "replace") and i2 > i1:
            _push(ops, "equal" if tag == "equal" else "delete", "".join(a[i1:i2]))
        if tag in ("insert", "replace") and j2 > j1:
            _push(ops, "insert", "".join(b[j1:j2]))
    return ops


def _push(ops: list[DiffOp], op: str, text: str) -> None:
    if ops and ops[-1].op == op:
        ops[-1] = DiffOp(op, ops[-1].text + text)
    else:
        ops.append(DiffOp(op, text))
