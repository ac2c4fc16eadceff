"""What the inspector shows, computed from stored rows: pure code, no I/O.

* :func:`context_series` — after each message, the context the model received (the
  summary and the newest live messages that fit the budget: never over it) and what was
  stored (the summary and *every* live message, some perhaps waiting to fold), from message
  token counts and the summary versions' numbers (``at_seq``: the fold happened right after
  that message).
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
    """After message ``seq``: the tokens of the context the model received (the summary
    and the newest live messages that fit the budget, whole), of everything stored
    (summary + all live messages; above the budget while messages wait to fold) — both
    None when the messages they need were deleted by ``delete`` retention — and the
    summary's tokens then."""

    seq: int
    context_tokens: int | None
    summary_tokens: int
    stored_tokens: int | None = None


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
        #: prefix[k]: tokens of the first k known messages
        self.prefix = [0, *itertools.accumulate(tokens[s] for s in self.known)]

    def _range(self, lo: int, hi: int) -> tuple[int, int] | None:
        i = bisect.bisect_left(self.known, lo)
        j = bisect.bisect_right(self.known, hi)
        return (i, j) if j - i == hi - lo + 1 else None

    def total(self, lo: int, hi: int) -> int | None:
        """Tokens of messages lo..hi; None if one of them is not stored."""
        if hi < lo:
            return 0
        found = self._range(lo, hi)
        return None if found is None else self.prefix[found[1]] - self.prefix[found[0]]

    def newest_within(self, lo: int, hi: int, room: int) -> int | None:
        """Tokens of the longest run of whole messages ending at ``hi`` (none before ``lo``)
        that fits in ``room``; None if one of lo..hi is not stored."""
        if hi < lo:
            return 0
        found = self._range(lo, hi)
        if found is None:
            return None
        i, j = found
        if room < 0:
            return 0
        # the first start whose run to hi fits: prefix[j] - prefix[start] <= room
        start = bisect.bisect_left(self.prefix, self.prefix[j] - room, i, j)
        return self.prefix[j] - self.prefix[start]


def context_series(
    tokens: Mapping[int, int], versions: Sequence[SummaryVersion], seqs: Sequence[int],
    budget: int | None = None,
) -> list[SeriesPoint]:
    """The context after each message of ``seqs``. ``tokens``: seq → tokens of every
    stored message from :func:`needed_from` on; ``versions``: oldest first. With a
    ``budget``, the context received holds the summary and the newest live messages that
    fit it (a view leaves the oldest live messages out until a fold takes them), so it is
    never over the budget; without one, it is everything stored."""
    at_seqs = [v.at_seq for v in versions]
    spans = _Spans(tokens)
    out: list[SeriesPoint] = []
    for seq in seqs:
        i = _active(versions, at_seqs, seq)
        through = versions[i].through_seq if i >= 0 else 0
        summary = versions[i].tokens if i >= 0 else 0
        live = spans.total(through + 1, seq)
        stored = None if live is None else summary + live
        received = stored
        if budget is not None and stored is not None and stored > budget:
            shown = spans.newest_within(through + 1, seq, budget - summary)
            received = min(budget, summary + (shown or 0))
        out.append(SeriesPoint(seq, received, summary, stored))
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
