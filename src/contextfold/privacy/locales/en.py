"""English: US SSN, UK National Insurance number, US and UK phone formats, English streets."""

from __future__ import annotations

import re

from ..address import StreetAddressDetector
from ..contact import PhoneShape
from ..identity import NationalIdDetector, SSNDetector
from . import Locale
from .common import BARE_AFTER_CUE, TRUNK_ZERO

__all__ = ["LOCALE", "nino_valid"]

# --- UK National Insurance number ---------------------------------------------------------
# python-stdnum has no NINO module. The number has no check digit; HMRC's allocation rules
# are its validation: first letter not D F I Q U V, second not D F I O Q U V, prefixes BG GB
# KN NK NT TN ZZ never issued, six digits, suffix A-D.
_NINO = re.compile(
    r"[A-CEGHJ-PR-TW-Z](?<![\w\-].)[A-CEGHJ-NPR-TW-Z](?P<s>[ \-]?)\d{2}(?P=s)\d{2}(?P=s)\d{2}"
    r"(?P=s)[A-D](?![\w])"
)
_NINO_NEVER = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


def nino_valid(compact: str) -> bool:
    """HMRC allocation rules on ``AB123456C`` (compacted, upper case)."""
    return (
        re.fullmatch(r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]", compact) is not None
        and compact[:2] not in _NINO_NEVER
    )


# --- phones ------------------------------------------------------------------------------
# North American: (415) 555-2671, 415-555-2671, 415.555.2671, 415 555 2671, 1-800-555-0199.
_NANP = PhoneShape(
    "nanp",
    re.compile(
        r"(?<![\w+\-.])(?:1[ .\-])?(?:\([2-9]\d{2}\)[ ]?|[2-9]\d{2}[ .\-])"
        r"[2-9]\d{2}[ .\-]\d{4}(?![\w]|[.\-]\d)"
    ),
    digits=(10, 11),
)

# --- street addresses --------------------------------------------------------------------
_SUFFIX_WORDS = (
    "Street|Avenue|Road|Boulevard|Lane|Drive|Court|Place|Terrace|Way|Parkway|Circle|Highway|"
    "Square|Trail|Crescent|Close|Loop|Row|Alley|Plaza|Gardens|Grove|Hill|Mews|Walk"
)
_SUFFIX_ABBREVIATIONS = "St|Ave|Rd|Blvd|Ln|Dr|Ct|Pl|Ter|Pkwy|Cir|Hwy|Sq|Trl"
_DIRECTION = r"(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West)\.?"
_NAME_WORD = r"(?:[A-Z][a-z'\-]+|[A-Z]{2,}|[A-Z]\.?|\d{1,3}(?:st|nd|rd|th)|St\.|Mt\.)"
_ADDRESS = re.compile(
    r"\d(?<![\w\-/.,]\d)\d{0,5}[A-Za-z]?(?:-\d{1,4})?,?\s"
    rf"(?:{_DIRECTION}\s)?(?:{_NAME_WORD}\s){{0,3}}{_NAME_WORD}\s"
    rf"(?:(?:{_SUFFIX_WORDS})\b|(?:{_SUFFIX_ABBREVIATIONS})\b\.?)"
    rf"(?:\s{_DIRECTION}(?![\w]))?"
    r"(?:,?\s(?:Apt\.?|Apartment|Suite|Ste\.?|Unit|Flat|Floor|Fl\.?|#)\s?#?[0-9A-Za-z\-]{1,6}\b)?"
)

LOCALE = Locale(
    name="en",
    phone_regions=("US", "GB"),
    national_ids=(
        SSNDetector(),
        NationalIdDetector("GB_NINO", _NINO, nino_valid, min_digits=6),
    ),
    phone_shapes=(_NANP, TRUNK_ZERO, BARE_AFTER_CUE),
    # "221B Baker Street", "1600 Pennsylvania Avenue NW", "350 5th Ave, Suite 3300".
    addresses=(StreetAddressDetector("en", [_ADDRESS], hints=(), number_first=True),),
    description="US SSN, UK NINO; US and UK phone formats; English street addresses",
)
