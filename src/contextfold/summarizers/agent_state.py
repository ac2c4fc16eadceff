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
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

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
#: The characters of a ``key: value`` line's key after its first letter (see _kv_lines).
_KEY_REST = re.compile(r"[\w .-]+").fullmatch
_HAS_DIGIT = re.compile(r"\d").search
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z_]*(?:_\d+)?>")
_HAS_ALPHA = re.compile(r"[A-Za-z]").search
_ERROR_LINE = re.compile(
    r"\b(?:error|exception|traceback|fail(?:ed|ure|s)?|fatal|panic|denied|not found|"
    r"invalid|refused|timed? ?out|cannot|can't|unable|errno)\b",
    re.I,
)
_SENTENCE_BREAK = re.compile(r"[.!?…]+([\"'”’)\]]*)(?:\s+|$)")
_DIGITS = re.compile(r"\d+")
_DIGITS_TO_HASH = bytes(35 if 48 <= c <= 57 else c for c in range(256))  # ASCII digit -> "#"
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
_ERROR_HINTS = ("error", "exception", "traceback", "fail", "fatal", "panic", "denied",
                "not found", "invalid", "refused", "timeout", "time out", "timedout",
                "timed out", "cannot", "can't", "unable", "errno")
#: A candidate value in text output: a run of word characters and the punctuation that
#: ids, paths, dates and amounts use (one C-level pass, then each distinct word holding a
#: digit or a slash is sorted).
_WORD = r"[\w.$€£¥/:%+-]"
#: ... only the maximal runs holding a digit or a slash (the rest are never values; a run
#: shorter than 3 characters is left out by the caller).
_CANDIDATE = re.compile(rf"(?<!{_WORD}){_WORD}*?[\d/]{_WORD}*")
#: ASCII bytes: ``_WORD`` characters kept, every other byte a space.
_RUN_BYTES = bytes(c if c < 128 and re.fullmatch(_WORD, chr(c)) else 32 for c in range(256))
_CURRENCY_AFTER = re.compile(r"\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP)\b")

# How likely a later call is to reuse a value, by its shape and key kind (generic: a value
# mixing letters and digits — an id, a code, a path — is reused about three times as often
# as a plain word or number in agent traces; dates and upper-case codes in between).
_SCORE_ERROR = 100.0
_SCORE_FAILED_STATUS = 50.0
_SCORE_SHAPE = {"ident": 10.0, "code": 7.0, "date": 6.0}
#: Values scoring at least this (identifiers and errors) go first into a record's core.
SCORE_IDENT = _SCORE_SHAPE["ident"]
SCORE_DATE = _SCORE_SHAPE["date"]
#: _score("other", value) + 0.5 by the value's shape: a ``key: value`` line's value.
_SHAPE_SCORE_KV = {shape: score + 0.5 for shape, score in _SCORE_SHAPE.items()}
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
        out: list[str] = []
        end = -1
        for match in _ANY_ERROR.finditer(text):
            if match.start() <= end:
                continue  # this line is already taken
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.end())
            end = len(text) if end < 0 else end
            out.append(text[start:end].strip())
        return [line for line in out if line]
    low = text.lower()
    starts: set[int] = set()  # the lines holding a hint (str.find: C-level, no regex)
    for hint in _ERROR_HINTS:
        at = low.find(hint)
        while at >= 0:
            starts.add(low.rfind("\n", 0, at) + 1)
            at = low.find("\n", at)  # the rest of this line is taken already
            if at < 0:
                break
            at = low.find(hint, at)
    lines: list[str] = []
    for start in sorted(starts):
        end = text.find("\n", start)
        line = text[start: len(text) if end < 0 else end].strip()
        if line and _ANY_ERROR.search(line):
            lines.append(line)
    return lines


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())  # \s+ runs as one space, stripped
    return text if len(text) <= limit else text[: limit - 1].rstrip() + _MORE


def one_line(text: str) -> str:
    """``text`` on one line with no sentence breaks, so a summary parses it back as one
    fact (``a. B`` would split in two)."""
    return _SENTENCE_BREAK.sub(lambda m: m.group(1) + "; ", " ".join(text.split())).strip(" ;")


