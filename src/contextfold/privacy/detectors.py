"""PII detectors: find spans of personal data in text, validated where a checksum exists.

Every detector here is pure (no I/O) and returns :class:`Finding` spans; the
:class:`~contextfold.privacy.Redactor` resolves overlaps and replaces them. Regular
expressions only *propose* candidates; a candidate becomes a finding only after the
type's own validation (Luhn for cards, mod-97 for IBANs, ``ipaddress`` for IPs, the SSA
structure rules for SSNs), which is what keeps order numbers, dates and versions out.

The contract a detector must keep: ``find`` never raises on any ``str`` and returns spans
with ``0 <= start < end <= len(text)``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigError

__all__ = [
    "AddressDetector",
    "CardDetector",
    "Detector",
    "EmailDetector",
    "Finding",
    "IBANDetector",
    "IPDetector",
    "PatternDetector",
    "PhoneDetector",
    "SSNDetector",
    "SecretDetector",
    "iban_valid",
    "luhn_valid",
    "ssn_valid",
]

_KIND = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected value: ``text[start:end]`` is personal data of type ``kind`` (``EMAIL``)."""

    start: int
    end: int
    kind: str


@runtime_checkable
class Detector(Protocol):
    """Finds personal data of one or more kinds. ``find`` must never raise on a ``str``."""

    def find(self, text: str) -> Iterable[Finding]: ...


def check_kind(kind: str) -> str:
    """Placeholder kinds are upper-case words joined by ``_`` so ``<KIND_N>`` stays parseable."""
    if not isinstance(kind, str) or _KIND.fullmatch(kind) is None:
        raise ConfigError(
            f"PII kind must be upper-case letters, digits and single underscores "
            f"(like 'EMPLOYEE_ID'), got {kind!r}"
        )
    return kind


# --- email -------------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)


_FILE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "pdf", "ico", "bmp"})


class EmailDetector:
    """RFC 5322 "dot-atom" addresses as people write them (``jane.doe+news@mail.example.co.uk``)."""

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

# International: "+" country code, then digit groups separated by at most one of space, dot,
# dash, slash, optionally with a bracketed trunk/area part ("+44 (0)20 7946 0958").
_PHONE_INTL = re.compile(
    r"(?<![\w+])\+[1-9]\d{0,2}(?:[ .\-/]?\(\d{1,4}\)|[ .\-/]?\d{1,5}){1,7}(?![\w])"
)
# North American: (415) 555-2671, 415-555-2671, 415.555.2671, 415 555 2671, 1-800-555-0199.
_PHONE_NANP = re.compile(
    r"(?<![\w+\-.])(?:1[ .\-])?(?:\([2-9]\d{2}\)[ ]?|[2-9]\d{2}[ .\-])"
    r"[2-9]\d{2}[ .\-]\d{4}(?![\w]|[.\-]\d)"
)
# European national formats: a leading 0 trunk prefix, at least one separator, 9-12 digits
# ("020 7946 0958", "07700 900123", "030 901820", "0151 23456789", "01 42 68 53 00",
# "06-12345678", "(020) 7946 0958").
_PHONE_EU = re.compile(
    r"(?<![\w+\-./:])(?<!\d[ ])(?:\(0[1-9]\d{0,3}\)[ ]?|0[1-9]\d{0,3}[ .\-/])"
    r"\d{2,8}(?:[ .\-]\d{2,8}){0,4}(?![\w]|[.\-/:]\d)"
)


_HAS_DIGIT = re.compile(r"\d").search
_HAS_RUN = re.compile(r"\d{2}[ \-.]?\d{2}").search


def _digits(s: str) -> str:
    return "".join(c for c in s if "0" <= c <= "9")


