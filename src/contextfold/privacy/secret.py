"""Credentials: API keys, tokens, private-key blocks and values after password/key cues."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .detectors import Finding, literal_union

__all__ = ["SecretDetector"]


# --- secrets -----------------------------------------------------------------------------

_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    # PEM private key blocks; an unterminated block runs to the end of its base64 lines.
    re.compile(
        r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY-----"
        r"(?:[^\x00]*?-----END[A-Z0-9 ]{0,40} PRIVATE KEY-----|(?:\s*[A-Za-z0-9+/=:,\-]+)*)"
    ),
    re.compile(r"(?<![\w-])sk-(?:[A-Za-z]{2,10}-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI, Anthropic
    re.compile(r"(?<![\w-])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}(?![A-Za-z0-9])"),  # AWS
    re.compile(r"(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    re.compile(r"(?<![\w-])xox[abprs]-[A-Za-z0-9\-]{10,}"),  # Slack
    re.compile(r"(?<![\w-])AIza[0-9A-Za-z_\-]{35}"),  # Google API key
    re.compile(  # JWT
        r"(?<![\w-])eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,}"
    ),
)
_SECRET_HINTS: tuple[tuple[str, ...], ...] = (
    ("PRIVATE KEY-----",),
    ("sk-",),
    ("sk_", "rk_", "pk_"),
    ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA"),
    ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ("xox",),
    ("AIza",),
    ("eyJ",),
)
_CUE_HINTS = ("bearer", "key", "token", "secret", "passw", "pwd")
# Values after a cue: "Bearer <token>", "api_key=<value>", "password: <value>".
_SECRET_CUED = re.compile(
    r"(?i)(?:\bbearer\s+|\b(?:api[_\- ]?key|secret(?:[_\- ]?key)?|access[_\- ]?token"
    r"|auth[_\- ]?token|token|password|passwd|pwd|aws_secret_access_key)"
    r"[\"']?(?P<sep>\s*(?:is\s+|[:=]\s*)|\s+)[\"']?)"
    r"(?P<value>[A-Za-z0-9._~+/=\-!@#$%^&*]{8,}?)(?=[\"']|[.,;:!?]?(?:\s|$))"
)


_ANY_HINT = literal_union(h for hints in _SECRET_HINTS for h in hints).search


def _any_hint(text: str) -> bool:
    """Whether ``text`` holds a hint: plain substring tests, grouped by a character most
    hints hold, rule most text out before the regex scan."""
    if not (
        ("_" in text and ("k_" in text or "gh" in text))  # sk_ rk_ pk_ gh?_ github_pat_
        or ("-" in text and ("sk-" in text or "KEY-----" in text))
        or ("A" in text and ("AKIA" in text or "ASIA" in text or "AGPA" in text
                             or "AIDA" in text or "AROA" in text or "ANPA" in text
                             or "AIza" in text))
        or ("x" in text and "xox" in text)  # a one-character scan first: far faster
        or ("J" in text and "eyJ" in text)
    ):
        return False
    return _ANY_HINT(text) is not None


def _maybe_secret(text: str) -> bool:
    """The detector's gate (``Detector.gate``): a hint of a key shape, or a cue word."""
    if _any_hint(text):
        return True
    lowered = text.lower()  # _CUE_HINTS, unrolled (asked of every text)
    return (
        "bearer" in lowered
        or "key" in lowered
        or "token" in lowered
        or "secret" in lowered
        or "passw" in lowered
        or "pwd" in lowered
    )


class SecretDetector:
    """API keys and credentials in common shapes: ``sk-…`` (OpenAI/Anthropic), Stripe keys,
    AWS access key ids (``AKIA…``), GitHub and Slack tokens, Google API keys, JWTs, PEM
    private-key blocks, bearer tokens, and values after ``api_key=`` / ``password:`` cues."""

    gate = staticmethod(_maybe_secret)

    def find(self, text: str) -> Iterator[Finding]:
        # Substring checks are ~100x faster than a regex scan and most text has no hint.
        for hints, pattern in (
            zip(_SECRET_HINTS, _SECRET_PATTERNS, strict=True) if _any_hint(text) else ()
        ):
            if any(h in text for h in hints):
                for m in pattern.finditer(text):
                    yield Finding(m.start(), m.end(), "SECRET")
        lowered = text.lower()
        first = -1
        for cue in _CUE_HINTS:
            i = lowered.find(cue)
            if i >= 0 and (first < 0 or i < first):
                first = i
        if first < 0:
            return
        # The cue word starts at most ~25 characters before its hint ("aws_secret_access_key").
        for m in _SECRET_CUED.finditer(text, max(0, first - 25)):
            value = m.group("value")
            # A cue followed by an ordinary word ("token is required") is not a secret; after
            # a bare space ("password Winter2024!") the value must also mix in a non-letter.
            if value.isalpha() and (value.islower() or not (m.group("sep") or "").strip()):
                continue
            yield Finding(m.start("value"), m.end("value"), "SECRET")
