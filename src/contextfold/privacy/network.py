"""Network identifiers: IPv4 and IPv6 addresses, validated by :mod:`ipaddress`."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from .detectors import Finding, run_followed_by

__all__ = ["IPDetector"]


# --- IP addresses ------------------------------------------------------------------------

_IPV4 = re.compile(r"\d(?<![\w.]\d)\d{0,2}\.(?:\d{1,3}\.){2}\d{1,3}(?![\w]|\.\d)")
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3}|:)?"
    r"(?:%[0-9A-Za-z]+)?(?![\w:])"
)
_DOT_DIGIT = re.compile(r"\.\d")
# "hex{1,4}:hex{1,4}:hex{0,4}:" somewhere, written to open on the ":" so the regex engine
# looks for colons only instead of trying every hex letter of the text
_IPV6_HINT = re.compile(r":(?<=[0-9A-Fa-f]:)[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{0,4}:").search
_VERSION_CUE = re.compile(
    r"(?i)\b(?:version|ver\.|release|build|firmware|fw|patch|update|upgrade to)\s*$"
)


def _maybe_v4(text: str) -> bool:
    # a quad has three dots, and its first part is a whole run of digits before one
    return text.count(".") >= 3 and run_followed_by(text, _DOT_DIGIT)


def _maybe_v6(text: str) -> bool:
    return "::" in text or (text.count(":") >= 3 and _IPV6_HINT(text) is not None)


def _maybe_ip(text: str) -> bool:
    # _maybe_v4(text) or _maybe_v6(text), unrolled: asked of every text
    return (
        (text.count(".") >= 3 and run_followed_by(text, _DOT_DIGIT))
        or "::" in text
        or (text.count(":") >= 3 and _IPV6_HINT(text) is not None)
    )


class IPDetector:
    """IPv4 and IPv6 addresses, validated by :mod:`ipaddress`. A dotted quad right after
    "version"/"build"/"release" is a version number, not an address."""

    gate = staticmethod(_maybe_ip)  # Detector.gate: the tests find() opens with

    def find(self, text: str) -> Iterator[Finding]:
        has_v4 = _maybe_v4(text)
        for m in _IPV4.finditer(text) if has_v4 else ():
            try:
                ipaddress.IPv4Address(m.group())
            except ValueError:
                continue
            if _VERSION_CUE.search(text, max(0, m.start() - 12), m.start()):
                continue
            yield Finding(m.start(), m.end(), "IP")
        has_v6 = _maybe_v6(text)
        for m in _IPV6.finditer(text) if has_v6 else ():
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
