"""PII redaction: personal data → typed placeholders before anything is stored or sent.

``Redactor().redact("mail jane@example.com", scope="s1")`` returns
``"mail <EMAIL_1>"``; within scope ``s1`` the same address stays ``<EMAIL_1>``. See
:class:`Redactor` for the contracts (idempotent, stable within a scope, never raises on a
string) and :class:`PlaceholderVault` for the opt-in reversible mode. The Presidio adapter
lives in :mod:`contextfold.privacy.presidio` (extra ``presidio``).
"""

from __future__ import annotations

from .detectors import (
    Detector,
    Finding,
    PatternDetector,
    iban_valid,
    luhn_valid,
    ssn_valid,
)
from .redactor import BUILTIN_KINDS, PLACEHOLDER, Redactor
from .vault import InMemoryVault, PlaceholderVault

__all__ = [
    "BUILTIN_KINDS",
    "PLACEHOLDER",
    "Detector",
    "Finding",
    "InMemoryVault",
    "PatternDetector",
    "PlaceholderVault",
    "Redactor",
    "iban_valid",
    "luhn_valid",
    "ssn_valid",
]