class PhoneDetector:
    """Phone numbers: E.164 / international (``+…``) and common US and European national forms.

    Bare digit runs without any separator are not taken as national numbers: they are far
    more often order numbers or timestamps. With ``regions`` (needs the ``phonenumbers``
    extra) the national formats of those regions are also recognised by libphonenumber's
    matcher, validated against its metadata.
    """

    def __init__(self, regions: Sequence[str] = ()) -> None:
        self._regions = tuple(regions)
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

    def find(self, text: str) -> Iterator[Finding]:
        found = list(self._regex(text))
        yield from found
        if self._pn is not None:
            for extra in self._libphonenumber(text):
                if all(extra.end <= f.start or extra.start >= f.end for f in found):
                    yield extra

    def _regex(self, text: str) -> Iterator[Finding]:
        if _HAS_DIGIT(text) is None:
            return
        for m in _PHONE_INTL.finditer(text) if "+" in text else ():
            if 8 <= len(_digits(m.group())) <= 15:
                yield Finding(m.start(), m.end(), "PHONE")
        for m in _PHONE_NANP.finditer(text):
            yield Finding(m.start(), m.end(), "PHONE")
        for m in _PHONE_EU.finditer(text):
            n = len(_digits(m.group()))
            if 9 <= n <= 12 and not _looks_like_date(m.group()):
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


_DATE_LIKE = re.compile(r"(?<!\d)\d{1,2}[ .\-/]\d{1,2}[ .\-/](?:19|20)\d{2}(?!\d)")


def _looks_like_date(s: str) -> bool:
    return _DATE_LIKE.search(s) is not None


# --- payment cards -----------------------------------------------------------------------

# A run of digit groups joined by single spaces or dashes; sub-runs are tried so that a
# card followed by another number ("4111 1111 1111 1111 12/27") is still found.
_DIGIT_RUN = re.compile(r"(?<![\w\-.,/])\d+(?:[ \-]\d+)*(?![\w]|[.,/]\d)")
_GROUP = re.compile(r"\d+")


def luhn_valid(digits: str) -> bool:
    """The Luhn mod-10 check used by every card scheme."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _issuer_plausible(digits: str) -> bool:
    """Issuer prefix fits the length: 13 is Visa only, 14 Diners, 15 Amex, 16 any major
    scheme (2-6), 17-19 Visa, Mastercard/Maestro, Discover, UnionPay, Mir."""
    n = len(digits)
    if n == 13:
        return digits[0] == "4"
    if n == 14:
        return digits[:2] in ("30", "36", "38", "39")
    if n == 15:
        return digits[:2] in ("34", "37")
    if n == 16:
        return digits[0] in "23456"
    return digits[0] in "2456"


_IBAN_HEAD = re.compile(r"[A-Za-z]{2}\d{2}[ \-]$")


class CardDetector:
    """Payment card numbers: 13-19 digits (optionally in groups split by spaces or dashes),
    an issuer prefix that fits the length (Visa, Mastercard, Amex, Discover, JCB, Diners,
    UnionPay, Maestro), and a passing Luhn check. All-same-digit numbers are rejected."""

    def find(self, text: str) -> Iterator[Finding]:
        if _HAS_RUN(text) is None:
            return
        for run in _DIGIT_RUN.finditer(text):
            s = run.group()
            if len(s) < 13 or _IBAN_HEAD.search(text, max(0, run.start() - 5), run.start()):
                continue  # too short, or the body of an IBAN whose checksum failed
            groups = [(g.start(), g.end()) for g in _GROUP.finditer(s)]
            if len(groups) > 40:
                continue
            i = 0
            while i < len(groups):
                found = self._longest_from(s, groups, i)
                if found is None:
                    i += 1
                    continue
                j = found
                yield Finding(run.start() + groups[i][0], run.start() + groups[j][1], "CARD")
                i = j + 1

    @staticmethod
    def _longest_from(s: str, groups: list[tuple[int, int]], i: int) -> int | None:
        best: int | None = None
        n = 0
        sep: str | None = None
        for j in range(i, len(groups)):
            if j > i:
                this_sep = s[groups[j - 1][1]]
                if sep is None:
                    sep = this_sep
                elif this_sep != sep:
                    break
            n += groups[j][1] - groups[j][0]
            if n > 19:
                break
            if n >= 13:
                digits = _digits(s[groups[i][0] : groups[j][1]])
                if _issuer_plausible(digits) and len(set(digits)) > 1 and luhn_valid(digits):
                    best = j
        return best


# --- IBAN --------------------------------------------------------------------------------

IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
    "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20,
    "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
    "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
    "YE": 30,
}  # fmt: skip

_IBAN = re.compile(r"(?<![\w])[A-Za-z]{2}\d{2}(?:[ \-]?[A-Za-z0-9]){11,34}")


def iban_valid(iban: str) -> bool:
    """Country length from the IBAN registry and the ISO 13616 mod-97 check (== 1)."""
    iban = iban.upper()
    if len(iban) != IBAN_LENGTHS.get(iban[:2], -1) or not iban.isascii() or not iban.isalnum():
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


class IBANDetector:
    """IBANs, compact or in groups of four, accepted only with the right length for their
    country and a passing mod-97 check."""

    def find(self, text: str) -> Iterator[Finding]:
        for m in _IBAN.finditer(text):
            raw = m.group()
            want = IBAN_LENGTHS.get(raw[:2].upper())
            if want is None:
                continue
            # Walk the candidate until exactly `want` alphanumerics are consumed.
            count = 0
            end = 0
            for k, ch in enumerate(raw):
                if ch.isalnum():
                    count += 1
                    if count == want:
                        end = k + 1
                        break
            if count != want:
                continue
            after = text[m.start() + end : m.start() + end + 1]
            if after.isalnum():
                continue
            if iban_valid("".join(c for c in raw[:end] if c.isalnum())):
                yield Finding(m.start(), m.start() + end, "IBAN")


# --- US SSN ------------------------------------------------------------------------------

_SSN = re.compile(r"(?<![\w\-.])(\d{3})([\- ]?)(\d{2})\2(\d{4})(?![\w]|[\-.]\d)")
_SSN_CONTEXT = re.compile(r"(?i)(?:ssn|social security|ss#|soc\.? ?sec)")


def ssn_valid(area: str, group: str, serial: str) -> bool:
    """SSA structure rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    return area != "000" and area != "666" and area[0] != "9" and group != "00" and serial != "0000"


