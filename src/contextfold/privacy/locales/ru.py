"""Russian: SNILS and personal INN, Russian phones (trunk 8), Russian street addresses."""

from __future__ import annotations

import re

from ..address import StreetAddressDetector
from ..contact import PhoneShape
from ..identity import NationalIdDetector, stdnum_check
from . import Locale
from .common import BARE_AFTER_CUE

__all__ = ["LOCALE", "snils_valid"]

# SNILS: nine digits and a two-digit check number, printed "112-233-445 95". python-stdnum
# has no module for it. The check: digits weighted 9..1, sum mod 101, 100 → 00; the check
# is only defined for numbers above 001-001-998.
# Written grouped ("112-233-445 95") it is taken on its check; bare (11 digits, the shape of
# many order numbers, of which ~1 in 100 pass) only after the word "СНИЛС".
_SNILS = re.compile(
    r"\d(?<![\w\-.,/+].)\d{2}(?P<s>[\- ])\d{3}(?P=s)\d{3}[\- ]\d{2}(?![\w]|[.,/]\d|-\w)"
)
_SNILS_BARE = re.compile(r"\d(?<![\w\-.,/+].)\d{10}(?![\w]|[.,/]\d|-\w)")
_SNILS_CUE = re.compile(r"(?i)(?:снилс|snils|страхов)")
_SNILS_HINT = re.compile(r"СНИЛС|снилс|Снилс|SNILS|snils|трахов|ТРАХОВ").search


def snils_valid(compact: str) -> bool:
    """The SNILS check number on an 11-digit compacted value."""
    if len(compact) != 11 or not compact.isdigit() or int(compact[:9]) <= 1001998:
        return False
    total = sum(int(d) * w for d, w in zip(compact[:9], range(9, 0, -1), strict=True))
    check = total % 101
    return (0 if check == 100 else check) == int(compact[9:])


# Personal INN: twelve digits with two check digits (stdnum.ru.inn); a company's INN has ten.
_INN = re.compile(r"\d(?<![\w\-.,/+].)\d{11}(?![\w]|[.,/]\d|-\w)")


_inn_valid = stdnum_check("ru.inn")


def _personal_inn_valid(compact: str) -> bool:
    return len(compact) == 12 and _inn_valid(compact)


# Phones: ten national digits, trunk 8. "8 (916) 123-45-67", "8-916-123-45-67",
# "8 916 123 45 67", "(495) 123-45-67", "916 123-45-67", "8 (4852) 12-34-56".
_RU_PHONE = re.compile(
    r"(?<![\w+\-./:])(?<!\d[ ])(?:8[ \-]?)?(?:\(\d{3,5}\)[ \-]?|\d{3}[ \-])"
    r"\d{1,3}[ \-]?\d{2}[ \-]?\d{2}"
    r"(?![\w]|[.,\-/:]\d)"
)


def _ru_phone_ok(m: re.Match[str], text: str) -> bool:
    s = m.group()
    if s.startswith("8") and len("".join(c for c in s if c.isdigit())) == 11:
        return True
    if "(" in s:
        return True
    # No trunk, no brackets: "916 123-45-67" / "916 123 45 67".
    return re.fullmatch(r"\d{3}[ \-]\d{3}[ \-]\d{2}[ \-]\d{2}", s) is not None


_RU_SHAPE = PhoneShape("ru", _RU_PHONE, digits=(10, 11), accept=_ru_phone_ok)

# Addresses: "ул. Ленина, д. 5, кв. 12", "улица Тверская, дом 7", "пр-т Мира, д. 15",
# "Невский проспект, д. 28", "пер. Садовый 3", "ул. Малая Бронная, 10/2, кв. 4".
_UP = "А-ЯЁ"
_LOW = "а-яё"
# Street types, abbreviated or written out in any case ("на проспекте Мира", "по улице").
_PRE = (
    r"(?:ул\.|улиц(?:а|е|у|ы|ей)|пр-т|просп\.|проспект(?:е|а|у|ом)?|пр\.|пер\.|"
    r"переул(?:ок|ке|ка|ку|ком)|б-р|бул\.|бульвар(?:е|а|у|ом)?|ш\.|шоссе|наб\.|"
    r"набережн(?:ая|ой|ую)|пл\.|площад(?:ь|и)|проезд(?:е|а)?|пр-д|туп\.|тупик(?:е|а)?|"
    r"мкр\.?|микрорайон(?:е|а)?|алле(?:я|е|и|ю))"
)
_POST = (
    r"(?:улиц(?:а|е|у|ы|ей)|проспект(?:е|а|у|ом)?|переул(?:ок|ке|ка|ку|ком)|"
    r"бульвар(?:е|а|у|ом)?|шоссе|проезд(?:е|а)?|набережн(?:ая|ой|ую)|пр-т|пер\.|ул\.|пр\.)"
)
# "Ленина", "Малая Бронная", "1-я Тверская", "Б. Дмитровка" (Большая, abbreviated).
_NAME = rf"(?:\d{{1,2}}-?[яйе]\s|[{_UP}]\.\s?)?[{_UP}][{_LOW}\-]+(?:\s[{_UP}][{_LOW}\-]+){{0,2}}"
_HOUSE = (
    r",?\s?(?:(?:д\.|дом)\s?)?\d{1,4}[а-яА-Я]?(?:/\d{1,4})?(?![\w.,]\d)"
    r"(?:,?\s?(?:к\.|корп\.|корпус|стр\.|строение)\s?\d{1,3}(?![\w]))*"
    r"(?:(?:,?\s?(?:кв\.|квартира|офис|оф\.)\s?|-)\d{1,4}(?![\w]))?"
)
_RU_ADDRESS = re.compile(
    rf"(?<![\w\-])(?:{_PRE}\s?{_NAME}|[{_UP}][{_LOW}\-]+(?:\s[{_UP}][{_LOW}\-]+)?\s{_POST})"
    rf"{_HOUSE}"
)

LOCALE = Locale(
    name="ru",
    phone_regions=("RU",),
    national_ids=(
        NationalIdDetector("RU_SNILS", _SNILS, snils_valid, min_digits=11),
        NationalIdDetector(  # eleven digits in a row
            "RU_SNILS", _SNILS_BARE, snils_valid, cue=_SNILS_CUE, hint=_SNILS_HINT, needs_digits=11
        ),
        NationalIdDetector("RU_INN", _INN, _personal_inn_valid, min_digits=12),
    ),
    phone_shapes=(_RU_SHAPE, BARE_AFTER_CUE),
    addresses=(
        StreetAddressDetector(
            "ru",
            [_RU_ADDRESS],
            hints=(
                "ул",
                "пр",
                "пер",
                "б-р",
                "бул",
                "ш.",
                "шоссе",
                "наб",
                "пл",
                "туп",
                "мкр",
                "микрорайон",
                "аллея",
            ),
        ),
    ),
    description="SNILS, personal INN; Russian phones; ул./пр-т/пер. + д., кв.",
)
