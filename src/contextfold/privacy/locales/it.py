"""Italian: codice fiscale (with omocodia), Italian landlines with their 0 prefix."""

from __future__ import annotations

import re

from ..detectors import run_followed_by
from ..identity import NationalIdDetector, stdnum_check
from . import Locale
from .common import TRUNK_ZERO

__all__ = ["LOCALE"]

# Codice fiscale: surname, name, birth date and place, check letter (stdnum.it
# .codicefiscale); digits may be replaced by letters (omocodia). "RSSMRA85T10A562S".
_D = "[0-9LMNPQRSTUVlmnpqrstuv]"
_CF = re.compile(
    rf"[A-Za-z](?<![\w\-].)[A-Za-z]{{5}}{_D}{{2}}[A-EHLMPR-Ta-ehlmpr-t]{_D}{{2}}[A-Za-z]{_D}{{3}}[A-Za-z]"
    r"(?![\w])"
)


# Birth year and month letter ("85T"): two digits ending a run, a month letter after them.
# Digits are rare in text, so this finds the few places worth the full pattern. (Omocodia
# reaches the year digits only after six collisions of everything else.)
_MONTH = re.compile(r"[A-EHLMPR-Ta-ehlmpr-t]")


def _cf_hint(text: str) -> bool:
    return run_followed_by(text, _MONTH, min_digits=2)


_codicefiscale_valid = stdnum_check("it.codicefiscale")


def _cf_valid(compact: str) -> bool:
    return len(compact) == 16 and _codicefiscale_valid(compact)


LOCALE = Locale(
    name="it",
    phone_regions=("IT",),
    national_ids=(NationalIdDetector("IT_FISCAL_CODE", _CF, _cf_valid, hint=_cf_hint),),
    phone_shapes=(TRUNK_ZERO,),
    description="codice fiscale; Italian landlines (mobiles need the phonenumbers extra)",
)