class SSNDetector:
    """US Social Security numbers ``123-45-6789`` / ``123 45 6789``; a bare nine-digit run is
    taken only within 40 characters after a cue ("SSN", "social security")."""

    def find(self, text: str) -> Iterator[Finding]:
        if _HAS_RUN(text) is None:
            return
        for m in _SSN.finditer(text):
            area, sep, group, serial = m.groups()
            if not ssn_valid(area, group, serial):
                continue
            if not sep and _SSN_CONTEXT.search(text, max(0, m.start() - 40), m.start()) is None:
                continue
            yield Finding(m.start(), m.end(), "SSN")


# --- IP addresses ------------------------------------------------------------------------

_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3}|:)?"
    r"(?:%[0-9A-Za-z]+)?(?![\w:])"
)
_IPV6_HINT = re.compile(r"[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{0,4}:").search
_VERSION_CUE = re.compile(
    r"(?i)\b(?:version|ver\.|release|build|firmware|fw|patch|update|upgrade to)\s*$"
)


class IPDetector:
    """IPv4 and IPv6 addresses, validated by :mod:`ipaddress`. A dotted quad right after
    "version"/"build"/"release" is a version number, not an address."""

    def find(self, text: str) -> Iterator[Finding]:
        for m in _IPV4.finditer(text) if "." in text else ():
            try:
                ipaddress.IPv4Address(m.group())
            except ValueError:
                continue
            if _VERSION_CUE.search(text, max(0, m.start() - 12), m.start()):
                continue
            yield Finding(m.start(), m.end(), "IP")
        for m in _IPV6.finditer(text) if "::" in text or _IPV6_HINT(text) else ():
            s = m.group()
            if s.rstrip(":") == "" or s.count(":") < 2:
                continue
            end = m.end()
            if s.endswith(":") and not s.endswith("::"):
                continue
            try:
                ipaddress.IPv6Address(s)
            except ValueError:
                continue
            yield Finding(m.start(), end, "IP")


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
    ("gh", "github_pat_"),
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


