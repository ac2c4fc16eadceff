"""Agent state: the values the next tool call needs, pulled out of calls and tool results.

In agent work the text around a tool call matters little; what the next call needs is
*state*: identifiers, statuses, amounts, dates, the last error. This module extracts those
from any tool output, generically — JSON (walked by key and by the shape of each value) or
plain text (logs, file dumps, search results) — and writes them as compact one-line
records. Nothing here knows a particular tool or domain.

Two users share it:

- observation masking (:mod:`contextfold.masking`): an old tool result is shown as a
  stand-in made of :func:`key_facts`;
- the offline summarizer (:mod:`.extractive`): folded calls and results become one line
  each (:func:`agent_lines`), de-duplicated, the newest value winning.

Pure and deterministic: the same input always gives the same text (stand-ins must be
byte-identical turn after turn so a provider's prompt cache keeps hitting).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from ..messages import Message, StoredMessage, ToolCall
from .facts import Fact

__all__ = [
    "AGENT_SPEAKER",
    "AgentLine",
    "agent_facts",
    "agent_lines",
    "agent_records",
    "call_signature",
    "drop_superseded",
    "facts_and_failure",
    "is_failure",
    "key_facts",
    "observation_line",
    "record_bonus",
]

#: Default room for the facts of one tool result, in characters.
DEFAULT_FACT_CHARS = 320
_MAX_VALUE_CHARS = 60
_MAX_ERROR_CHARS = 160
_MAX_NODES = 5000  # JSON nodes visited per result: bounded work on huge outputs
_SCAN_CHARS = 12000  # characters of a text result scanned (its start and its end)
_MAX_VALUES = 48  # values kept per label (far more than a stand-in shows)

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
_IDENT = re.compile(
    r"(?<![\w/.-])(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]{2,62}[A-Za-z0-9](?![\w/-])"
)
_TOKEN = re.compile(r"(?<![\w/.-])[A-Za-z0-9][\w.-]{2,62}[A-Za-z0-9](?![\w/-])")
_PATH = re.compile(r"(?<![\w/])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+(?::\d+)?|\b[\w-]+\.[a-z]{1,5}:\d+")
_MONEY = re.compile(r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|%)")
_KV_LINE = re.compile(r"^\s*([A-Za-z][\w .-]{0,30}?)\s*[:=]\s*(\S[^\n]{0,58})\s*$")
_ERROR_LINE = re.compile(
    r"\b(?:error|exception|traceback|fail(?:ed|ure|s)?|fatal|panic|denied|not found|"
    r"invalid|refused|timed? ?out|cannot|can't|unable|errno)\b",
    re.I,
)
_SENTENCE_BREAK = re.compile(r"[.!?…]+([\"'”’)\]]*)(?:\s+|$)")
_SPACES = re.compile(r"\s+")
#: Marks a clipped value; not a sentence end, so a summary line stays one fact.
_MORE = "⋯"
_STRONG_ERROR = re.compile(r"(?:Error|Exception)\b|\b(?:FAILED|FAIL|FATAL|ERROR|Fatal|panic)\b")
_ANY_ERROR = re.compile(r"(?i:" + _ERROR_LINE.pattern + r")|" + _STRONG_ERROR.pattern)


def _error_lines(text: str) -> list[str]:
    """The lines holding an error word, in order (one regex pass over the text, then each
    hit widened to its line)."""
    out: list[str] = []
    end = -1
    for match in _ANY_ERROR.finditer(text):
        if match.start() <= end:
            continue  # this line is already taken
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        line = text[start:end].strip()
        if line:
            out.append(line)
    return out

_RANKS = ("error", "id", "status", "date", "amount", "other")


def _clip(text: str, limit: int) -> str:
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + _MORE


def one_line(text: str) -> str:
    """``text`` on one line with no sentence breaks, so a summary parses it back as one
    fact (``a. B`` would split in two)."""
    return _SENTENCE_BREAK.sub(lambda m: m.group(1) + "; ", " ".join(text.split())).strip(" ;")


def _parse_json(text: str) -> tuple[bool, Any]:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False, None
    try:
        return True, json.loads(stripped)
    except ValueError:
        return False, None


# -- JSON -----------------------------------------------------------------------------------


@dataclass
class _Facts:
    """Facts grouped by label, in order of first appearance, with a rank each."""

    items: dict[tuple[int, str], list[str]]
    failed: bool = False
    seen: set[str] | None = None

    def add(self, rank: str, label: str, value: str) -> None:
        if self.seen is None:
            self.seen = set()
        if value in self.seen:
            return  # shown once, under the label it came with first
        values = self.items.setdefault((_RANKS.index(rank), label), [])
        if len(values) < _MAX_VALUES:
            self.seen.add(value)
            values.append(value)


def _label(path: Sequence[str]) -> str:
    named = [p for p in path if p]
    return ".".join(named[-2:]) if named else "value"


def _looks_like_id(text: str) -> bool:
    return bool(_IDENT.fullmatch(text)) or bool(_DATE.fullmatch(text))


def _walk_json(value: Any, path: list[str], facts: _Facts, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        return
    key = path[-1] if path else ""
    if isinstance(value, dict):
        id_keys = [k for k, v in value.items()
                   if isinstance(k, str) and isinstance(v, (dict, list)) and _IDENT.fullmatch(k)]
        if id_keys and key:
            for k in id_keys:
                facts.add("id", _label(path), k)
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
            facts.add("status", label, str(value).lower())
            if key.lower() in ("ok", "success") and not value:
                facts.failed = True
        return
    if value is None:
        return
    if isinstance(value, (int, float)):
        text = format(value, "g") if isinstance(value, float) else str(value)
        if _AMOUNT_KEY.search(key) or _STATUS_KEY.search(key):
            facts.add("amount", label, text)
        elif _ID_KEY.search(key):
            facts.add("id", label, text)
        return
    if not isinstance(value, str) or not value.strip():
        return
    clipped = _clip(value, _MAX_VALUE_CHARS)
    if _ERROR_KEY.search(key):
        facts.failed = True
        facts.add("error", label, _clip(value, _MAX_ERROR_CHARS))
    elif _STATUS_KEY.search(key):
        if value.strip().lower().replace(" ", "_") in _BAD_STATUS:
            facts.failed = True
        facts.add("status", label, clipped)
    elif _DATE.fullmatch(value.strip()):
        facts.add("date", label, value.strip())
    elif _ID_KEY.search(key) or _looks_like_id(value.strip()):
        facts.add("id", label, clipped)
    elif _AMOUNT_KEY.search(key):
        facts.add("amount", label, clipped)
    elif len(value) <= 40 and "\n" not in value:
        facts.add("other", label, clipped)


# -- text -------------------------------------------------------------------------------------


def _text_facts(text: str, facts: _Facts) -> None:
    if len(text) > _SCAN_CHARS:  # bounded work: the start and the (most recent) end
        text = text[: _SCAN_CHARS // 3] + "\n" + text[-2 * _SCAN_CHARS // 3:]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errors = _error_lines(text)
    if errors:
        facts.failed = True
        strong = [ln for ln in errors if _STRONG_ERROR.search(ln)]
        for line in dict.fromkeys([*(strong[-1:]), errors[-1], errors[0]]):
            facts.add("error", "error", _clip(line, _MAX_ERROR_CHARS))
    if lines:
        facts.add("status", "output", _clip(lines[0], 100))
    for line in lines[:400]:
        kv = _KV_LINE.match(line)
        if kv is not None and len(kv.group(2)) <= 58:
            facts.add("other", kv.group(1).strip(), _clip(kv.group(2), _MAX_VALUE_CHARS))
    # where the (last) error is, then the start and the end of the output
    near = ""
    if errors:
        last = (strong or errors)[-1]
        at = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip() == last),
                  len(lines) - 1)
        near = "\n".join(lines[max(0, at - 5): at + 3])
    head = near + "\n" + (text if len(text) <= 20000 else text[:10000] + "\n" + text[-10000:])
    for match in _DATE.finditer(head):
        facts.add("date", "dates", match.group())
    for match in _MONEY.finditer(head):
        facts.add("amount", "amounts", match.group().replace(" ", ""))
    for match in _PATH.finditer(head):
        facts.add("id", "paths", match.group())
    for match in _TOKEN.finditer(head):  # cheap tokens, then the identifier test
        token = match.group()
        if (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
                and not _DATE.fullmatch(token)):
            facts.add("id", "ids", token)


def _render(facts: _Facts, max_chars: int) -> list[str]:
    out: list[str] = []
    used = 0
    for (_, label), values in sorted(facts.items.items(), key=lambda kv: kv[0][0]):
        shown: list[str] = []
        head = len(label) + 2
        for value in values:
            cost = len(value) + (2 if shown else 0)
            if used + head + cost > max_chars:
                break
            shown.append(value)
            used += cost
        if shown:
            used += head + 2
            extra = len(values) - len(shown)
            tail = f" (+{extra} more)" if extra else ""
            out.append(f"{label}: {', '.join(shown)}{tail}")
        if used >= max_chars:
            break
    return out


def key_facts(text: str, max_chars: int = DEFAULT_FACT_CHARS) -> list[str]:
    """See :func:`facts_and_failure` (the facts alone)."""
    return facts_and_failure(text, max_chars)[0]


def facts_and_failure(text: str, max_chars: int = DEFAULT_FACT_CHARS) -> tuple[list[str], bool]:
    """The key facts of one tool result as ``label: value, value`` items, most important
    first (errors, identifiers, statuses, dates, amounts), within about ``max_chars``.

    JSON is walked by key name and value shape (``*_id``/``status``/``amount``-like keys,
    values mixing letters and digits, ISO dates, identifier-like object keys); text is
    scanned for error lines, ``key: value`` lines, dates, amounts, paths and identifiers.
    """
    facts = _Facts({})
    ok, value = _parse_json(text)
    if ok:
        _walk_json(value, [], facts, [_MAX_NODES])
        if not facts.items and isinstance(value, (str, int, float)):
            facts.add("other", "value", _clip(str(value), _MAX_VALUE_CHARS))
    else:
        _text_facts(text, facts)
    return _render(facts, max_chars), facts.failed


def is_failure(text: str) -> bool:
    """True when a tool result reports a failure (an error key or status in JSON, an
    error line in text)."""
    facts = _Facts({})
    ok, value = _parse_json(text)
    if ok:
        _walk_json(value, [], facts, [_MAX_NODES])
    else:
        head = text[:4000]
        facts.failed = bool(_ERROR_LINE.search(head.splitlines()[0] if head.strip() else ""))
        if not facts.failed and head.lstrip().lower().startswith(("error", "traceback")):
            facts.failed = True
    return facts.failed


def call_signature(name: str, arguments: str, max_chars: int = 200) -> str:
    """A call as ``name(key=value, …)`` with its scalar arguments (nested values
    abbreviated), within about ``max_chars``."""
    ok, value = _parse_json(arguments)
    if not ok or not isinstance(value, dict):
        args = _clip(arguments, max(8, max_chars - len(name) - 2)) if arguments.strip() not in (
            "", "{}") else ""
        return f"{name}({args})"
    parts: list[str] = []
    for key, item in value.items():
        if isinstance(item, (dict, list)):
            flat = _Facts({})
            _walk_json(item, [str(key)], flat, [200])
            inner = [v for (_, _), vals in flat.items.items() for v in vals]
            shown = ", ".join(inner[:6]) + (f", {_MORE}" if len(inner) > 6 else "")
            parts.append(f"{key}=[{shown}]")
        elif isinstance(item, str):
            parts.append(f"{key}={_clip(item, _MAX_VALUE_CHARS)}")
        else:
            parts.append(f"{key}={json.dumps(item)}")
    text = ", ".join(parts)
    if len(text) > max_chars:
        text = text[: max_chars - 1].rstrip(", ") + _MORE
    return f"{name}({text})"


def observation_line(call: ToolCall | None, result: str, max_chars: int = DEFAULT_FACT_CHARS,
                     tool_name: str | None = None) -> str:
    """One compact record of a call and its result: ``name(args) → facts`` (``FAILED``
    marked), on one line with no sentence breaks."""
    name = call.name if call is not None else (tool_name or "tool")
    head = call_signature(name, call.arguments, max_chars // 2) if call else f"{name}()"
    room = max(40, max_chars - len(head) - 4)
    facts = "; ".join(key_facts(result, room)) or "(no output)"
    mark = " FAILED" if is_failure(result) else ""
    return one_line(f"{head} →{mark} {facts}")


@dataclass(frozen=True)
class AgentLine:
    """One record for a summary: the call's signature (the de-duplication key), the line,
    the seq it came from, and whether it reports a failure."""

    key: str
    text: str
    seq: int
    failed: bool


def agent_lines(messages: Iterable[StoredMessage], max_chars: int = DEFAULT_FACT_CHARS
                ) -> list[AgentLine]:
    """Calls and their results in ``messages`` as one line per call, de-duplicated by call
    signature with the newest result winning; a failure is kept (as its own record, the
    latest failure of each call) even when a later retry succeeded. A call whose result is
    not among ``messages`` gets a line of its own (``pending``). Lines come in
    conversation order of their (newest) result."""
    calls: dict[str, tuple[ToolCall, int]] = {}
    by_key: dict[str, AgentLine] = {}
    for item in messages:
        msg: Message = item.message
        for requested in msg.tool_calls:
            calls[requested.id] = (requested, item.seq)
        if msg.role != "tool" or msg.tool_call_id is None:
            continue
        found = calls.pop(msg.tool_call_id, None)
        call: ToolCall | None = found[0] if found else None
        key = call_signature(call.name, call.arguments, 200) if call else (
            f"{msg.name or 'tool'}#{msg.tool_call_id}")
        failed = is_failure(msg.text)
        line = AgentLine(key + (" !" if failed else ""),
                         observation_line(call, msg.text, max_chars, msg.name), item.seq, failed)
        by_key.pop(line.key, None)
        by_key[line.key] = line
    for pending, seq in calls.values():
        key = call_signature(pending.name, pending.arguments, 200)
        by_key.setdefault(key, AgentLine(key, one_line(f"{key} → pending"), seq, False))
    return sorted(by_key.values(), key=lambda line: line.seq)


# -- the offline summarizer's hook ----------------------------------------------------------

#: The speaker agent-state records are written under in a summary.
AGENT_SPEAKER = "Tools"


def agent_records(messages: Sequence[StoredMessage]) -> dict[int, AgentLine]:
    """:func:`agent_lines` of a fold's span, by the seq each record stands at (the result's,
    or the call's for a pending call). Empty when the span has no tool traffic."""
    if not any(m.message.tool_calls or m.message.role == "tool" for m in messages):
        return {}
    return {line.seq: line for line in agent_lines(messages)}


