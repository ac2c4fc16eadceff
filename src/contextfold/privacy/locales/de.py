"""German: Steuer-ID, Personalausweis number, German phones, German street addresses."""

from __future__ import annotations

import re
from functools import lru_cache

from ..address import StreetAddressDetector
from ..identity import NationalIdDetector, stdnum_check
from . import Locale
from .common import BARE_AFTER_CUE, TRUNK_ZERO

__all__ = ["LOCALE", "id_card_valid"]

# Steuerliche Identifikationsnummer: 11 digits, check digit ISO 7064 mod 11,10 plus the
# digit-repetition rule (stdnum.de.idnr); printed "12 345 678 901" or bare.
_TAX_ID = re.compile(
    r"\d(?<![\w\-.,/+].)\d(?P<s>[ ]?)\d{3}(?P=s)\d{3}(?P=s)\d{3}(?![\w]|[.,/]\d|-\w)"
)

# Personalausweis (since 2010): nine characters from an alphabet without vowels and
# look-alikes (first one a letter L M N P R T V W X Y), then the ICAO 9303 check digit
# (weights 7-3-1) as in the machine-readable zone. python-stdnum has no module for it.
# One code in ten of that shape passes the check, so both forms — with the check digit, and
# the nine characters printed on the card front — are taken only after a cue word.
_ID_ALPHABET = "CFGHJKLMNPRTVWXYZ0123456789"
_ID_CARD = re.compile(r"[LMNPRTVWXY](?<![\w\-].)[CFGHJ-NPRTV-Z0-9]{8}\d(?![\w])")
# Printed on the card front without the check digit: taken after a cue word only.
_ID_CARD_CUE = re.compile(r"(?i)(?:ausweis|perso\b|id-karte|idkarte)")


# Case-sensitive literals: a cheap test before the case-insensitive cue search.
_ID_CARD_HINTS = ("usweis", "USWEIS", "erso", "ERSO", "ID-Karte", "IDKarte", "Idkarte")


@lru_cache(maxsize=4)  # both Ausweis detectors ask about the same text
def _id_card_hint(text: str) -> bool:
    """Whether one of :data:`_ID_CARD_HINTS` occurs. Asked of every text, so the
    upper-case ones are looked for only after a one-character test for a capital they
    hold (a single character is found by a memchr scan; each longer literal costs a
    scan of its own)."""
    return (
        "usweis" in text
        or "erso" in text
        or "Idkarte" in text
        or ("S" in text and ("USWEIS" in text or "ERSO" in text))
        or ("K" in text and ("ID-Karte" in text or "IDKarte" in text))
    )


_ID_CARD_NINE = re.compile(r"[LMNPRTVWXY](?<![\w\-].)[CFGHJ-NPRTV-Z0-9]{8}(?![\w])")


def _icao_check(chars: str) -> int:
    total = 0
    for i, ch in enumerate(chars):
        value = int(ch) if ch.isdigit() else ord(ch) - 55
        total += value * (7, 3, 1)[i % 3]
    return total % 10


def id_card_valid(compact: str) -> bool:
    """A ten-character Personalausweis number whose last digit is the ICAO 9303 check."""
    return (
        len(compact) == 10
        and compact[0] in "LMNPRTVWXY"
        and all(c in _ID_ALPHABET for c in compact[:9])
        and compact[9].isdigit()
        and any(c.isdigit() for c in compact[1:9])
        and _icao_check(compact[:9]) == int(compact[9])
    )


def _nine_valid(compact: str) -> bool:
    return (
        len(compact) == 9
        and all(c in _ID_ALPHABET for c in compact)
        and sum(c.isdigit() for c in compact) >= 2
    )


