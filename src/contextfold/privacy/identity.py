"""National identity numbers, each accepted only when its own validation passes.

:class:`NationalIdDetector` is the one mechanism: a regular expression proposes candidates
in the ways people write the number (bare, grouped with spaces, dots or dashes), and a
validator — python-stdnum's where it has one, a few lines here where it does not — checks
the check digits on the compacted value. A number of the right shape with a failing check
(an order or invoice number) is left alone. An optional ``cue`` makes a weak shape count
only after a word that announces it ("SSN", "Ausweisnummer"); a number its own words
name an order, invoice or reference number (:mod:`.labels`) is never taken.

The locale modules (:mod:`contextfold.privacy.locales`) declare which numbers exist where.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator

from .detectors import MIN_CLUSTER, Finding, check_kind, digit_windows
from .labels import labelled_as_document

__all__ = ["NationalIdDetector", "SSNDetector", "ssn_valid", "stdnum_check"]


def stdnum_check(module: str) -> Callable[[str], bool]:
    """``is_valid`` of the python-stdnum module ``module`` (``"tr.tckimlik"``), imported on
    the first candidate rather than when the redactor is built: most text never has one."""
    found: list[Callable[[str], bool]] = []

    def is_valid(compact: str) -> bool:
        if not found:
            found.append(importlib.import_module(f"stdnum.{module}").is_valid)
        return bool(found[0](compact))

    is_valid.__qualname__ = f"stdnum.{module}.is_valid"
    return is_valid


def _compact(value: str) -> str:
    return "".join(c for c in value if c.isalnum()).upper()


class NationalIdDetector:
    """One national identity number of placeholder type ``kind`` (``TR_TCKN``).

    ``pattern`` proposes candidates; ``validate`` gets the compacted value (letters and
    digits only, upper case) and says whether its check digits hold — it may raise, which
    counts as invalid. ``hint`` is a cheap test that the text can hold a candidate at all;
    ``cue``, when given, must match within 40 characters before the candidate. With
    ``min_digits`` the pattern runs only round clusters of that many digits
    (:func:`~contextfold.privacy.detectors.digit_windows`), which is what keeps a dozen
    number-shaped detectors cheap on ordinary text. Without it, ``needs_digits`` may say
    how many digits every match holds in one cluster (see
    :class:`~contextfold.privacy.detectors.Detector`), so text without such a number
    skips the pattern.
    """

    def __init__(
        self,
        kind: str,
        pattern: re.Pattern[str],
        validate: Callable[[str], bool],
        *,
        hint: Callable[[str], object] | None = None,
        cue: re.Pattern[str] | None = None,
        min_digits: int = 0,
        needs_digits: int = 0,
    ) -> None:
        self.kind = check_kind(kind)
        self.pattern = pattern
        self.validate = validate
        self.hint = hint
        self.gate = hint  # Detector.gate: find() finds nothing where the hint says no
        self.cue = cue
        self.min_digits = min_digits
        # with min_digits every candidate comes from digit_windows (clusters of >= 6)
        self.needs_digits = max(min_digits, MIN_CLUSTER) if min_digits else needs_digits

    def find(self, text: str) -> Iterator[Finding]:
        if self.hint is not None and not self.hint(text):
            return
        if self.min_digits:
            for pos, endpos in digit_windows(text, self.min_digits):
                yield from self._scan(text, pos, endpos)
        else:
            yield from self._scan(text, 0, len(text))

    def _scan(self, text: str, pos: int, endpos: int) -> Iterator[Finding]:
        for m in self.pattern.finditer(text, pos, endpos):
            if self.cue is not None and (
                self.cue.search(text, max(0, m.start() - 40), m.start()) is None
            ):
                continue
            try:
                ok = self.validate(_compact(m.group()))
            except Exception:  # a validator must not break redaction
                ok = False
            if ok and not labelled_as_document(text, m.start(), m.end()):
                yield Finding(m.start(), m.end(), self.kind)

    def __repr__(self) -> str:
        return f"NationalIdDetector({self.kind!r})"


# --- US SSN ------------------------------------------------------------------------------

_HAS_RUN = re.compile(r"\d{2}[ \-.]?\d{2}").search
_SSN = re.compile(r"(?<![\w\-.])(\d{3})([\- ]?)(\d{2})\2(\d{4})(?![\w]|[\-.]\d)")
_SSN_CONTEXT = re.compile(r"(?i)(?:ssn|social security|ss#|soc\.? ?sec)")


def ssn_valid(area: str, group: str, serial: str) -> bool:
    """SSA structure rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    return area != "000" and area != "666" and area[0] != "9" and group != "00" and serial != "0000"


class SSNDetector:
    """US Social Security numbers ``123-45-6789`` / ``123 45 6789``; a bare nine-digit run is
    taken only within 40 characters after a cue ("SSN", "social security"). The SSN has no
    check digit, so the structure rules and the grouping are its whole validation."""

    kind = "SSN"
    needs_digits = 9  # every candidate comes from digit_windows(text, 9)

    def find(self, text: str) -> Iterator[Finding]:
        if _HAS_RUN(text) is None:
            return
        for m in (
            m for pos, endpos in digit_windows(text, 9) for m in _SSN.finditer(text, pos, endpos)
        ):
            area, sep, group, serial = m.groups()
            if not ssn_valid(area, group, serial):
                continue
            if not sep and _SSN_CONTEXT.search(text, max(0, m.start() - 40), m.start()) is None:
                continue
            if labelled_as_document(text, m.start(), m.end()):
                continue
            yield Finding(m.start(), m.end(), "SSN")
