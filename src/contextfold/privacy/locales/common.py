"""Phone shapes several locales share."""

from __future__ import annotations

import re

from ..contact import PhoneShape, phone_cue_before

__all__ = ["BARE_AFTER_CUE", "TRUNK_ZERO"]

# European national formats with a leading 0 trunk prefix and at least one separator,
# 9-12 digits: "020 7946 0958", "07700 900123", "030 901820", "0151 23456789",
# "01 42 68 53 00", "06-12345678", "(020) 7946 0958", "030 / 123 456 78", "089 / 45 67 89 0".
TRUNK_ZERO = PhoneShape(
    "trunk-zero",
    re.compile(
        r"(?<![\w+\-./:])(?<!\d[ ])(?:\(0[1-9]\d{0,3}\)[ ]?|0[1-9]\d{0,3}(?:[ .\-/]| / ))"
        r"\d{2,8}(?:[ .\-]\d{2,8}){0,4}(?:[ \-]\d)?(?![\w]|[.\-/:]\d)"
    ),
    digits=(9, 10, 11, 12),
)


def _after_cue(m: re.Match[str], text: str) -> bool:
    digits = m.group()
    if digits[0] == "0":
        return phone_cue_before(text, m.start())
    return len(digits) in (9, 10, 11) and digits[0] in "56789" and phone_cue_before(text, m.start())


# A bare run of digits ("Handy 01711234567", "móvil 612345678", "тел. 89161234567") is a
# phone number only right after a cue word; without one it is an order number.
BARE_AFTER_CUE = PhoneShape(
    "bare-after-cue",
    re.compile(r"(?<![\w+\-./:,])\d{9,12}(?![\w]|[.,\-/:]\d)"),
    digits=(9, 10, 11, 12),
    accept=_after_cue,
)
