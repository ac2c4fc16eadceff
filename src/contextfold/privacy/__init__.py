"""PII redaction: personal data → typed placeholders before anything is stored or sent.

``Redactor().redact("mail jane@example.com", scope="s1")`` returns
``"mail <EMAIL_1>"``; within scope ``s1`` the same address stays ``<EMAIL_1>``. See
:class:`Redactor` for the contracts (idempotent, stable within a scope, never raises on a
string) and :class:`PlaceholderVault` for the opt-in reversible mode. National identity
numbers, phone shapes and street conventions come per locale
(:mod:`contextfold.privacy.locales`; ``Redactor(locales=["tr", "de"])``). The Presidio
adapter lives in :mod:`contextfold.privacy.presidio` (extra ``presidio``).
"""

from __future__ import annotations

from .contact import PhoneShape
from .detectors import Detector, Finding, PatternDetector
from .financial import iban_valid, luhn_valid
from .identity import NationalIdDetector, ssn_valid
from .locales import DEFAULT_LOCALES, Locale, available_locales, register_locale
from .redactor import BUILTIN_KINDS, NATIONAL_ID_KINDS, PLACEHOLDER, Redactor
from .vault import InMemoryVault, PlaceholderVault

__all__ = [
    "BUILTIN_KINDS",
    "DEFAULT_LOCALES",
    "NATIONAL_ID_KINDS",
    "PLACEHOLDER",
    "Detector",
    "Finding",
    "InMemoryVault",
    "Locale",
    "NationalIdDetector",
    "PatternDetector",
    "PhoneShape",
    "PlaceholderVault",
    "Redactor",
    "available_locales",
    "iban_valid",
    "luhn_valid",
    "register_locale",
    "ssn_valid",
]
