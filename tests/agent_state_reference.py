"""Reference copy of the key-fact extraction of session 3 (contextfold.summarizers.agent_state
at main 6520087), kept verbatim for the differential tests in ``test_agent_state_fast.py``:
the optimised module must give identical output on every input. Not imported by the
library. (Original module docstring follows.)

Agent state: the values the next tool call needs, pulled out of calls and tool results.

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
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_FACT_CHARS",
    "SCAN_CHARS",
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

#: Default room for the facts of one tool result, in characters.
DEFAULT_FACT_CHARS = 320
_MAX_VALUE_CHARS = 60
_MAX_ERROR_CHARS = 160
_MAX_NODES = 5000  # JSON nodes visited per result: bounded work on huge outputs
#: Characters of a text result scanned for a summary record (its start and its end) ...
SCAN_CHARS = 12000
#: ... and for a stand-in or an elision marker, made while the agent loop waits.
VIEW_SCAN_CHARS = 1000
_MAX_ITEMS = 400  # values kept per result (far more than a record shows)

_ERROR_KEY = re.compile(r"(?:^|_)(?:error|errors|exception|traceback|failure|fault)$", re.I)
_STATUS_KEY = re.compile(
    r"(?:^|_)(?:status|state|result|outcome|success|ok|message|reason|detail|code|"
    r"exit_?code|returncode|phase|stage|type|kind|mode|action)$",
    re.I,
)
_ID_KEY = re.compile(
    r"(?:id|ids|uuid|guid|key|ref|reference|number|num|no|sku|name|email|phone|url|uri|"
    r"path|file|filename|sha|hash|commit|branch|tag|version|title|handle|slug|host|user)$",
    re.I,
)
_AMOUNT_KEY = re.compile(
    r"(?:amount|price|prices|total|cost|balance|fee|fees|count|qty|quantity|size|score|"
    r"limit|remaining|available|due|paid|refund|rate|percent|duration|elapsed|seats|"
    r"passed|failed|errors|warnings|hits|matches)$",
    re.I,
)
_BAD_STATUS = frozenset(
    {"error", "failed", "failure", "fail", "denied", "invalid", "timeout", "timed_out",
     "rejected", "not_found", "notfound", "forbidden", "unauthorized", "aborted", "crashed"}
)
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
)
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
_CODE = re.compile(r"[A-Z][A-Z0-9]{1,9}(?:[-_][A-Z0-9]{1,9})*")
_MONEY = re.compile(r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|%)")
_LINE_NO = re.compile(r"\b(?:line|lines|ln|row|col|column)\s+(\d{1,7})\b", re.I)
_KV_LINES = re.compile(r"^[ \t]*([A-Za-z][\w .-]{0,30}?)[ \t]*[:=][ \t]*(\S[^\n]{0,57}?)[ \t]*$",
                       re.M)
_HAS_DIGIT = re.compile(r"\d").search
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z_]*(?:_\d+)?>")
_HAS_ALPHA = re.compile(r"[A-Za-z]").search
_ERROR_LINE = re.compile(
    r"\b(?:error|exception|traceback|fail(?:ed|ure|s)?|fatal|panic|denied|not found|"
    r"invalid|refused|timed? ?out|cannot|can't|unable|errno)\b",
    re.I,
)
_SENTENCE_BREAK = re.compile(r"[.!?…]+([\"'”’)\]]*)(?:\s+|$)")
_SPACES = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")
#: Marks a clipped value; not a sentence end, so a summary line stays one fact.
_MORE = "⋯"
_STRONG_ERROR = re.compile(r"(?:Error|Exception)\b|\b(?:FAILED|FAIL|FATAL|ERROR|Fatal|panic)\b")
#: A line that opens (after an optional timestamp) with an error: a failure report.
_FAILURE_LINE = re.compile(
    r"^[ \t]*(?:\S*\d\S*[ \t]+)?(?:[\w.]*(?:Error|Exception)\b|Traceback\b|FAILED\b|FAIL\b|FATAL\b|"
    r"ERROR\b|CRITICAL\b|panic:)",
    re.M,
)
_ANY_ERROR = re.compile(r"(?i:" + _ERROR_LINE.pattern + r")|" + _STRONG_ERROR.pattern)
#: Lower-cased text: where an error word may be (a superset of _ANY_ERROR's matches).
_ERROR_HINT = re.compile(
    r"error|exception|traceback|fail|fatal|panic|denied|not found|invalid|refused|"
    r"timed? ?out|cannot|can't|unable|errno"
)
#: A candidate value in text output: a run of word characters and the punctuation that
#: ids, paths, dates and amounts use (one C-level pass, then each distinct word holding a
#: digit or a slash is sorted).
_WORD = re.compile(r"[\w.$€£¥/:%+-]{3,}")
_CURRENCY_AFTER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP)\b")

# How likely a later call is to reuse a value, by its shape and key kind (generic: a value
# mixing letters and digits — an id, a code, a path — is reused about three times as often
# as a plain word or number in agent traces; dates and upper-case codes in between).
_SCORE_ERROR = 100.0
_SCORE_FAILED_STATUS = 50.0
_SCORE_SHAPE = {"ident": 10.0, "code": 7.0, "date": 6.0}
#: Values scoring at least this (identifiers and errors) go first into a record's core.
SCORE_IDENT = _SCORE_SHAPE["ident"]
_SCORE_NAMED = 5.0  # a plain word under an id-like key (a name, an email, a title)
_SCORE_STATUS = 4.0
_SCORE_AMOUNT = 4.0
_SCORE_OTHER = 2.0
_NEAR_ERROR_BONUS = 1.0  # values next to the last error in a log


def _error_lines(text: str) -> list[str]:
    """The lines holding an error word, in order. ASCII text (the usual tool output) is
    searched lower-cased for the words without word-boundary checks (fast), and each
    candidate line is then checked with the exact pattern."""
    if not text.isascii():
        return _lines_matching(text, _ANY_ERROR.finditer(text), None)
    return _lines_matching(text, _ERROR_HINT.finditer(text.lower()), _ANY_ERROR)


def _lines_matching(text: str, hits: Iterable[re.Match[str]], check: re.Pattern[str] | None
                    ) -> list[str]:
    out: list[str] = []
    end = -1
    for match in hits:
        if match.start() <= end:
            continue  # this line is already taken
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        line = text[start:end].strip()
        if line and (check is None or check.search(line)):
            out.append(line)
    return out


def _clip(text: str, limit: int) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + _MORE


def one_line(text: str) -> str:
    """``text`` on one line with no sentence breaks, so a summary parses it back as one
    fact (``a. B`` would split in two)."""
    return _SENTENCE_BREAK.sub(lambda m: m.group(1) + "; ", " ".join(text.split())).strip(" ;")


def value_shape(value: str) -> str:
    """``date``, ``number``, ``ident`` (letters and digits, no spaces), ``code`` (an
    upper-case code such as ``JFK`` or ``ERR_QUOTA``) or ``word``."""
    v = value.strip()
    if v[:1] in "<[{(" and v[-1:] in ">]})":
        return "word"  # a placeholder (``<EMAIL_1>``, a redacted value) or a bracketed note
    if _DATE.fullmatch(v):
        return "date"
    if _NUMBER.fullmatch(v):
        return "number"
    if " " not in v and len(v) >= 3 and _HAS_DIGIT(v) and _HAS_ALPHA(v):
        return "ident"
    if _CODE.fullmatch(v):
        return "code"
    return "word"


def _parse_json(text: str) -> tuple[bool, Any]:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False, None
    try:
        return True, json.loads(stripped)
    except ValueError:
        return False, None


@dataclass
class ValueFacts:
    """The values of one tool result: ``(score, order, label, value)`` each, one entry per
    distinct value (the first label it came with, the highest score), and whether the
    result reports a failure."""

    items: dict[str, tuple[float, int, str]] = field(default_factory=dict)
    failed: bool = False

    def add(self, label: str, value: str, score: float) -> None:
        if value[:1] == "<" and _PLACEHOLDER.fullmatch(value):
            return  # a redacted value (``<EMAIL_1>``) tells a later call nothing
        hit = self.items.get(value)
        if hit is None:
            if len(self.items) < _MAX_ITEMS:
                self.items[value] = (score, len(self.items), label)
        elif score > hit[0]:
            self.items[value] = (score, hit[1], hit[2])

    def ranked(self, skip: Iterable[str] = ()) -> list[tuple[str, str]]:
        """(label, value) pairs, most reusable first, then the shorter first (session 5:
        for a stand-in's or a marker's fixed room), then in order of appearance; without
        the values in ``skip``."""
        skipped = set(skip)
        order = sorted(self.items.items(), key=lambda kv: (-kv[1][0], len(kv[0]), kv[1][1]))
        return [(lab, value) for value, (_, _, lab) in order if value not in skipped]

    def scored(self, skip: Iterable[str] = ()) -> list[tuple[str, str, float]]:
        """(label, value, score), most reusable first, without the values in ``skip``."""
        skipped = set(skip)
        order = sorted(self.items.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
        return [(lab, value, score) for value, (score, _, lab) in order if value not in skipped]


def _label(path: Sequence[str]) -> str:
    for part in reversed(path):
        if part:
            return part[:32]
    return "value"


def _score(kind: str, value: str) -> float:
    shape = value_shape(value)
    if shape in _SCORE_SHAPE:
        return _SCORE_SHAPE[shape] + (0.5 if kind == "id" else 0.0)
    if kind == "id":
        return _SCORE_NAMED if len(value) <= 40 else _SCORE_OTHER
    if kind == "status":
        return _SCORE_STATUS
    if kind == "amount":
        return _SCORE_AMOUNT
    return _SCORE_OTHER


# -- JSON -----------------------------------------------------------------------------------


def _walk_json(value: Any, path: list[str], facts: ValueFacts, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        return
    key = path[-1] if path else ""
    if isinstance(value, dict):
        id_keys = [k for k, v in value.items() if isinstance(k, str)
                   and isinstance(v, (dict, list)) and value_shape(k) == "ident"]
        for k in id_keys:  # {"acct_7781": {...}}: the keys are identifiers
            facts.add(_label(path), k, _score("id", k))
        for k, item in value.items():
            if k in id_keys and isinstance(item, dict):
                _walk_json(item, [*path, ""], facts, budget)
            else:
                _walk_json(item, [*path, str(k)], facts, budget)
        return
    if isinstance(value, list):
        for item in value:
            _walk_json(item, path, facts, budget)
        return
    label = _label(path)
    if isinstance(value, bool):
        if _STATUS_KEY.search(key) or _ERROR_KEY.search(key):
            facts.add(label, str(value).lower(), _SCORE_STATUS)
            if key.lower() in ("ok", "success") and not value:
                facts.failed = True
        return
    if value is None:
        return
    if isinstance(value, (int, float)):
        text = format(value, "g") if isinstance(value, float) else str(value)
        kind = ("amount" if _AMOUNT_KEY.search(key) or _STATUS_KEY.search(key)
                else "id" if _ID_KEY.search(key) else "other")
        facts.add(label, text, _score(kind, text))
        return
    if not isinstance(value, str) or not value.strip():
        return
    clipped = _clip(value, _MAX_VALUE_CHARS)
    if _ERROR_KEY.search(key):
        facts.failed = True
        facts.add(label, _clip(value, _MAX_ERROR_CHARS), _SCORE_ERROR)
    elif _STATUS_KEY.search(key):
        bad = value.strip().lower().replace(" ", "_") in _BAD_STATUS
        facts.failed = facts.failed or bad
        facts.add(label, clipped, _SCORE_FAILED_STATUS if bad else _SCORE_STATUS)
    elif _ID_KEY.search(key):
        facts.add(label, clipped, _score("id", value))
    elif _AMOUNT_KEY.search(key):
        facts.add(label, clipped, _score("amount", value))
    elif value_shape(value) != "word" or (len(value) <= 40 and "\n" not in value):
        facts.add(label, clipped, _score("other", value))


# -- text -------------------------------------------------------------------------------------


def _near(text: str, line: str) -> str:
    """The lines around the last occurrence of ``line`` in ``text`` (5 before, 2 after)."""
    at = text.rfind(line)
    if at < 0:
        return ""
    lo = at
    for _ in range(6):
        lo = text.rfind("\n", 0, lo - 1) if lo > 0 else -1
        if lo < 0:
            break
    hi = at
    for _ in range(3):
        hi = text.find("\n", hi + 1)
        if hi < 0:
            break
    return text[max(0, lo): hi if hi >= 0 else len(text)]


def _text_value(word: str, facts: ValueFacts, bonus: float) -> None:
    """Sort one word of text output: a path, a date, an amount, an identifier, or nothing."""
    if len(word) < 3 or len(word) > 120:
        return
    if "/" in word:
        if _HAS_ALPHA(word):
            facts.add("paths", word, _SCORE_SHAPE["ident"] + bonus)
    elif not _HAS_DIGIT(word):
        return
    elif _DATE.fullmatch(word):
        facts.add("dates", word, _SCORE_SHAPE["date"] + bonus)
    elif word[0] in "$€£¥" or word[-1] == "%":
        if _MONEY.fullmatch(word):
            facts.add("amounts", word, _SCORE_AMOUNT + bonus)
    elif _HAS_ALPHA(word):
        facts.add("ids", word, _SCORE_SHAPE["ident"] + bonus)


def _outlier_rows(text: str) -> list[str]:
    """(session 27) The rows of a text table whose value in a categorical column is not
    the usual one: a plain restatement of agent_text.outlier_rows."""
    lines = [line for line in text.split("\n") if line.strip()]
    widths: dict[int, int] = {}
    for line in lines:
        widths[len(line.split())] = widths.get(len(line.split()), 0) + 1
    if len(lines) < 5 or not widths:
        return []
    width = max(widths, key=lambda w: (widths[w], -list(widths).index(w)))
    if width < 2 or widths[width] < 5:
        return []
    body = [line for line in lines if len(line.split()) == width][1:]
    odd: set[int] = set()
    for col in range(1, width):
        column = [line.split()[col] for line in body]
        counts = {v: column.count(v) for v in column}
        usual = max(counts, key=lambda v: (counts[v], -column.index(v)))
        if counts[usual] * 2 <= len(body) or len(counts) > max(3, len(body) // 4):
            continue
        odd |= {i for i, v in enumerate(column) if v != usual}
    if not odd or 3 * len(odd) > len(body):
        return []
    return [body[i] for i in sorted(odd)]


def _text_facts(text: str, facts: ValueFacts, scan: int) -> None:
    odd = "\n".join(_outlier_rows(text[:12000]))
    if len(text) > scan:  # bounded work: the start and the (most recent) end
        text = text[: scan // 3] + "\n" + text[-2 * scan // 3:]
    errors = _error_lines(text)
    strong: list[str] = []
    whole: list[str] = []  # (session 5) lines kept whole: their key: value pairs are not
    if errors:
        facts.failed = True
        strong = [ln for ln in errors if _STRONG_ERROR.search(ln)]
        for line in dict.fromkeys([*(strong[-1:]), errors[-1], errors[0]]):
            facts.add("error", _clip(line, _MAX_ERROR_CHARS), _SCORE_ERROR)
            whole.append(line)
    first = text.lstrip().split("\n", 1)[0]
    if first.strip():
        facts.add("output", _clip(first, 100), _SCORE_STATUS)
        whole.append(first)
    # where the (last) error is, then the whole (scanned) output; C-level scans, each
    # distinct match tested once
    near = _near(text, (strong or errors)[-1]) if errors else ""
    ident = _SCORE_SHAPE["ident"]
    for part, bonus in ((near, _NEAR_ERROR_BONUS), (odd, _NEAR_ERROR_BONUS), (text, 0.0)):
        if not part:
            continue
        if bonus:
            for number in dict.fromkeys(_LINE_NO.findall(part)):
                facts.add("line", number, ident + bonus)
        if "USD" in part or "EUR" in part or "GBP" in part:
            for found in dict.fromkeys(_CURRENCY_AFTER.findall(part)):
                facts.add("amounts", found.replace(" ", ""), _SCORE_AMOUNT + bonus)
        for word in dict.fromkeys(_WORD.findall(part)):
            if "/" in word or _HAS_DIGIT(word):
                _text_value(word.strip(".:,;+-"), facts, bonus)
    _demote_enumerations(facts)
    shown = {kv.group(1).strip(): kv.group(2) for kv in _KV_LINES.finditer("\n".join(whole))}
    for count, kv in enumerate(_KV_LINES.finditer(text)):
        if count >= 400:
            break
        if shown.get(kv.group(1).strip()) == kv.group(2):
            continue
        value = _clip(kv.group(2), _MAX_VALUE_CHARS)
        facts.add(kv.group(1).strip(), value, _score("other", value) + 0.5)


def _demote_enumerations(facts: ValueFacts) -> None:
    """In text output, identifiers that differ only in their digits (``value_1`` …
    ``value_30`` in a file dump, ``test_case_7`` in a test log) are enumerations, not the
    ids a later call reuses: each loses score with the size of its family."""
    family = {value: _DIGITS.sub("#", value) for value in facts.items}
    sizes: dict[str, int] = {}
    for name in family.values():
        sizes[name] = sizes.get(name, 0) + 1
    for value, (score, order, label) in list(facts.items.items()):
        size = sizes[family[value]]
        if size > 2 and score < _SCORE_ERROR:
            facts.items[value] = (max(_SCORE_OTHER, score - 2.0 * math.log2(size)), order, label)


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
        _walk_json(value, [], facts, [max(1000, scan // 2)])
        if not facts.items and isinstance(value, (str, int, float)):
            facts.add("value", _clip(str(value), _MAX_VALUE_CHARS), _SCORE_OTHER)
    else:
        _text_facts(text, facts, scan)
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
    for label, value in pairs:
        if used >= max_chars - 6:
            rest.append((label, value))
            continue
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
        _walk_json(value, [], facts, [_MAX_NODES])
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
    _walk_json(item, [key], flat, [200])
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
