"""Turkish: T.C. kimlik numarası, Turkish phone formats, Turkish street addresses."""

from __future__ import annotations

import re

from ..address import StreetAddressDetector
from ..contact import PhoneShape, phone_cue_before
from ..identity import NationalIdDetector, stdnum_check
from . import Locale
from .common import BARE_AFTER_CUE, TRUNK_ZERO

__all__ = ["LOCALE"]

# T.C. kimlik no: 11 digits, no leading zero, two check digits (stdnum.tr.tckimlik);
# written bare or, rarely, in groups of 3-3-3-2.
_TCKN = re.compile(
    r"[1-9](?<![\w\-.,/+].)\d{2}(?P<s>[ ]?)\d{3}(?P=s)\d{3}(?P=s)\d{2}(?![\w]|[.,/]\d|-\w)"
)

# Phones: ten national digits (area 2xx-4xx, mobile 5xx, 850), trunk 0. "0532 123 45 67",
# "0 532 123 45 67", "0 (532) 123 45 67", "(0532) 123 45 67", "532 123 45 67",
# "0532-123-45-67", "0532 123 4567", "05321234567".
_TR_PHONE = re.compile(
    r"(?<![\w+\-./:])(?<!\d[ ])"
    r"(?:0[ ]?\([2-58]\d{2}\)|\(0[2-58]\d{2}\)|0[ ]?[2-58]\d{2}|[2-58]\d{2})"
    r"[ .\-]?\d{3}[ .\-]?\d{2}[ .\-]?\d{2}(?![\w]|[.,\-/:]\d)"
)


def _tr_phone_ok(m: re.Match[str], text: str) -> bool:
    s = m.group()
    if s.isdigit():  # bare: a mobile with its trunk ("05321234567"), else only after a cue
        return (len(s) == 11 and s.startswith("05")) or phone_cue_before(text, m.start())
    if s[0] in "0(":
        return True
    # No trunk, no brackets ("532 123 45 67"): the 3-3-2-2 grouping with one separator.
    return re.fullmatch(r"\d{3}([ .\-])\d{3}\1\d{2}\1\d{2}", s) is not None


_TR_SHAPE = PhoneShape("tr", _TR_PHONE, digits=(10, 11), accept=_tr_phone_ok)

# Addresses: "[Moda Mah.] Atatürk Caddesi No:12 [D:3]", "Bağdat Cad. No: 45/3",
# "Şair Nefi Sk. No.7 Daire 5", "1453 Sokak No:4", "İnönü Bulvarı No 15 Kat 2".
_UP = "A-ZÇĞİÖŞÜ"
_LOW = "a-zçğıöşüâîû"
# Words that open a sentence before an address ("Adresim Atatürk Caddesi ...") are not
# part of the street name.
_NOT_NAME = (
    r"(?!(?:(?:Adres|Kargo|Paket|Teslimat|Fatura|Ofis|Şube|Mağaza|Sipariş|Müşteri|Gönder|Bura|"
    r"Ora|Lütfen)[a-zçğıöşü]*|Ev|Evim|Evimiz|Evin|Eve|Evde|Yeni|Eski|Benim|Bizim|Yer|Yeri)\b)"
)
_W = rf"(?:{_NOT_NAME}[{_UP}][{_LOW}'’]+|\d{{1,5}}\.?)"
_MAH = r"(?:Mahallesi|Mahalle|Mah\.|Mh\.)"
_STREET = (
    r"(?:Caddesi|Cadde|Cad\.|Cd\.|Sokağı|Sokak|Sok\.|Sk\.|Bulvarı|Bulv\.|Blv\.|Meydanı|Yolu"
    r"|caddesi|sokak|sokağı|bulvarı|cad\.|sok\.|sk\.)"
)
# A case-marked word ("Annemler", "Eşyaları", "Faturayı") opening the match before another
# name word is the sentence's subject or object, not part of the street name.
_CASE_MARKED = re.compile(
    rf"[{_UP}][{_LOW}]*(?:lar|ler|ları|leri|yı|yi|yu|yü|ımı|imi|umu|ümü|mız|miz|muz|müz)"
    rf"\s(?=[{_UP}][{_LOW}'’]+\s)"
)


def _trim_case_marked(address: str) -> int:
    m = _CASE_MARKED.match(address)
    if m is None:
        return 0
    rest = address[m.end() :]
    # Keep it when it is the whole name ("Çiçekler Sokak"): only the next word is left
    # before the street type.
    return m.end() if _TR_ADDRESS.match(rest) is not None else 0


_TR_ADDRESS = re.compile(
    rf"(?<![\w])(?:(?:{_W}\s){{1,3}}{_MAH},?\s)?(?:{_W}\s){{1,3}}{_STREET},?\s"
    rf"(?:(?:{_W}\s){{1,3}}{_STREET},?\s)?"
    r"(?:[Nn]o|NO|Numara|numara)\s?[:.]?\s?\d{1,4}[A-Z]?(?:\s?/\s?\d{1,3}[A-Z]?)?"
    r"(?:,?\s(?:D|Daire|daire|Kat|kat|K)\s?[:.]?\s?\d{1,3})*(?![\w])"
)

LOCALE = Locale(
    name="tr",
    phone_regions=("TR",),
    national_ids=(
        NationalIdDetector("TR_TCKN", _TCKN, stdnum_check("tr.tckimlik"), min_digits=11),
    ),
    phone_shapes=(_TR_SHAPE, TRUNK_ZERO, BARE_AFTER_CUE),
    addresses=(
        StreetAddressDetector(
            "tr",
            [_TR_ADDRESS],
            trim=_trim_case_marked,
            hints=(
                "Cad",
                "Cd.",
                "Sok",
                "Sk.",
                "Bulv",
                "Blv.",
                "Meydanı",
                "Yolu",
                "caddesi",
                "sokak",
                "sokağı",
                " sk.",
                "bulvarı",
                " cad.",
                " sok.",
            ),
        ),
    ),
    description="T.C. kimlik no; Turkish phone formats; Cad./Sk./Mah. No: addresses",
)
