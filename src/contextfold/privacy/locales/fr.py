"""French: NIR (numéro de sécurité sociale) with its key, French phones, French addresses."""

from __future__ import annotations

import re

from ..address import StreetAddressDetector
from ..contact import PhoneShape
from ..detectors import literal_union
from ..identity import NationalIdDetector, stdnum_check
from . import Locale
from .common import BARE_AFTER_CUE, TRUNK_ZERO

__all__ = ["LOCALE"]

# NIR: sex, year, month, département (2A/2B for Corsica), commune, order, then the two-digit
# key 97 - (number mod 97) (stdnum.fr.nir). "1 85 05 78 006 084 36", "185057800608436".
_NIR = re.compile(
    r"[1-478](?<![\w\-.,/+].)(?P<s>[ ]?)\d{2}(?P=s)\d{2}(?P=s)(?:\d{2}|2[ABab])(?P=s)\d{3}"
    r"(?P=s)\d{3}(?P=s)\d{2}(?![\w]|[.,/]\d|-\w)"
)

# A French mobile written without separators ("0612345678"): trunk 0 and a 6 or 7.
_FR_BARE_MOBILE = PhoneShape(
    "fr-bare-mobile",
    re.compile(r"(?<![\w+\-./:,])0[67]\d{8}(?![\w]|[.,\-/:]\d)"),
    digits=(10,),
)

# Addresses: "12 rue de la Paix", "5 bis, avenue Victor Hugo", "27 boulevard Saint-Michel",
# "3 place de la République", "14 ter rue des Lilas", "8, allée des Tilleuls".
_UP = "A-ZÉÈÀÂÊÎÔÛÇ"
_LOW = "a-zéèàâêîôûçëïüœ"
_TYPE_WORDS = (
    "rue", "avenue", "av.", "bd", "boulevard", "bld", "place", "pl.", "allée", "quai", "impasse",
    "chemin", "route", "cours", "passage", "square", "villa", "cité", "sentier", "voie",
    "rond-point", "faubourg", "fg", "esplanade", "promenade",
)  # fmt: skip
# As a prefix tree in lower case, Capitalised and UPPER case: every number in the text is a
# candidate start, so the word after it must be rejected in one or two character tests.
_TYPE = literal_union(
    w for word in _TYPE_WORDS for w in (word, word.capitalize(), word.upper())
).pattern + r"(?![\w])"
_PARTICLE = r"(?:de la|de l'|de l’|du|des|de|d'|d’|la|le|les|l'|l’|aux|au)"
_NAME = (
    rf"(?:{_PARTICLE}\s?)?[{_UP}][{_LOW}'’]+(?:[\s\-](?:{_PARTICLE}\s?)?[{_UP}][{_LOW}'’]+){{0,4}}"
)
_FR_ADDRESS = re.compile(
    rf"\d(?<![\w\-/.,]\d)\d{{0,3}}(?:\s?(?:bis|ter|quater|[A-D])(?![\w]))?,?\s{_TYPE}\s{_NAME}"
    r"(?:,?\s(?:appartement|appt\.?|apt\.?|bât(?:iment)?\.?|étage|esc(?:alier)?\.?)\s?[0-9A-Z]{1,4}"
    r"(?![\w]))*"
)

LOCALE = Locale(
    name="fr",
    phone_regions=("FR",),
    # 13 digits joined by single spaces; Corsica's "2A"/"2B" leaves 6 + 8 of them
    national_ids=(NationalIdDetector("FR_NIR", _NIR, stdnum_check("fr.nir"), needs_digits=6),),
    phone_shapes=(TRUNK_ZERO, _FR_BARE_MOBILE, BARE_AFTER_CUE),
    addresses=(
        # The pattern opens on the house number, which is fast to scan for: no hints.
        StreetAddressDetector("fr", [_FR_ADDRESS], hints=(), number_first=True),
    ),
    description="NIR with key; French phones; numéro (bis/ter) rue/avenue/boulevard/place",
)