class SecretDetector:
    """API keys and credentials in common shapes: ``sk-…`` (OpenAI/Anthropic), Stripe keys,
    AWS access key ids (``AKIA…``), GitHub and Slack tokens, Google API keys, JWTs, PEM
    private-key blocks, bearer tokens, and values after ``api_key=`` / ``password:`` cues."""

    def find(self, text: str) -> Iterator[Finding]:
        # Substring checks are ~100x faster than a regex scan and most text has no hint.
        for hints, pattern in zip(_SECRET_HINTS, _SECRET_PATTERNS, strict=True):
            if any(h in text for h in hints):
                for m in pattern.finditer(text):
                    yield Finding(m.start(), m.end(), "SECRET")
        lowered = text.lower()
        if not any(cue in lowered for cue in _CUE_HINTS):
            return
        for m in _SECRET_CUED.finditer(text):
            value = m.group("value")
            # A cue followed by an ordinary word ("token is required") is not a secret; after
            # a bare space ("password Winter2024!") the value must also mix in a non-letter.
            if value.isalpha() and (value.islower() or not m.group("sep").strip()):
                continue
            yield Finding(m.start("value"), m.end("value"), "SECRET")


# --- street addresses --------------------------------------------------------------------

_SUFFIX_WORDS = (
    "Street|Avenue|Road|Boulevard|Lane|Drive|Court|Place|Terrace|Way|Parkway|Circle|Highway|"
    "Square|Trail|Crescent|Close|Loop|Row|Alley|Plaza|Gardens|Grove|Hill|Mews|Walk"
)
_SUFFIX_ABBREVIATIONS = "St|Ave|Rd|Blvd|Ln|Dr|Ct|Pl|Ter|Pkwy|Cir|Hwy|Sq|Trl"
_DIRECTION = r"(?:N|S|E|W|NE|NW|SE|SW|North|South|East|West)\.?"
_NAME_WORD = r"(?:[A-Z][a-z'\-]+|[A-Z]{2,}|[A-Z]\.?|\d{1,3}(?:st|nd|rd|th)|St\.|Mt\.)"
_ADDRESS = re.compile(
    r"(?<![\w\-/.,])\d{1,6}[A-Za-z]?(?:-\d{1,4})?,?\s"
    rf"(?:{_DIRECTION}\s)?(?:{_NAME_WORD}\s){{0,3}}{_NAME_WORD}\s"
    rf"(?:(?:{_SUFFIX_WORDS})\b|(?:{_SUFFIX_ABBREVIATIONS})\b\.?)"
    rf"(?:\s{_DIRECTION}(?![\w]))?"
    r"(?:,?\s(?:Apt\.?|Apartment|Suite|Ste\.?|Unit|Flat|Floor|Fl\.?|#)\s?#?[0-9A-Za-z\-]{1,6}\b)?"
)


class AddressDetector:
    """Street addresses in the common English forms: house number, optional direction, a
    capitalised street name and a street-type word (``221B Baker Street``, ``1600
    Pennsylvania Avenue NW``, ``350 5th Ave, Suite 3300``). City and postcode are left."""

    def find(self, text: str) -> Iterator[Finding]:
        if _HAS_DIGIT(text) is None:
            return
        for m in _ADDRESS.finditer(text):
            yield Finding(m.start(), m.end(), "ADDRESS")


# --- user patterns -----------------------------------------------------------------------


class PatternDetector:
    """A user-supplied regular expression for one kind (``EMPLOYEE_ID``). The whole match is
    redacted, or the group named ``value`` when the pattern has one (for cues like
    ``badge (?P<value>\\d+)``)."""

    def __init__(self, kind: str, pattern: str | re.Pattern[str]) -> None:
        self.kind = check_kind(kind)
        try:
            self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        except re.error as exc:
            raise ConfigError(f"pattern for {kind!r} is not a valid regex: {exc}") from exc
        if not isinstance(self.pattern, re.Pattern) or not isinstance(self.pattern.pattern, str):
            raise ConfigError(f"pattern for {kind!r} must be a str regex, got {pattern!r}")
        self._group: str | int = "value" if "value" in self.pattern.groupindex else 0

    def find(self, text: str) -> Iterator[Finding]:
        for m in self.pattern.finditer(text):
            start, end = m.span(self._group)
            if 0 <= start < end:
                yield Finding(start, end, self.kind)

    def __repr__(self) -> str:
        return f"PatternDetector({self.kind!r}, {self.pattern.pattern!r})"
