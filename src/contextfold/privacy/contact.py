"""Contact data: email addresses and phone numbers.

Phone numbers come in two families. International numbers (``+49 30 1234567``,
``(+34) 612 345 678``) are recognised everywhere. National numbers are written differently
in every country (trunk ``0`` in most of Europe, ``8`` in Russia, none in Spain; brackets
round the area code; digits grouped 3-3-2-2 in Turkey and Russia), so each locale brings
its own :class:`PhoneShape` and the :class:`PhoneDetector` runs the shapes of the locales in
use. Rejections shared by every national shape keep dates, prices and counts out. With
``regions`` (needs the ``phonenumbers`` extra) libphonenumber's matcher adds the national
formats of those regions, validated against its metadata.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .detectors import MIN_CLUSTER, Finding, digit_windows, digits_of

__all__ = ["EmailDetector", "PhoneDetector", "PhoneShape", "phone_cue_before"]


_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)


_FILE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "pdf", "ico", "bmp"})


def _has_at(text: str) -> bool:
    return "@" in text


class EmailDetector:
    """RFC 5322 "dot-atom" addresses as people write them (``jane.doe+news@mail.example.co.uk``)."""

    gate = staticmethod(_has_at)  # Detector.gate: every address holds an "@"

    def find(self, text: str) -> Iterator[Finding]:
        if "@" not in text:
            return
        for m in _EMAIL.finditer(text):
            address = m.group()
            local = address[: address.index("@")]
            if ".." in local or local.endswith("."):
                continue
            if address.rsplit(".", 1)[1].lower() in _FILE_EXTENSIONS:
                continue  # "logo@2x.png" is an asset name
            yield Finding(m.start(), m.end(), "EMAIL")


# --- phone -------------------------------------------------------------------------------

# International: "+" country code (or "(+34)"), then digit groups separated by at most one
# of space, dot, dash, slash, optionally with a bracketed trunk/area part ("+44 (0)20 7946 0958").
_PHONE_INTL = re.compile(
    r"(?<![\w+])(?:\+[1-9]\d{0,2}|\(\+[1-9]\d{0,2}\))"
    r"(?:[ .\-/]?\(\d{1,4}\)|[ .\-/]?\d{1,5}){1,7}(?![\w])"
)
_HAS_DIGIT = re.compile(r"\d").search
_HAS_PAIR = re.compile(r"\d\d").search
_DATE_LIKE = re.compile(r"(?<!\d)\d{1,2}[ .\-/]\d{1,2}[ .\-/](?:19|20)\d{2}(?!\d)")
# A number that is an amount or a count: a currency or unit right after it, or a currency
# sign right before it ("612 345 678 €", "€ 912.345.678", "700 000 000 habitants").
_AMOUNT_AFTER = re.compile(
    r"\s?(?:[€$£₺₽%]|(?i:eur|euros?|usd|dollars?|pounds?|tl\b|try\b|lira|руб|рубл|тыс|"
    r"habitant|personas|personnes|menschen|kişi|человек|km|kg|mb|gb))"
)
_CURRENCY_BEFORE = re.compile(r"[€$£₺₽]\s?$")
# "700 000 000": three-digit groups of zeros are a round amount, not a subscriber number.
_ROUND_AMOUNT = re.compile(r"\d{1,3}(?:[ .]000){2}$").search
# Words that announce a phone number, in the default locales' languages.
_PHONE_CUE = re.compile(
    r"(?i)\b(?:tel|phone|telefon|teléfono|telefono|téléphone|fon|handy|mobil|móvil|movil|"
    r"cel|portable|cep|gsm|whatsapp|sms|llam|appel|ruf|call|ring|text|contact|kontakt|"
    r"iletişim|ara|звон|тел|моб|сотов|контакт)"
)


def phone_cue_before(text: str, start: int, window: int = 32) -> bool:
    """True when a phone cue word ("tel", "Handy", "móvil", "телефон") ends shortly before
    ``start``: bare digit runs are taken as phone numbers only after one."""
    return _PHONE_CUE.search(text, max(0, start - window), start) is not None


def _looks_like_date(s: str) -> bool:
    return _DATE_LIKE.search(s) is not None


@dataclass(frozen=True)
class PhoneShape:
    """One national way of writing phone numbers.

    ``pattern`` proposes candidates; a candidate is kept when its digit count is one of
    ``digits``, it is not a date, an amount or a count, and ``accept(match, text)`` (when
    given) agrees — for rules such as "without a separator only after a cue word".
    """

    name: str
    pattern: re.Pattern[str]
    digits: tuple[int, ...]
    accept: Callable[[re.Match[str], str], bool] | None = None


class PhoneDetector:
    """Phone numbers: international (``+…``) everywhere, plus the national ``shapes`` of the
    locales in use (see :mod:`contextfold.privacy.locales`).

    Bare digit runs without any separator are taken as national numbers only in shapes that
    say so (a trunk plus mobile prefix such as Turkish ``05…``, or after a cue word): far more
    often they are order numbers or timestamps. With ``regions`` (needs the ``phonenumbers``
    extra) libphonenumber's matcher also runs for those regions.
    """

    def __init__(self, shapes: Sequence[PhoneShape] = (), regions: Sequence[str] = ()) -> None:
        seen: dict[str, PhoneShape] = {}
        for shape in shapes:
            seen.setdefault(shape.name, shape)
        self._shapes = tuple(seen.values())
        self._regions = tuple(dict.fromkeys(regions))
        self._pn: Any = None
        if self._regions:
            try:
                import phonenumbers
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ImportError(
                    "phone_regions needs the phonenumbers package: "
                    'pip install "contextfold[phonenumbers]"'
                ) from exc
            for region in self._regions:
                if region not in phonenumbers.SUPPORTED_REGIONS:
                    raise ConfigError(f"unknown phone region {region!r}; use ISO codes like 'DE'")
            self._pn = phonenumbers
        # International numbers hold 8-15 digits joined by cluster separators, national
        # shapes come from digit_windows(text, 9); libphonenumber has its own rules.
        self.needs_digits = 0 if self._regions else MIN_CLUSTER

    @property
    def regions(self) -> tuple[str, ...]:
        return self._regions

    def find(self, text: str) -> Iterator[Finding]:
        found = list(self._regex(text))
        yield from found
        if self._pn is not None:
            for extra in self._libphonenumber(text):
                if all(extra.end <= f.start or extra.start >= f.end for f in found):
                    yield extra

    def _regex(self, text: str) -> Iterator[Finding]:
        if _HAS_PAIR(text) is None:
            return
        for m in _PHONE_INTL.finditer(text) if "+" in text else ():
            if 8 <= len(digits_of(m.group())) <= 15:
                yield Finding(m.start(), m.end(), "PHONE")
        windows = digit_windows(text, 9) if self._shapes else []
        for shape, (pos, endpos) in ((s, w) for w in windows for s in self._shapes):
            for m in shape.pattern.finditer(text, pos, endpos):
                s = m.group()
                if len(digits_of(s)) not in shape.digits or _looks_like_date(s):
                    continue
                if _AMOUNT_AFTER.match(text, m.end()) or _CURRENCY_BEFORE.search(
                    text, max(0, m.start() - 2), m.start()
                ):
                    continue
                if _ROUND_AMOUNT(s) is not None:
                    continue
                if shape.accept is not None and not shape.accept(m, text):
                    continue
                yield Finding(m.start(), m.end(), "PHONE")

    def _libphonenumber(self, text: str) -> Iterator[Finding]:
        pn = self._pn
        for region in self._regions:
            try:
                matcher = pn.PhoneNumberMatcher(text, region, leniency=pn.Leniency.STRICT_GROUPING)
                for match in matcher:
                    if not _looks_like_date(match.raw_string):
                        yield Finding(match.start, match.end, "PHONE")
            except Exception:  # a third-party parser must not break redaction
                continue
