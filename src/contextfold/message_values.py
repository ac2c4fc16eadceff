"""The values a message holds, checked: text (storable Unicode within a cap), JSON
metadata (plain JSON, bounded in depth and size, copied by a round trip) and timestamps
(datetimes, ISO 8601 strings or epoch seconds, always made timezone-aware UTC).

Pure; every failure is a :class:`~contextfold.errors.ValidationError`. Used by
:mod:`contextfold.messages` to build messages, and by whatever else takes text from users.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, cast

from .errors import ValidationError

__all__ = [
    "DEFAULT_MAX_MESSAGE_CHARS",
    "NO_CAP",
    "check_json",
    "check_metadata",
    "check_text",
    "coerce_timestamp",
    "dump_json",
]

#: Default cap on one message's text, in characters (configurable on ``Memory``).
DEFAULT_MAX_MESSAGE_CHARS = 1_000_000
_MAX_METADATA_DEPTH = 32
_MAX_METADATA_CHARS = 64_000
#: Message construction checks text, not length: the length cap is ``Memory``'s
#: ``max_message_chars`` (default :data:`DEFAULT_MAX_MESSAGE_CHARS`), so it can be raised.
NO_CAP = 2**62
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(text: object, what: str, max_chars: int = DEFAULT_MAX_MESSAGE_CHARS) -> str:
    """Return ``text`` if it is storable text, else raise ``ValidationError``.

    Rejects non-strings, NUL characters and lone surrogates (they cannot be encoded as
    UTF-8, so no store and no provider would take them). Zero-width and bidi characters
    are valid text and pass unchanged.
    """
    if not isinstance(text, str):
        raise ValidationError(f"{what} must be a string, got {type(text).__name__}: {text!r:.80}")
    if len(text) > max_chars:
        raise ValidationError(
            f"{what} has {len(text):,} characters, over the cap of {max_chars:,}; "
            "split it or raise max_message_chars"
        )
    if "\x00" in text:
        raise ValidationError(f"{what} contains a NUL character at index {text.index(chr(0))}")
    if text.isascii():  # no surrogate is ASCII: skip the scan (every append checks its text)
        return text
    bad = _SURROGATE.search(text)
    if bad is not None:
        raise ValidationError(
            f"{what} contains a lone surrogate {bad.group()!r} at index {bad.start()}; "
            "it is not valid Unicode text"
        )
    return text


def dump_json(value: object, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except RecursionError as exc:
        raise ValidationError(f"{what} is nested too deeply to serialise") from exc
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{what} must be JSON-serialisable: {exc}") from exc


def check_metadata(metadata: object) -> dict[str, Any]:
    if metadata is None or (type(metadata) is dict and not metadata):
        return {}  # the common case: nothing to check, no JSON round trip
    if not isinstance(metadata, Mapping):
        raise ValidationError(f"metadata must be a mapping, got {type(metadata).__name__}")
    check_json(metadata, 0)
    text = dump_json(metadata, "metadata")
    if len(text) > _MAX_METADATA_CHARS:
        raise ValidationError(
            f"metadata serialises to {len(text):,} characters, over {_MAX_METADATA_CHARS:,}"
        )
    return cast(dict[str, Any], json.loads(text))


def check_json(value: object, depth: int) -> None:
    if depth > _MAX_METADATA_DEPTH:
        raise ValidationError(f"metadata is nested deeper than {_MAX_METADATA_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"metadata holds a non-finite number {value!r}")
        return
    if isinstance(value, str):
        check_text(value, "metadata string", _MAX_METADATA_CHARS)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"metadata keys must be strings, got {key!r:.40}")
            check_text(key, "metadata key", 256)
            check_json(item, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            check_json(item, depth + 1)
        return
    raise ValidationError(
        f"metadata value {value!r:.60} of type {type(value).__name__} is not JSON"
    )


def coerce_timestamp(value: object) -> datetime | None:
    if value is None:
        return None
    if type(value) is datetime and value.tzinfo is timezone.utc:
        return value  # already what the rest makes of it (the engine's clock gives these)
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValidationError(f"timestamp {value!r:.60} is not ISO 8601") from exc
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ValidationError(f"timestamp {value!r} is not a finite number")
        try:
            ts = datetime.fromtimestamp(value, tz=timezone.utc)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValidationError(f"timestamp {value!r} is out of range") from exc
    else:
        raise ValidationError(
            f"timestamp must be a datetime, ISO string or epoch, got {value!r:.60}"
        )
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.astimezone(timezone.utc)