# Addresses: "Hauptstraße 5", "Goethestr. 7a", "Berliner Straße 12-14", "Lindenweg 3",
# "Kurt-Schumacher-Platz 1", "Kurfürstendamm 21", "Am Markt 3", "Unter den Linden 77".
_UP = "A-ZÄÖÜ"
_LOW = "a-zäöüß"
# "-ring" and "-anger" are left out of compounds: "Monitoring 5", "Stranger 3".
_SUFFIX = (
    r"(?:straße|strasse|str\.|weg|platz|allee|gasse|damm|ufer|chaussee|steig|pfad|"
    r"markt|graben|kamp|stieg)"
)
_SUFFIX_WORD = r"(?:Straße|Strasse|Str\.|Weg|Platz|Allee|Gasse|Ring|Damm|Ufer|Chaussee)"
_COMPOUND = rf"[{_UP}][{_LOW}]{{2,}}(?:-[{_UP}][{_LOW}]+)*-?(?i:{_SUFFIX})"
_SEPARATE = (
    r"(?!(?:Auf|Der|Die|Das|Den|Dem|Ein|Eine|Im|Am|Zum|Zur|The|On|In|At)\s)"
    rf"(?:[{_UP}][{_LOW}]+(?:-[{_UP}][{_LOW}]+)*\s){{1,2}}{_SUFFIX_WORD}"
)
# "Am Markt 3", but not "Am Montag 5" or "Im Schnitt 3": common nouns after a preposition.
_NOT_A_STREET = (
    r"(?!(?:Montag|Dienstag|Mittwoch|Donnerstag|Freitag|Samstag|Sonntag|Wochenende|Jahr|"
    r"Monat|Tag|Abend|Morgen|Anfang|Ende|Schnitt|Durchschnitt|Moment|Raum|Zimmer|Kapitel|"
    r"Januar|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember|"
    r"Sommer|Winter|Herbst|Frühjahr|Frühling|Alter|Vergleich|Prinzip|Grunde|Rahmen|Bereich|"
    r"Team|Stock|Gegensatz|Mittel|Voraus|Rang|Platz|Minute|Stunde|Woche|Jahre)\b)"
)
_PREFIXED = (
    rf"(?:Am|An der|An den|Auf der|Auf dem|Im|In der|In den|Zum|Zur|Unter den|Hinter der"
    rf"|Vor dem)\s{_NOT_A_STREET}[{_UP}][{_LOW}\-]+"
)
_HOUSE = r"\s?\d{1,3}(?:\s?[a-h])?(?:\s?[\-–/]\s?\d{1,4}[a-h]?)?(?![\w]|[.,]\d)"
_DE_ADDRESS = re.compile(rf"(?<![\w\-])(?:{_COMPOUND}|{_SEPARATE}|{_PREFIXED}){_HOUSE}")

LOCALE = Locale(
    name="de",
    phone_regions=("DE",),
    national_ids=(
        NationalIdDetector("DE_TAX_ID", _TAX_ID, stdnum_check("de.idnr"), min_digits=11),
        NationalIdDetector(
            "DE_ID_CARD", _ID_CARD, id_card_valid, cue=_ID_CARD_CUE, hint=_id_card_hint
        ),
        NationalIdDetector(
            "DE_ID_CARD", _ID_CARD_NINE, _nine_valid, cue=_ID_CARD_CUE, hint=_id_card_hint
        ),
    ),
    phone_shapes=(TRUNK_ZERO, BARE_AFTER_CUE),
    addresses=(
        StreetAddressDetector(
            "de",
            [_DE_ADDRESS],
            hints=(
                "straße",
                "strasse",
                "Straße",
                "Strasse",
                "str.",
                "Str.",
                "weg ",
                "Weg ",
                "platz",
                "Platz",
                "allee",
                "Allee",
                "gasse",
                "Gasse",
                " Ring ",
                "damm",
                "Damm",
                "ufer",
                "Ufer",
                "chaussee",
                "Chaussee",
                "steig",
                "pfad",
                "markt",
                "graben",
                "kamp",
                "stieg",
                "Am ",
                "An d",
                "Auf d",
                "Im ",
                "In d",
                "Zum ",
                "Zur ",
                "Unter den",
                "Hinter der",
                "Vor dem",
            ),
        ),
    ),
    description="Steuer-ID, Personalausweis; German phones; -straße/Str./Weg/Platz + number",
)
