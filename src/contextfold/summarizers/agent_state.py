"""Agent state: the values the next tool call needs, pulled out of calls and tool results.

In agent work the text around a tool call matters little; what the next call needs is
*state*: identifiers, statuses, amounts, dates, the last error. This module extracts those
from any tool output, generically — JSON (walked by key and by the shape of each value) or
plain text (logs, file dumps, search results) — and ranks them by how likely a later call
is to reuse them, judged only by their shape and the kind of key they came under (an
error first; then values mixing letters and digits, upper-case codes, dates; then names,
amounts and statuses; other values last). Nothing here knows a particular tool or domain.

Two users share it:

- observation masking (:mod:`contextfold.masking`): an old tool result is shown as a
  stand-in made of :func:`key_facts`;
- the offline summarizer (:mod:`.agent_records`): folded calls and results become compact
  records, the most reusable values in a core line and the rest in a line that is kept
  only when the summary has room.

Pure and deterministic: the same input always gives the same text (stand-ins must be
byte-identical turn after turn so a provider's prompt cache keeps hitting).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .agent_text import text_facts
from .agent_values import (
    _AMOUNT_KEY,
    _BAD_STATUS,
    _ERROR_KEY,
    _ERROR_LINE,
    _FAILURE_LINE,
    _ID_KEY,
    _MAX_ERROR_CHARS,
    _MAX_NODES,
    _MAX_VALUE_CHARS,
    _MORE,
    _SCORE_ERROR,
    _SCORE_FAILED_STATUS,
    _SCORE_OTHER,
    _SCORE_STATUS,
    _STATUS_KEY,
    DEFAULT_FACT_CHARS,
    SCAN_CHARS,
    SCORE_DATE,
    SCORE_IDENT,
    VIEW_SCAN_CHARS,
    ValueFacts,
    _clip,
    _score,
    one_line,
    value_shape,
)

__all__ = [
    "DEFAULT_FACT_CHARS",
    "SCAN_CHARS",
    "SCORE_DATE",
    "SCORE_IDENT",
    "VIEW_SCAN_CHARS",
    "ValueFacts",
    "call_signature",
    "call_values",
    "extract",
    "facts_and_failure",
    "is_failure",
    "key_facts",
    "one_line",
    "render",
    "value_shape",
]


def _parse_json(text: str) -> tuple[bool, Any]:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False, None
    try:
        return True, json.loads(stripped)
    except ValueError:
        return False, None


_ERR, _STA, _IDK, _AMT = 1, 2, 4, 8  # what a JSON key names (bits of _key_kind)
_KEY_KINDS: dict[str, int] = {}  # key -> its bits: keys repeat across results and turns


def _key_kind(key: str) -> int:
    """Which of the error / status / id / amount key patterns ``key`` matches (bits)."""
    kind = _KEY_KINDS.get(key)
    if kind is None:
        kind = ((_ERR if _ERROR_KEY.search(key) else 0) | (_STA if _STATUS_KEY.search(key) else 0)
                | (_IDK if _ID_KEY.search(key) else 0) | (_AMT if _AMOUNT_KEY.search(key) else 0))
        if len(_KEY_KINDS) >= 4096:
            _KEY_KINDS.clear()
        _KEY_KINDS[key] = kind
    return kind


# -- JSON -----------------------------------------------------------------------------------
def _walk_json(value: Any, key: str, label: str, facts: ValueFacts, budget: list[int]) -> None:
    """Walk one JSON node found under ``key`` (``""`` at the top and inside an object keyed
    by an identifier), its values labelled ``label`` (the nearest non-empty key). Each node
    visited costs one of ``budget``; once it is spent nothing more is taken in."""
    budget[0] -= 1
    if budget[0] < 0:
        return
    if isinstance(value, dict):
        id_keys = [k for k, v in value.items() if isinstance(k, str)
                   and isinstance(v, (dict, list)) and value_shape(k) == "ident"]
        for k in id_keys:  # {"acct_7781": {...}}: the keys are identifiers
            facts.add(label, k, _score("id", k))
        for k, item in value.items():
            if id_keys and k in id_keys and isinstance(item, dict):
                _walk_json(item, "", label, facts, budget)
            elif isinstance(item, (dict, list)):
                name = str(k)
                _walk_json(item, name, name[:32] if name else label, facts, budget)
            else:
                budget[0] -= 1
                if budget[0] >= 0:
                    name = str(k)
                    _json_scalar(item, name, name[:32] if name else label, facts)
            if budget[0] < 0:
                return
        return
    if isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _walk_json(item, key, label, facts, budget)
            else:
                budget[0] -= 1
                if budget[0] >= 0:
                    _json_scalar(item, key, label, facts)
            if budget[0] < 0:
                return
        return
    _json_scalar(value, key, label, facts)


def _json_scalar(value: Any, key: str, label: str, facts: ValueFacts) -> None:
    """Take in one JSON scalar found under ``key``, by the key's kind and the value's shape."""
    if value is None:
        return
    kind = _key_kind(key)
    if isinstance(value, bool):
        if kind & (_STA | _ERR):
            facts.add(label, str(value).lower(), _SCORE_STATUS)
            if not value and key.lower() in ("ok", "success"):
                facts.failed = True
        return
    if isinstance(value, (int, float)):
        text = format(value, "g") if isinstance(value, float) else str(value)
        facts.add(label, text, _score("amount" if kind & (_AMT | _STA)
                                      else "id" if kind & _IDK else "other", text))
        return
    if not isinstance(value, str) or not value.strip():
        return
    if kind & _ERR:
        facts.failed = True
        facts.add(label, _clip(value, _MAX_ERROR_CHARS), _SCORE_ERROR)
    elif kind & _STA:
        bad = value.strip().lower().replace(" ", "_") in _BAD_STATUS
        facts.failed = facts.failed or bad
        facts.add(label, _clip(value, _MAX_VALUE_CHARS),
                  _SCORE_FAILED_STATUS if bad else _SCORE_STATUS)
    elif kind & _IDK:
        facts.add(label, _clip(value, _MAX_VALUE_CHARS), _score("id", value))
    elif kind & _AMT:
        facts.add(label, _clip(value, _MAX_VALUE_CHARS), _score("amount", value))
    elif value_shape(value) != "word" or (len(value) <= 40 and "\n" not in value):
        facts.add(label, _clip(value, _MAX_VALUE_CHARS), _score("other", value))


def extract(text: str, scan: int = SCAN_CHARS) -> ValueFacts:
    """Every value of one tool result worth keeping, scored (see the module docstring).

    JSON is walked by key name and value shape (``*_id``/``status``/``amount``-like keys,
    values mixing letters and digits, ISO dates, identifier-like object keys); text is
    scanned for error lines, ``key: value`` lines, line numbers next to the last error,
    dates, amounts, paths and identifiers. ``scan`` bounds the work: characters of a text
    result looked at (a third from its start, the rest from its end), and a JSON result's
    nodes visited (``scan`` / 2)."""
    facts = ValueFacts()
    ok, value = _parse_json(text)
    if ok:
        _walk_json(value, "", "value", facts, [max(1000, scan // 2)])
        if not facts.items and isinstance(value, (str, int, float)):
            facts.add("value", _clip(str(value), _MAX_VALUE_CHARS), _SCORE_OTHER)
    else:
        text_facts(text, facts, scan)
    return facts


def render(pairs: Sequence[tuple[str, str]], max_chars: int
           ) -> tuple[list[str], list[tuple[str, str]]]:
    """The most important of ``pairs`` (label, value; most important first) that fit
    ``max_chars``, shown as ``label: value, value`` items grouped by label in order of
    importance; and the pairs left out (for a later, optional line). A value too long for
    the room left is skipped for smaller ones; the first is clipped rather than nothing
    shown."""
    groups: dict[str, list[str]] = {}
    rest: list[tuple[str, str]] = []
    used = 0
    for k, (label, value) in enumerate(pairs):
        if used >= max_chars - 6:  # full, and stays full: the rest are left out
            rest.extend(pairs[k:])
            break
        cost = len(value) + 2 + (0 if label in groups else len(label) + 2)
        if used + cost > max_chars:
            if groups:
                rest.append((label, value))
                continue
            value = _clip(value, max(8, max_chars - len(label) - 4))
            cost = len(value) + len(label) + 4
        groups.setdefault(label, []).append(value)
        used += cost
    return [f"{label}: {', '.join(values)}" for label, values in groups.items()], rest


def key_facts(text: str, max_chars: int = DEFAULT_FACT_CHARS) -> list[str]:
    """See :func:`facts_and_failure` (the facts alone)."""
    return facts_and_failure(text, max_chars)[0]


def facts_and_failure(text: str, max_chars: int = DEFAULT_FACT_CHARS) -> tuple[list[str], bool]:
    """The key facts of one tool result as ``label: value, value`` items, the most
    reusable values first, within about ``max_chars``; and whether it reports a failure."""
    facts = extract(text)
    return render(facts.ranked(), max_chars)[0], facts.failed


def is_failure(text: str) -> bool:
    """True when a tool result reports a failure (an error key or status in JSON, an
    error line in text)."""
    ok, value = _parse_json(text)
    if ok:
        facts = ValueFacts()
        _walk_json(value, "", "value", facts, [_MAX_NODES])
        return facts.failed
    head = text[:4000]
    if _ERROR_LINE.search(head.splitlines()[0] if head.strip() else ""):
        return True
    if head.lstrip().lower().startswith(("error", "traceback")):
        return True
    # a line that opens with an error (``KeyError: …``, ``FAILED tests/…``, ``ERROR …``)
    # in the first or the last part of the output (a test run reports at its end)
    window = text if len(text) <= 8000 else text[:4000] + "\n" + text[-4000:]
    return _FAILURE_LINE.search(window) is not None


def _arg_values(item: Any, key: str) -> list[str]:
    flat = ValueFacts()
    _walk_json(item, key, key[:32] if key else "value", flat, [200])
    return [v for v, _ in sorted(flat.items.items(), key=lambda kv: kv[1][1])]


def call_values(arguments: str) -> list[str]:
    """Every scalar value of a call's JSON arguments (for leaving them out of its
    result's facts: the call shows them already)."""
    ok, value = _parse_json(arguments)
    if not ok or not isinstance(value, dict):
        return []
    return _arg_values(value, "")


def call_signature(name: str, arguments: str, max_chars: int = 200, nested: int = 8) -> str:
    """A call as ``name(key=value, …)`` with its scalar arguments (the first ``nested``
    values of each nested one), within about ``max_chars``."""
    ok, value = _parse_json(arguments)
    if not ok or not isinstance(value, dict):
        args = _clip(arguments, max(8, max_chars - len(name) - 2)) if arguments.strip() not in (
            "", "{}") else ""
        return f"{name}({args})"
    parts: list[str] = []
    for key, item in value.items():
        if isinstance(item, (dict, list)):
            inner = _arg_values(item, str(key))
            shown = ", ".join(inner[:nested]) + (f", {_MORE}" if len(inner) > nested else "")
            parts.append(f"{key}=[{shown}]")
        elif isinstance(item, str):
            parts.append(f"{key}={_clip(item, _MAX_VALUE_CHARS)}")
        else:
            parts.append(f"{key}={json.dumps(item)}")
    text = ", ".join(parts)
    if len(text) > max_chars:
        text = text[: max_chars - 1].rstrip(", ") + _MORE
    return f"{name}({text})"