#: Salience bonus per token of an agent record (a chat sentence earns well under 1 per token):
#: the summary keeps the state lines first, failures and the newest fold's lines ahead.
RECORD_BONUS_PER_TOKEN = 1.5


def record_bonus(fact: Fact, tokens: int) -> float:
    """The extra salience of an agent record (see :data:`RECORD_BONUS_PER_TOKEN`)."""
    weight = RECORD_BONUS_PER_TOKEN * (1.5 if "FAILED" in fact.text else 1.0)
    source, position = fact.order[0], fact.order[1]
    # newer first: this fold's records before the previous summary's, later seqs first
    weight *= 1.0 + 0.5 * min(source, 1) + 0.2 * position / (position + 1000)
    return weight * max(1, tokens)


def _key_of(text: str) -> str:
    return text.split(" →", 1)[0].strip()


def drop_superseded(facts: list[Fact], records: Iterable[AgentLine]) -> list[Fact]:
    """The previous summary's facts without the agent records that a newer record of the
    same call replaces (the newest value wins across folds); failures stay."""
    keys = {_key_of(r.text) for r in records}
    return [
        f for f in facts
        if not (f.speaker == AGENT_SPEAKER and _key_of(f.text) in keys and "FAILED" not in f.text)
    ]


def agent_facts(seq: int, message: Message, records: dict[int, AgentLine],
                day: date | None) -> list[Fact]:
    """The facts a tool-traffic message contributes to a summary: its record (if it is the
    one kept for its call), and an assistant's own words beside its calls."""
    out: list[Fact] = []
    if message.role == "assistant" and message.text.strip():
        out.append(Fact(one_line(message.text)[:DEFAULT_FACT_CHARS],
                        "Assistant", day, (1, seq, 0)))
    line = records.get(seq)
    if line is not None:  # ends a sentence, so a summary parses it back as one fact
        out.append(Fact(line.text.rstrip(" .") + ".", AGENT_SPEAKER, day, (1, seq, 1)))
    return out
