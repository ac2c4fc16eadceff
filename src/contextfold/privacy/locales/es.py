"""Spanish: DNI and NIE, Spanish phones (no trunk prefix), Spanish street addresses."""

from __future__ import annotations

import re

from ..address import StreetAddressDetector
from ..contact import PhoneShape, phone_cue_before
from ..identity import NationalIdDetector, stdnum_check
from . import Locale
from .common import BARE_AFTER_CUE

__all__ = ["LOCALE"]

# DNI: eight digits and the mod-23 check letter ("12345678Z", "12.345.678-Z", "12345678 z").
_DNI = re.compile(r"\d(?<![\w\-.,/].)\d\.?\d{3}\.?\d{3}[ \-]?[A-Za-z](?![\w])")
# NIE: X, Y or Z, seven digits and the check letter ("X1234567L", "Y-1234567-X").
_NIE = re.compile(r"[XYZxyz](?<![\w\-.,/].)[ \-]?\d{7}[ \-]?[A-Za-z](?![\w])")

# Phones: nine digits, no trunk prefix, first digit 6-9, grouped 3-3-3, 3-2-2-2 or 2-3-2-2
# ("612 345 678", "612 34 56 78", "91 123 45 67", "912-345-678").
_ES_PHONE = re.compile(
    r"(?<![\w+\-./:,])(?<!\d[ ])(?:[6-9]\d{2}(?P<s>[ .\-])\d{3}(?P=s)\d{3}"
    r"|[6-9]\d{2}(?P<t>[ .\-])\d{2}(?P=t)\d{2}(?P=t)\d{2}"
    r"|[89]\d(?P<u>[ .\-])\d{3}(?P=u)\d{2}(?P=u)\d{2})"
    r"(?![\w]|[.,\-/:]\d|[ .\-]\d)"
)


def _es_phone_ok(m: re.Match[str], text: str) -> bool:
    # "612.345.678" is as often a large amount written with thousands dots.
    if m.group("s") == "." and re.fullmatch(r"\d{3}\.\d{3}\.\d{3}", m.group()):
        return phone_cue_before(text, m.start())
    return True


_ES_SHAPE = PhoneShape("es", _ES_PHONE, digits=(9,), accept=_es_phone_ok)

# Addresses: "Calle de Alcalá, 45", "C/ Gran Vía 28, 3º B", "Avda. de la Constitución 12",
# "Plaza Mayor, 1", "calle Mayor nº 5, 2º izq.", "Paseo de Gracia 43, piso 2".
_UP = "A-ZÁÉÍÓÚÑÜ"
_LOW = "a-záéíóúñüç"
_TYPE = (
    r"(?:Calle|calle|C/|c/|Avenida|avenida|Avda\.|avda\.|Av\.|Avd\.|Plaza|plaza|Pza\.|Pl\.|"
    r"Paseo|paseo|Pº\.?|Po\.|Carrera|Camino|camino|Ronda|ronda|Travesía|travesía|Glorieta|"
    r"Carretera|Ctra\.|Rambla|rambla|Vía|Callejón|Urbanización|Urb\.)"
)
_PARTICLE = r"(?:de|del|de la|de los|de las|la|el|los|las|y|d'|en)"
_NAME = rf"(?:{_PARTICLE}\s)*[{_UP}][{_LOW}\-]+(?:\s(?:{_PARTICLE}\s)*[{_UP}][{_LOW}\-]+){{0,4}}"
_NUMBER = r"(?:(?:nº|n\.º|n°|núm\.|num\.|número|no\.)\s?)?\d{1,4}(?:\s?bis)?(?![\w]|[.,]\d)"
_UNIT = (
    r"(?:,?\s(?:\d{1,2}\s?[ºª°](?:\s?[A-Z](?![\w]))?(?:\s?(?:izq(?:da)?\.?|dcha\.?|izquierda|"
    r"derecha))?|piso\s\d{1,2}[ºª°]?(?:\s?[A-Z](?![\w]))?|puerta\s\d{1,2}|bajo|ático))*"
)
_ES_ADDRESS = re.compile(rf"(?<![\w/])(?<!\w\.){_TYPE}\s?{_NAME},?\s{_NUMBER}{_UNIT}")

LOCALE = Locale(
    name="es",
    phone_regions=("ES",),
    national_ids=(
        NationalIdDetector("ES_DNI", _DNI, stdnum_check("es.dni"), min_digits=8),
        NationalIdDetector("ES_NIE", _NIE, stdnum_check("es.nie"), min_digits=7),
    ),
    phone_shapes=(_ES_SHAPE, BARE_AFTER_CUE),
    addresses=(
        StreetAddressDetector(
            "es",
            [_ES_ADDRESS],
            hints=(
                "Calle",
                "calle",
                "C/",
                "c/",
                "venida",
                "Avda",
                "avda",
                "Av.",
                "Avd.",
                "Plaza",
                "plaza",
                "Pza.",
                "Pl.",
                "Paseo",
                "paseo",
                "Pº",
                "Po.",
                "Carrera",
                "Camino",
                "camino",
                "Ronda",
                "ronda",
                "ravesía",
                "Glorieta",
                "Carretera",
                "Ctra.",
                "Rambla",
                "rambla",
                "Vía",
                "Callejón",
                "Urbanización",
                "Urb.",
            ),
        ),
    ),
    description="DNI, NIE; Spanish phones; Calle/C//Avda./Plaza + nº, piso",
)
