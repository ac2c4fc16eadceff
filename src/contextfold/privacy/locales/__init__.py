"""Locales: which identity numbers, phone shapes and street conventions to look for.

A :class:`Locale` bundles what one language or country adds to the built-in detectors
(emails, cards, IBANs, IPs and secrets look the same everywhere). The registry is keyed by
locale name; ``Redactor(locales=[...])`` picks from it and :data:`DEFAULT_LOCALES` is what
``Redactor()`` uses. A tag with a region (``"de-AT"``) takes the language's detectors and
the region for libphonenumber. Add your own with :func:`register_locale`.

Built in:

====  ==========================================  =================================
name  identity numbers (placeholder type)          phone / address conventions
====  ==========================================  =================================
en    US SSN (``SSN``), UK NINO (``GB_NINO``)      US and UK numbers; English streets
tr    T.C. kimlik no (``TR_TCKN``)                 0 5xx xxx xx xx; Cad./Sk./Mah. No:
de    Steuer-ID (``DE_TAX_ID``), Personalausweis   0 trunk; -straße/Str./Weg/Platz + no.
      (``DE_ID_CARD``)
es    DNI (``ES_DNI``), NIE (``ES_NIE``)            9 digits, no trunk; Calle/C//Avda. nº
fr    NIR with key (``FR_NIR``)                    0x xx xx xx xx; n° (bis/ter) rue/av.
ru    SNILS (``RU_SNILS``), personal INN           8 (xxx) xxx-xx-xx; ул./пр-т, д., кв.
      (``RU_INN``)
it    codice fiscale (``IT_FISCAL_CODE``)          0 trunk
====  ==========================================  =================================
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ...errors import ConfigError
from ..contact import PhoneShape
from ..detectors import Detector

__all__ = [
    "DEFAULT_LOCALES",
    "Locale",
    "available_locales",
    "get_locale",
    "register_locale",
    "resolve_locales",
]

#: What ``Redactor()`` covers: English plus Turkish, German, Spanish, French, Russian and
#: Italian (whose codice fiscale is strongly validated, so it costs nothing to keep on).
DEFAULT_LOCALES: tuple[str, ...] = ("en", "tr", "de", "es", "fr", "ru", "it")

_BUILTIN = ("en", "tr", "de", "es", "fr", "ru", "it")
_TAG = re.compile(r"([a-z]{2,3})(?:[-_]([A-Za-z]{2}|\d{3}))?")


@dataclass(frozen=True)
class Locale:
    """What one locale adds. ``national_ids`` are detectors with a ``kind`` attribute (so
    they can be switched per kind); ``phone_shapes`` feed the one phone detector;
    ``addresses`` find ``ADDRESS`` spans; ``phone_regions`` are the ISO regions handed to
    libphonenumber when the ``phonenumbers`` extra is asked for."""

    name: str
    phone_regions: tuple[str, ...] = ()
    national_ids: tuple[Detector, ...] = ()
    phone_shapes: tuple[PhoneShape, ...] = ()
    addresses: tuple[Detector, ...] = ()
    description: str = field(default="", compare=False)


_REGISTRY: dict[str, Locale] = {}


def register_locale(locale: Locale, *, replace_existing: bool = False) -> None:
    """Add (or, with ``replace_existing``, replace) a locale so ``Redactor(locales=[name])``
    finds it. The name is a lower-case language code or any lower-case word."""
    if not isinstance(locale, Locale):
        raise ConfigError(f"register_locale needs a Locale, got {locale!r:.80}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", locale.name):
        raise ConfigError(f"locale name must be lower-case letters/digits, got {locale.name!r}")
    if locale.name in _REGISTRY and not replace_existing:
        raise ConfigError(f"locale {locale.name!r} is already registered")
    for det in locale.national_ids:
        if not isinstance(getattr(det, "kind", None), str):
            raise ConfigError(f"national id detector {det!r:.60} needs a 'kind' attribute")
    _REGISTRY[locale.name] = locale


def available_locales() -> list[str]:
    """Names ``Redactor(locales=...)`` accepts (built-in and registered)."""
    return sorted(set(_BUILTIN) | set(_REGISTRY))


def get_locale(tag: str) -> Locale:
    """The :class:`Locale` for ``"tr"``, ``"de-AT"`` or a registered name."""
    if not isinstance(tag, str):
        raise ConfigError(f"a locale is a string like 'tr' or 'de-AT', got {tag!r:.60}")
    if tag in _REGISTRY:
        return _REGISTRY[tag]
    m = _TAG.fullmatch(tag.strip())
    lang = m.group(1).lower() if m else tag
    if lang not in _REGISTRY and lang in _BUILTIN:
        module = importlib.import_module(f"{__name__}.{lang}")
        _REGISTRY.setdefault(lang, module.LOCALE)
    if lang not in _REGISTRY:
        raise ConfigError(
            f"unknown locale {tag!r}; available: {', '.join(available_locales())} "
            "(or add one with contextfold.privacy.locales.register_locale)"
        )
    locale = _REGISTRY[lang]
    region = m.group(2) if m else None
    if region:
        locale = replace(locale, phone_regions=(region.upper(),))
    return locale


def resolve_locales(locales: Iterable[str] | None) -> tuple[Locale, ...]:
    """``None`` → the defaults; otherwise each tag looked up, duplicates dropped."""
    if locales is None:
        tags: Sequence[str] = DEFAULT_LOCALES
    elif isinstance(locales, str):
        raise ConfigError(f"locales must be a list of tags like ['tr', 'de'], got {locales!r}")
    else:
        tags = list(locales)
    out: dict[str, Locale] = {}
    for tag in tags:
        locale = get_locale(tag)
        out.setdefault(tag, locale)
    return tuple(out.values())
