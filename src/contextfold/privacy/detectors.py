"""The detector protocol and the pieces every detector shares.

Detectors are pure (no I/O) and return :class:`Finding` spans; the
:class:`~contextfold.privacy.Redactor` resolves overlaps and replaces them. Regular
expressions only *propose* candidates; a candidate becomes a finding only after the type's
own validation (Luhn for cards, mod-97 for IBANs, the national check digits of an identity
number), which is what keeps order numbers, dates and versions out.

The built-in detectors live in modules named after their kind — :mod:`.contact` (email,
phone), :mod:`.financial` (card, IBAN), :mod:`.identity` (national identity numbers),
:mod:`.network` (IP), :mod:`.secret`, :mod:`.address` — and each locale in
:mod:`.locales` contributes its own identity numbers, phone shapes and street conventions.

The contract a detector must keep: ``find`` never raises on any ``str`` and returns spans
with ``0 <= start < end <= len(text)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, runtime_checkable

from ..errors import ConfigError

__all__ = [
    "Detector",
    "Finding",
    "PatternDetector",
    "check_kind",
    "digit_runs",
    "digit_windows",
    "digits_of",
    "literal_union",
    "longest_cluster",
    "run_followed_by",
]

_KIND = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected value: ``text[start:end]`` is personal data of type ``kind`` (``EMAIL``)."""

    start: int
    end: int
    kind: str


@runtime_checkable
class Detector(Protocol):
    """Finds personal data of one or more kinds. ``find`` must never raise on a ``str``.

    A detector may also declare ``needs_digits = n`` (an int attribute): it never finds
    anything in a text whose largest digit cluster (:func:`longest_cluster`) holds fewer
    than ``n`` digits. The :class:`~contextfold.privacy.Redactor` then skips it for such
    text without calling it — most text has no long number, and a dozen number-shaped
    detectors cost nothing there. A wrong declaration loses findings, so declare only what
    the detector's own code enforces (all its candidates come from
    :func:`digit_windows` of ``n``, or every match holds ``n`` digits joined by the
    separators a cluster allows).

    It may also declare ``gate``: a cheap function of the text that returns False only
    where ``find`` finds nothing (a necessary condition: "an ``@``", "a street word before
    a digit"). The Redactor asks it first, and asks a gate shared by several detectors
    (the same function object) once per text, so a dozen detectors cost a few substring
    tests on ordinary text instead of a dozen calls. A gate that says no where ``find``
    would find something loses that finding: derive it from ``find``'s own early exits."""

    def find(self, text: str) -> Iterable[Finding]: ...


def check_kind(kind: str) -> str:
    """Placeholder kinds are upper-case words joined by ``_`` so ``<KIND_N>`` stays parseable."""
    if not isinstance(kind, str) or _KIND.fullmatch(kind) is None:
        raise ConfigError(
            f"PII kind must be upper-case letters, digits and single underscores "
            f"(like 'EMPLOYEE_ID'), got {kind!r}"
        )
    return kind


def digits_of(s: str) -> str:
    """The ASCII digits of ``s``, in order."""
    return "".join(c for c in s if "0" <= c <= "9")


def literal_union(words: Iterable[str]) -> re.Pattern[str]:
    """One pattern matching any of ``words``, as a prefix tree (``C(?:ad|d\\.)|S(?:ok|k\\.)``):
    the regex engine tries the alternatives of a plain ``a|b|c`` one after another at every
    position, while a tree costs one character-set test at most positions."""
    tree: dict[str, dict[str, object]] = {}
    for word in words:
        node = tree
        for ch in word:
            node = node.setdefault(ch, {})  # type: ignore[assignment]
        node[""] = {}

    def emit(node: dict[str, dict[str, object]]) -> str:
        parts = [
            re.escape(ch) + emit(child)  # type: ignore[arg-type]
            for ch, child in sorted(node.items())
            if ch
        ]
        if "" in node:
            parts.append("")
        if len(parts) == 1:
            return parts[0]
        return "(?:" + "|".join(parts) + ")"

    return re.compile(emit(tree) if tree else "(?!)")


# Six or more digits joined by at most three separator characters: "0 (532) 123 45 67",
# "040 / 123 456". Shorter clusters are no number-shaped detector's business.
MIN_CLUSTER = 6
_CLUSTER = re.compile(r"\d(?:[ .\-/()]{0,3}\d){5,}")
_SEPARATORS = str.maketrans("", "", " .-/()")


# The caches hold the few most recent texts only: the detectors of one pass ask about the
# same text one after another, and a large document must not stay alive for long.
@lru_cache(maxsize=4)
def _clusters(text: str) -> tuple[tuple[int, int, int], ...]:
    return tuple(
        (m.start(), m.end(), len(m.group().translate(_SEPARATORS))) for m in _CLUSTER.finditer(text)
    )


_DIGIT_RUN = re.compile(r"\d+")
#: Past this many runs of digits a text is number-heavy: :func:`run_followed_by` says
#: "maybe" instead of looking after each run.
MAX_DIGIT_RUNS = 32


