"""Financial data: payment card numbers (Luhn) and IBANs (ISO 13616 mod-97)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .detectors import MIN_CLUSTER, Finding, digit_windows, digits_of

__all__ = ["IBAN_LENGTHS", "CardDetector", "IBANDetector", "iban_valid", "luhn_valid"]

_HAS_RUN = re.compile(r"\d{2}[ \-.]?\d{2}").search


# --- payment cards -----------------------------------------------------------------------

# A run of digit groups joined by single spaces or dashes; sub-runs are tried so that a
# card followed by another number ("4111 1111 1111 1111 12/27") is still found.
_DIGIT_RUN = re.compile(r"\d(?<![\w\-.,/]\d)\d*(?:[ \-]\d+)*(?![\w]|[.,/]\d)")
_GROUP = re.compile(r"\d+")


def luhn_valid(digits: str) -> bool:
    """The Luhn mod-10 check used by every card scheme."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _issuer_plausible(digits: str) -> bool:
    """Issuer prefix fits the length: 13 is Visa only, 14 Diners, 15 Amex, 16 any major
    scheme (2-6), 17-19 Visa, Mastercard/Maestro, Discover, UnionPay, Mir."""
    n = len(digits)
    if n == 13:
        return digits[0] == "4"
    if n == 14:
        return digits[:2] in ("30", "36", "38", "39")
    if n == 15:
        return digits[:2] in ("34", "37")
    if n == 16:
        return digits[0] in "23456"
    return digits[0] in "2456"


_IBAN_HEAD = re.compile(r"[A-Za-z]{2}\d{2}[ \-]$")


class CardDetector:
    """Payment card numbers: 13-19 digits (optionally in groups split by spaces or dashes),
    an issuer prefix that fits the length (Visa, Mastercard, Amex, Discover, JCB, Diners,
    UnionPay, Maestro), and a passing Luhn check. All-same-digit numbers are rejected."""

    needs_digits = 13  # every candidate comes from digit_windows(text, 13)

    def find(self, text: str) -> Iterator[Finding]:
        if _HAS_RUN(text) is None:
            return
        for run in (
            m
            for pos, endpos in digit_windows(text, 13)
            for m in _DIGIT_RUN.finditer(text, pos, endpos)
        ):
            s = run.group()
            if len(s) < 13 or _IBAN_HEAD.search(text, max(0, run.start() - 5), run.start()):
                continue  # too short, or the body of an IBAN whose checksum failed
            groups = [(g.start(), g.end()) for g in _GROUP.finditer(s)]
            if len(groups) > 40:
                continue
            i = 0
            while i < len(groups):
                found = self._longest_from(s, groups, i)
                if found is None:
                    i += 1
                    continue
                j = found
                yield Finding(run.start() + groups[i][0], run.start() + groups[j][1], "CARD")
                i = j + 1

    @staticmethod
    def _longest_from(s: str, groups: list[tuple[int, int]], i: int) -> int | None:
        best: int | None = None
        n = 0
        sep: str | None = None
        for j in range(i, len(groups)):
            if j > i:
                this_sep = s[groups[j - 1][1]]
                if sep is None:
                    sep = this_sep
                elif this_sep != sep:
                    break
            n += groups[j][1] - groups[j][0]
            if n > 19:
                break
            if n >= 13:  # n counts any decimal digit; a card number's are ASCII
                digits = digits_of(s[groups[i][0] : groups[j][1]])
                if (len(digits) >= 13 and _issuer_plausible(digits) and len(set(digits)) > 1
                        and luhn_valid(digits)):
                    best = j
        return best


# --- IBAN --------------------------------------------------------------------------------

IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
    "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
    "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
    "YE": 30,
}  # fmt: skip

_IBAN = re.compile(r"(?<![\w])[A-Za-z]{2}\d{2}(?:[ \-]?[A-Za-z0-9]){11,34}")


def iban_valid(iban: str) -> bool:
    """Country length from the IBAN registry and the ISO 13616 mod-97 check (== 1)."""
    iban = iban.upper()
    if len(iban) != IBAN_LENGTHS.get(iban[:2], -1) or not iban.isascii() or not iban.isalnum():
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


class IBANDetector:
    """IBANs, compact or in groups of four, accepted only with the right length for their
    country and a passing mod-97 check."""

    needs_digits = MIN_CLUSTER  # nothing without digit_windows(text, 6)

    def find(self, text: str) -> Iterator[Finding]:
        if not digit_windows(text, 6):
            return  # every registered IBAN format holds six or more digits in a row
        for m in _IBAN.finditer(text):
            raw = m.group()
            want = IBAN_LENGTHS.get(raw[:2].upper())
            if want is None:
                continue
            # Walk the candidate until exactly `want` alphanumerics are consumed.
            count = 0
            end = 0
            for k, ch in enumerate(raw):
                if ch.isalnum():
                    count += 1
                    if count == want:
                        end = k + 1
                        break
            if count != want:
                continue
            after = text[m.start() + end : m.start() + end + 1]
            if after.isalnum():
                continue
            if iban_valid("".join(c for c in raw[:end] if c.isalnum())):
                yield Finding(m.start(), m.start() + end, "IBAN")
