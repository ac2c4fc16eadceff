"""Street addresses: a street with its house number, in each locale's conventions.

Addresses have no checksum, so the patterns are strict about structure instead: a
street-type word (``Street``, ``Caddesi``, ``-straße``, ``Calle``, ``rue``, ``ул.``) next to a
capitalised name *and* a house number. A lone city, postcode or street name without a
number is left alone. The locale modules hold the patterns; :class:`StreetAddressDetector`
runs them behind a cheap substring test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

from .detectors import Finding, digit_runs, literal_union, run_followed_by

__all__ = ["StreetAddressDetector"]

# What follows the house number of an address written number first, which is a whole run
# of digits ("221B Baker", "1600-2 …", "12 bis, rue …", "5, rue"): a letter, a "-unit",
# bis/ter/quater, a comma, a space.
_NUMBER_AFTER = re.compile(r"[A-Za-z]?(?:-\d|,?\s)|\s?(?:bis|ter|quater|[A-D])")

@lru_cache(maxsize=4)  # asked by every number-first detector about the same text
def _number_first(text: str) -> bool:
    return run_followed_by(text, _NUMBER_AFTER)


# Every hint of every detector in one pattern: text holding none of them (most text) is
# scanned once for all locales instead of once per locale.
_ALL_HINTS: dict[str, None] = {}
_union: list[re.Pattern[str]] = []


def _register_hints(hints: Sequence[str]) -> None:
    before = len(_ALL_HINTS)
    _ALL_HINTS.update(dict.fromkeys(hints))
    if len(_ALL_HINTS) != before:
        _union.clear()  # compiled again on first use, once for all locales
        _any_hint.cache_clear()


@lru_cache(maxsize=4)
def _any_hint(text: str) -> bool:
    """Whether any hint occurs before the text's last digit: every match holds its hint
    ahead of its house number, so the text after the last digit is not searched (the
    search costs per character scanned; a chat message's digits are often early)."""
    runs = digit_runs(text)
    if not runs:
        return False  # no digit, no house number
    if not _union:
        _union.append(literal_union(_ALL_HINTS))
    return _union[0].search(text, 0, runs[-1][1] - 1) is not None  # up to the last digit


def _has_digit(text: str) -> bool:
    return bool(digit_runs(text))


def _maybe_hinted(text: str) -> bool:
    return bool(digit_runs(text)) and _any_hint(text)


def _maybe_number_first(text: str) -> bool:
    return bool(digit_runs(text)) and _number_first(text)


class StreetAddressDetector:
    """Finds ``ADDRESS`` spans with ``patterns``, run only on text holding one of ``hints``
    (substrings every match must contain ahead of a digit, such as the street-type words
    that come before the house number; none means always) and a digit. With
    ``number_first`` every match opens with its house number, a whole run of digits
    followed by a letter, a "-unit", bis/ter/quater, a comma or a space, and text without
    one is skipped. ``trim(match)`` may return how many leading characters are not part of
    the address (a sentence-opening word the pattern took for part of the street name)."""

    kind = "ADDRESS"

    def __init__(
        self,
        name: str,
        patterns: Sequence[re.Pattern[str]],
        hints: Sequence[str],
        trim: Callable[[str], int] | None = None,
        number_first: bool = False,
    ):
        self.name = name
        self.trim = trim
        self.number_first = number_first
        self.patterns = tuple(patterns)
        self.hints = tuple(hints)
        self._hint = literal_union(self.hints).search if self.hints else None
        if self.hints:
            _register_hints(self.hints)
        # Detector.gate, shared by the detectors of every locale: find()'s own early exits
        self.gate = (
            _maybe_hinted if self.hints else _maybe_number_first if number_first else _has_digit
        )

    def find(self, text: str) -> Iterator[Finding]:
        if not digit_runs(text):  # the cheaper test first: most text has no digit
            return
        if self._hint is not None and (not _any_hint(text) or self._hint(text) is None):
            return
        if self.number_first and not _number_first(text):
            return
        for pattern in self.patterns:
            for m in pattern.finditer(text):
                start = m.start() + (self.trim(m.group()) if self.trim is not None else 0)
                if start < m.end():
                    yield Finding(start, m.end(), "ADDRESS")

    def __repr__(self) -> str:
        return f"StreetAddressDetector({self.name!r})"
