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
from typing import Protocol, runtime_checkable

from ..errors import ConfigError

__all__ = ["Detector", "Finding", "PatternDetector", "check_kind", "digits_of"]

_KIND = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected value: ``text[start:end]`` is personal data of type ``kind`` (``EMAIL``)."""

    start: int
    end: int
    kind: str


@runtime_checkable
class Detector(Protocol):
    """Finds personal data of one or more kinds. ``find`` must never raise on a ``str``."""

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