def value_shape(value: str) -> str:
    """``date``, ``number``, ``ident`` (letters and digits, no spaces), ``code`` (an
    upper-case code such as ``JFK`` or ``ERR_QUOTA``) or ``word``."""
    v = value.strip()
    c = v[:1]
    if c in "<[{(" and v[-1:] in ">]})":
        return "word"  # a placeholder (``<EMAIL_1>``, a redacted value) or a bracketed note
    # (``v`` is not empty below.) A date starts with a digit, a number with one or a sign,
    # a code with an upper-case letter: each test runs only where it can match.
    if c.isdecimal() or c in "+-":
        if _DATE.fullmatch(v):
            return "date"
        if _NUMBER.fullmatch(v):
            return "number"
    if " " not in v and len(v) >= 3 and _HAS_DIGIT(v) and _HAS_ALPHA(v):
        return "ident"
    if "A" <= c <= "Z" and _CODE.fullmatch(v):
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
        """(label, value) pairs, most reusable first (ties in order of appearance),
        without the values in ``skip``."""
        return [(lab, value) for lab, value, _ in self.scored(skip)]

    def scored(self, skip: Iterable[str] = ()) -> list[tuple[str, str, float]]:
        """(label, value, score), most reusable first, without the values in ``skip``."""
        skipped = set(skip)
        order = sorted(self.items.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
        return [(lab, value, score) for value, (score, _, lab) in order if value not in skipped]


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


def _text_facts(text: str, facts: ValueFacts, scan: int) -> None:
    if len(text) > scan:  # bounded work: the start and the (most recent) end
        text = text[: scan // 3] + "\n" + text[-2 * scan // 3:]
    errors = _error_lines(text)
    strong: list[str] = []
    if errors:
        facts.failed = True
        strong = [ln for ln in errors if _STRONG_ERROR.search(ln)]
        for line in dict.fromkeys([*(strong[-1:]), errors[-1], errors[0]]):
            facts.add("error", _clip(line, _MAX_ERROR_CHARS), _SCORE_ERROR)
    first = text.lstrip()
    newline = first.find("\n")
    first = first if newline < 0 else first[:newline]
    if first.strip():
        facts.add("output", _clip(first, 100), _SCORE_STATUS)
    # where the (last) error is, then the whole (scanned) output; C-level scans, each
    # distinct match tested once
    near = _near(text, (strong or errors)[-1]) if errors else ""
    ident = _SCORE_SHAPE["ident"]
    taken: set[str] = set()  # words near the error: they already hold their best score
    for part, bonus in ((near, _NEAR_ERROR_BONUS), (text, 0.0)):
        if not part:
            continue
        if bonus:
            for number in dict.fromkeys(_LINE_NO.findall(part)):
                facts.add("line", number, ident + bonus)
        if "USD" in part or "EUR" in part or "GBP" in part:
            for found in dict.fromkeys(_CURRENCY_AFTER.findall(part)):
                facts.add("amounts", found.replace(" ", ""), _SCORE_AMOUNT + bonus)
        words = _candidates(part)
        if bonus:
            taken.update(words)
        elif taken:
            words = {w: None for w in words if w not in taken}
        _text_words(words, facts, bonus)
    _demote_enumerations(facts)
    items = facts.items
    for count, (key, found) in enumerate(_kv_lines(text)):
        if count >= 400:
            break
        value = " ".join(found.split())  # _clip (a value is at most 58 characters)
        score = _SHAPE_SCORE_KV.get(value_shape(value), _SCORE_OTHER + 0.5)
        if value[:1] == "<" and _PLACEHOLDER.fullmatch(value):
            continue  # facts.add inlined
        hit = items.get(value)
        if hit is None:
            if len(items) < _MAX_ITEMS:
                items[value] = (score, len(items), key)
        elif score > hit[0]:
            items[value] = (score, hit[1], hit[2])


def _kv_lines(text: str) -> Iterator[tuple[str, str]]:
    """``(key, value)`` of each line that is ``key: value`` or ``key = value``: the lines
    ``^[ \\t]*([A-Za-z][\\w .-]{0,30}?)[ \\t]*[:=][ \\t]*(\\S[^\\n]{0,57}?)[ \\t]*$`` matches
    (multi-line), by string methods: the key opens the line (after blanks) with a letter
    and runs to the first ``:`` or ``=`` (blanks before it left out), the value is the
    rest without its outer blanks."""
    for line in text.split("\n"):
        rest = line.lstrip(" \t")
        if not rest or not ("a" <= rest[0] <= "z" or "A" <= rest[0] <= "Z"):
            continue
        colon, equals = rest.find(":"), rest.find("=")
        at = equals if colon < 0 or 0 <= equals < colon else colon
        if at < 0:
            continue
        key = rest[:at].rstrip(" \t")
        if len(key) > 31 or (len(key) > 1 and not _KEY_REST(key, 1)):
            continue
        value = rest[at + 1:].lstrip(" \t").rstrip(" \t")
        if value and len(value) <= 58 and not value[0].isspace():
            yield key.strip(), value


def _candidates(text: str) -> dict[str, None]:
    """The distinct maximal runs of ``_WORD`` characters in ``text`` that hold a digit or
    a slash, in order (for ASCII text: a byte-level translate and split, no regex)."""
    if not text.isascii():
        return dict.fromkeys(_CANDIDATE.findall(text))
    runs = dict.fromkeys(text.encode("ascii").translate(_RUN_BYTES).split())
    return {run.decode("ascii"): None for run in runs
            if len(run.translate(None, b"0123456789/")) != len(run)}


def _text_words(words: Iterable[str], facts: ValueFacts, bonus: float) -> None:
    """Sort the words of text output that hold a digit or a slash: a path, a date, an
    amount, an identifier, or nothing (``facts.add`` inlined: this is the hot loop)."""
    items = facts.items
    path_score = id_score = _SCORE_SHAPE["ident"] + bonus
    date_score = _SCORE_SHAPE["date"] + bonus
    amount_score = _SCORE_AMOUNT + bonus
    for word in words:
        if len(word) < 3:
            continue
        w = word.strip(".:,;+-")  # keeps its digit or slash (never stripped)
        if len(w) < 3 or len(w) > 120:
            continue
        if "/" in w:
            if not _HAS_ALPHA(w):
                continue
            label, score = "paths", path_score
        elif w[0].isdecimal() and _DATE.fullmatch(w):
            label, score = "dates", date_score
        elif w[0] in "$€£¥" or w[-1] == "%":
            if not _MONEY.fullmatch(w):
                continue
            label, score = "amounts", amount_score
        elif _HAS_ALPHA(w):
            label, score = "ids", id_score
        else:
            continue
        hit = items.get(w)  # no placeholder can match _CANDIDATE (no "<")
        if hit is None:
            if len(items) < _MAX_ITEMS:
                items[w] = (score, len(items), label)
        elif score > hit[0]:
            items[w] = (score, hit[1], hit[2])


def _demote_enumerations(facts: ValueFacts) -> None:
    """In text output, identifiers that differ only in their digits (``value_1`` …
    ``value_30`` in a file dump, ``test_case_7`` in a test log) are enumerations, not the
    ids a later call reuses: each loses score with the size of its family."""
    values = list(facts.items)
    joined = "\n".join(values)
    if joined.isascii() and "#" not in joined:  # each digit run to one "#", byte-level
        digits = joined.encode("ascii").translate(_DIGITS_TO_HASH)
        while b"##" in digits:
            digits = digits.replace(b"##", b"#")
        joined = digits.decode("ascii")
    else:
        joined = _DIGITS.sub("#", joined)
    families = joined.split("\n")
    if len(families) != len(values):  # a value holds a line break: one by one
        families = [_DIGITS.sub("#", value) for value in values]
    sizes = Counter(families)
    if not sizes or max(sizes.values()) <= 2:
        return
    items = facts.items
    for value, name in zip(values, families, strict=True):
        size = sizes[name]
        if size > 2:
            score, order, label = items[value]
            if score < _SCORE_ERROR:
                items[value] = (max(_SCORE_OTHER, score - 2.0 * math.log2(size)), order, label)


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