# ASCII byte -> b"9" for a digit, b" " for anything else (see digit_runs)
_DIGIT_CLASS = bytes(57 if 48 <= b <= 57 else 32 for b in range(256))
_ASCII = bytes(range(128))


@lru_cache(maxsize=4)
def digit_runs(text: str) -> tuple[tuple[int, int], ...]:
    """``(start, end)`` of every run of digits (``\\d+``) in ``text``, in order: one scan,
    cached, for the tests of every number-shaped detector on the same text (is there a
    digit, where is the last one, what follows a run).

    Text whose digits are all ASCII (most chat, even with an emoji or a dash; ``\\d``
    there is exactly 0-9) is mapped to digit / not-digit bytes and the runs are found with
    ``bytes.find``, a C scan several times faster than a regex stepping through every
    character; text with another script's digits uses the regex."""
    if text.isascii():
        raw = text.encode("ascii")
    else:
        # Mostly ASCII text with a few other characters (an emoji, a dash): if none of them
        # is a digit, each becomes "?" (one byte per character, positions kept) and the
        # bytes scan still applies; a digit outside ASCII needs the regex.
        others = text.encode("utf-8", "surrogatepass").translate(None, _ASCII).decode(
            "utf-8", "surrogatepass"
        )
        if _DIGIT_RUN.search(others) is not None:
            return tuple([m.span() for m in _DIGIT_RUN.finditer(text)])
        raw = text.encode("ascii", "replace")
    classes = raw.translate(_DIGIT_CLASS)
    find = classes.find
    runs: list[tuple[int, int]] = []
    start = find(b"9")
    while start >= 0:
        end = find(b" ", start)
        if end < 0:
            runs.append((start, len(classes)))
            break
        runs.append((start, end))
        start = find(b"9", end)
    return tuple(runs)


def run_followed_by(text: str, after: re.Pattern[str], min_digits: int = 1) -> bool:
    """Whether a run of at least ``min_digits`` digits is followed by what ``after``
    matches right there: a cheap necessary condition for a pattern whose number must be
    a whole run of digits (a house number, an IPv4 quad's first part). True for
    number-heavy text (see :data:`MAX_DIGIT_RUNS`), where checking each run would cost
    more than the pattern's own scan."""
    runs = digit_runs(text)
    if len(runs) > MAX_DIGIT_RUNS:
        return True
    for start, end in runs:
        if end - start >= min_digits and after.match(text, end) is not None:
            return True
    return False


@lru_cache(maxsize=4)
def longest_cluster(text: str) -> int:
    """Digits in ``text``'s largest digit cluster (as :func:`digit_windows` finds them:
    six or more digits joined by at most three of ``" .-/()"``); 0 when it has none."""
    runs = digit_runs(text)  # found without a regex scan where the runs tell
    if len(runs) < 2:  # one run is its own cluster (only separators join two runs)
        n = runs[0][1] - runs[0][0] if runs else 0
        return n if n >= MIN_CLUSTER else 0
    if sum([end - start for start, end in runs]) < MIN_CLUSTER:
        return 0  # too few digits for any cluster
    return max((n for _, _, n in _clusters(text)), default=0)


@lru_cache(maxsize=32)
def digit_windows(text: str, min_digits: int, margin: int = 4) -> tuple[tuple[int, int], ...]:
    """``(pos, endpos)`` windows round every cluster of at least ``min_digits`` digits.

    Number-shaped detectors run their patterns only inside these, so a text is scanned once
    for digit clusters (cached for the detectors that follow) instead of once per pattern.
    ``margin`` characters either side hold what a pattern takes beyond the digits (a
    bracket, a check letter) and what its lookahead must see; lookbehinds see the whole
    text anyway. ``min_digits`` below :data:`MIN_CLUSTER` counts as :data:`MIN_CLUSTER`.
    """
    out: list[tuple[int, int]] = []
    for start, end, n in _clusters(text):
        if n < min_digits:
            continue
        pos, endpos = max(0, start - margin), min(len(text), end + margin)
        if out and pos <= out[-1][1]:
            out[-1] = (out[-1][0], endpos)
        else:
            out.append((pos, endpos))
    return tuple(out)


class PatternDetector:
    """A user-supplied regular expression for one kind (``EMPLOYEE_ID``). The whole match is
    redacted, or the group named ``value`` when the pattern has one (for cues like
    ``badge (?P<value>\\d+)``)."""

    def __init__(self, kind: str, pattern: str | re.Pattern[str]) -> None:
        self.kind = check_kind(kind)
        try:
            self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        except re.error as exc:
            raise ConfigError(f"pattern for {kind!r} is not a valid regex: {exc}") from exc
        if not isinstance(self.pattern, re.Pattern) or not isinstance(self.pattern.pattern, str):
            raise ConfigError(f"pattern for {kind!r} must be a str regex, got {pattern!r}")
        self._group: str | int = "value" if "value" in self.pattern.groupindex else 0

    def find(self, text: str) -> Iterator[Finding]:
        for m in self.pattern.finditer(text):
            start, end = m.span(self._group)
            if 0 <= start < end:
                yield Finding(start, end, self.kind)

    def __repr__(self) -> str:
        return f"PatternDetector({self.kind!r}, {self.pattern.pattern!r})"
