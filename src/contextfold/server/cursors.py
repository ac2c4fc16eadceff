"""Page cursors: opaque to clients (URL-safe base64 of a small JSON list), checked here
before any value reaches a query.

A cursor the API did not make — not base64, not JSON, the wrong shape, a number that is
not a finite timestamp, a session id the API would refuse (lone surrogates, NUL bytes) —
is a 422 ``validation_error`` naming ``cursor``, never a store error.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from typing import Any, Literal

from .problems import ProblemError
from .tenancy import SESSION_ID_PATTERN

__all__ = ["CURSOR_PATTERN", "TEXT_PATTERN", "Part", "decode_cursor", "encode_cursor"]

#: What a cursor looks like (URL-safe base64 without padding); also in the OpenAPI schema.
CURSOR_PATTERN = r"^[A-Za-z0-9_-]{1,600}$"

#: Free text in a query parameter (a search term): no control characters, NUL included
#: (PostgreSQL refuses NUL in text; it is nothing a user types).
TEXT_PATTERN = r"^[^\x00-\x1f\x7f]*$"

_SESSION_ID = re.compile(SESSION_ID_PATTERN)
_LARGEST_TIME = 1e13  # seconds: far beyond any activity time a session can have

#: The parts of a cursor, in order: an activity time or a session id.
Part = Literal["time", "session_id"]


def encode_cursor(values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(values).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, shape: tuple[Part, ...], *, hint: str = "") -> list[Any]:
    """The values of ``cursor``, one per part of ``shape``, or 422 naming ``cursor``."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        value = None
    if (
        isinstance(value, list)
        and len(value) == len(shape)
        and all(_fits(v, part) for v, part in zip(value, shape, strict=True))
    ):
        return [float(v) if part == "time" else v for v, part in zip(value, shape, strict=True)]
    raise ProblemError(
        422, "validation_error", f"cursor: not a next_cursor this API returned{hint}",
        errors=[{"loc": ["query", "cursor"], "msg": "not a cursor this API returned"}],
    )


def _fits(value: Any, part: Part) -> bool:
    if part == "session_id":
        return isinstance(value, str) and _SESSION_ID.fullmatch(value) is not None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, int):  # any size in JSON: compare before converting
        return abs(value) <= _LARGEST_TIME
    return math.isfinite(value) and abs(value) <= _LARGEST_TIME
