"""Agent records: folded tool traffic as compact state lines in the offline summary.

When the extractive summarizer folds agent turns it keeps what the next call will need:
each call as ``name(key=value, …)`` with the key facts of its result
(:mod:`.agent_state`), de-duplicated by call with the newest result winning, failures kept.
A record comes in two parts, so that it adapts to the room a summary has:

- the **core** line — the call and the most reusable values of its result (identifiers,
  codes, dates first; values the call's own arguments show are not repeated) — ranked
  ahead of chat sentences;
- a **more** line — the rest of the result's values (and any argument the signature left
  out), under a shortened signature (``name(…) (more) → …``) — kept only when the summary
  has room after the cores.

A failed call keeps every argument (it is likely retried), and the latest failure of each
call stays. Across the summary each value is written once: an older record drops the
values a newer core already shows (:func:`compact_records`), so more records fit.

In an agent fold the user's own sentences that state identifiers, dates or amounts (a
user id, a confirmation code, a date typed by the user) rank with the records: the values
a user gave are among those a later call reuses most.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from ..messages import Message, StoredMessage, ToolCall
from .agent_state import (
    DEFAULT_FACT_CHARS,
    SCORE_DATE,
    SCORE_IDENT,
    call_signature,
    call_values,
    extract,
    is_failure,
    one_line,
    render,
    value_shape,
)
from .facts import Fact

__all__ = [
    "AGENT_SPEAKER",
    "AgentLine",
    "agent_facts",
    "agent_lines",
    "agent_records",
    "drop_superseded",
    "observation_line",
    "record_bonus",
    "user_value_bonus",
]

#: The speaker agent-state records are written under in a summary.
AGENT_SPEAKER = "Tools"
#: Room for the facts of a record's core line, and of its optional second line (chars).
CORE_CHARS = 160
CORE_MAX_CHARS = 320
MORE_CHARS = 480
#: The least score of a value in a record's core line (a date's: identifiers, codes,
#: dates, errors and failed statuses qualify; other values wait for the second line).
#: Chosen on the tuning half and the tuning traces (3, 4, 5 and 6 tried): recall at 500 /
#: 1,000 tokens 84.0 / 95.9 -> 85.7 / 98.0 and 88.6 / 93.2 -> 89.7 / 93.6 (more records
#: fit a small summary).
CORE_MIN_SCORE = SCORE_DATE
#: Room for a call's signature in a core line, and in a second line.
SIGNATURE_CHARS = 160
SHORT_SIGNATURE_CHARS = 60
#: Room for a failed call's signature (all its arguments: it is likely retried).
FAILED_SIGNATURE_CHARS = 600
#: Marks a record's second line (between its shortened signature and its facts).
MORE_MARK = " (more) →"

#: Salience bonus per token of a core record (a chat sentence earns well under 1 per
#: token): the summary keeps the state lines first, failures and the newest fold's ahead.
RECORD_BONUS_PER_TOKEN = 1.5
#: ... of a record's second line (it fills room the cores and the chat leave; 0.15-0.6
#: measured alike but for 0.6, a point lower at 500 tokens on the tuning half), and of
#: a user sentence that states values.
MORE_BONUS_PER_TOKEN = 0.3
USER_BONUS_PER_TOKEN = 1.2

_WORDS = re.compile(r"[^\s,;:()\[\]\"']+")


@dataclass(frozen=True)
class AgentLine:
    """One record for a summary: the call's signature (the de-duplication key), the core
    line, the seq it came from, whether it reports a failure, and its optional second
    line (``""`` when the core holds every value) with the shortened signature."""

    key: str
    text: str
    seq: int
    failed: bool
    more: str = ""
    short_key: str = ""


def _record(call: ToolCall | None, result: str, tool_name: str | None,
            core_chars: int = CORE_CHARS) -> tuple[str, str, str]:
    """(core line, second line, shortened signature) for one call and its result. A failed
    call shows every argument (it is likely to be retried); another's arguments beyond its
    signature go first into the second line."""
    name = call.name if call is not None else (tool_name or "tool")
    failed = is_failure(result)
    if call is None:
        sig = f"{name}()"
    elif failed:
        sig = call_signature(name, call.arguments, FAILED_SIGNATURE_CHARS, nested=64)
    else:
        sig = call_signature(name, call.arguments, SIGNATURE_CHARS)
    facts = extract(result)
    arguments = call_values(call.arguments) if call else []
    scored = facts.scored([v for v in arguments if v in sig])
    # the core has room for every identifier (up to CORE_MAX_CHARS)
    ident_chars = sum(len(v) + 2 for _, v, score in scored if score >= SCORE_IDENT)
    ident_chars += sum(len(lab) + 2 for lab in {lab for lab, _, s in scored if s >= SCORE_IDENT})
    room = max(core_chars, min(CORE_MAX_CHARS, ident_chars))
    # the core: values at least as reusable as a date (identifiers, codes, dates, errors
    # and failed statuses); other statuses, amounts, names and words go to the second
    # line, unless the result has no such value (then its best values make the core)
    floor = CORE_MIN_SCORE if any(score >= CORE_MIN_SCORE for _, _, score in scored) else 0.0
    core, rest = render([(lab, v) for lab, v, score in scored if score >= floor], room)
    rest += [(lab, v) for lab, v, score in scored if score < floor]
    mark = " FAILED" if failed else ""
    text = one_line(f"{sig} →{mark} {'; '.join(core) or '(no output)'}")
    short = call_signature(name, call.arguments, SHORT_SIGNATURE_CHARS) if call else sig
    unseen = [("args", v) for v in dict.fromkeys(arguments) if v not in sig]
    more = ""
    if rest or unseen:
        extra, _ = render(unseen + rest, MORE_CHARS)
        more = one_line(f"{short}{MORE_MARK} {'; '.join(extra)}")
    return text, more, short


def observation_line(call: ToolCall | None, result: str, max_chars: int = DEFAULT_FACT_CHARS,
                     tool_name: str | None = None) -> str:
    """One compact record of a call and its result: ``name(args) → facts`` (``FAILED``
    marked), on one line with no sentence breaks, its facts within about ``max_chars``
    minus the signature."""
    name = call.name if call is not None else (tool_name or "tool")
    head = call_signature(name, call.arguments, max_chars // 2) if call else f"{name}()"
    return _record(call, result, tool_name, max(40, max_chars - len(head) - 4))[0]


def agent_lines(messages: Iterable[StoredMessage]) -> list[AgentLine]:
    """Calls and their results in ``messages`` as one record per call, de-duplicated by
    call signature with the newest result winning; a failure is kept (as its own record,
    the latest failure of each call) even when a later retry succeeded. A call whose
    result is not among ``messages`` gets a record of its own (``pending``). Records come
    in conversation order of their (newest) result."""
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
        text, more, short = _record(call, msg.text, msg.name)
        line = AgentLine(key + (" !" if failed else ""), text, item.seq, failed, more, short)
        by_key.pop(line.key, None)
        by_key[line.key] = line
    for pending, seq in calls.values():
        key = call_signature(pending.name, pending.arguments, 200)
        short = call_signature(pending.name, pending.arguments, SHORT_SIGNATURE_CHARS)
        by_key.setdefault(key, AgentLine(key, one_line(f"{key} → pending"), seq, False, "",
                                         short))
    return sorted(by_key.values(), key=lambda line: line.seq)


def agent_records(messages: Sequence[StoredMessage]) -> dict[int, AgentLine]:
    """:func:`agent_lines` of a fold's span, by the seq each record stands at (the result's,
    or the call's for a pending call). Empty when the span has no tool traffic."""
    if not any(m.message.tool_calls or m.message.role == "tool" for m in messages):
        return {}
    return {line.seq: line for line in agent_lines(messages)}


def _newness(fact: Fact) -> float:
    """This fold's facts before the previous summary's, later seqs first."""
    source, position = fact.order[0], fact.order[1]
    return 1.0 + 0.5 * min(source, 1) + 0.2 * position / (position + 1000)


def record_bonus(fact: Fact, tokens: int) -> float:
    """The extra salience of an agent record (see :data:`RECORD_BONUS_PER_TOKEN`)."""
    if MORE_MARK in fact.text:
        weight = MORE_BONUS_PER_TOKEN
    else:
        weight = RECORD_BONUS_PER_TOKEN * (1.5 if failed_record(fact.text) else 1.0)
    return weight * _newness(fact) * max(1, tokens)


def stated_values(text: str) -> int:
    """How many identifiers, codes, dates and amounts a sentence states."""
    return sum(1 for w in _WORDS.findall(text)
               if value_shape(w.strip(".!?")) in ("ident", "code", "date")
               or (w[:1] in "$€£¥" and any(c.isdigit() for c in w)))


def user_value_bonus(fact: Fact, tokens: int) -> float:
    """The extra salience, in an agent fold, of a user's sentence that states values (see
    :data:`USER_BONUS_PER_TOKEN`); 0 for one that states none."""
    if not stated_values(fact.text):
        return 0.0
    return USER_BONUS_PER_TOKEN * _newness(fact) * max(1, tokens)


def failed_record(text: str) -> bool:
    """Whether a record reports a failed call (its facts open with ``FAILED``; a value
    that merely mentions the word does not count)."""
    return " → FAILED " in text


def _key_of(text: str) -> str:
    key = text.split(" →", 1)[0].strip()
    return key[: -len(" (more)")] if key.endswith(" (more)") else key


def drop_superseded(facts: list[Fact], records: Iterable[AgentLine]) -> list[Fact]:
    """The previous summary's facts without the agent records that a newer record of the
    same call replaces (the newest value wins across folds). A failure stays until the
    same call fails again (the latest failure of each call is kept)."""
    cores = set()
    shorts = set()
    failures = set()
    for r in records:
        cores.add(_key_of(r.text))
        shorts.add(r.short_key or _key_of(r.text))
        if r.failed:
            failures.add(_key_of(r.text))

    def replaced(f: Fact) -> bool:
        if f.speaker != AGENT_SPEAKER:
            return False
        if failed_record(f.text):
            return _key_of(f.text) in failures
        return _key_of(f.text) in (shorts if MORE_MARK in f.text else cores)

    return [f for f in facts if not replaced(f)]


def agent_facts(seq: int, message: Message, records: dict[int, AgentLine],
                day: date | None) -> list[Fact]:
    """The facts a tool-traffic message contributes to a summary: its record (if it is the
    one kept for its call) in one or two lines, and an assistant's own words beside its
    calls."""
    out: list[Fact] = []
    if message.role == "assistant" and message.text.strip():
        out.append(Fact(one_line(message.text)[:DEFAULT_FACT_CHARS],
                        "Assistant", day, (1, seq, 0)))
    line = records.get(seq)
    if line is not None:  # ends a sentence, so a summary parses it back as one fact
        out.append(Fact(line.text.rstrip(" .") + ".", AGENT_SPEAKER, day, (1, seq, 1)))
        if line.more:
            out.append(Fact(line.more.rstrip(" .") + ".", AGENT_SPEAKER, day, (1, seq, 2)))
    return out


_TOKENS = re.compile(r"[^\s,;=\[\]()]+")


def _strip_values(text: str, seen: set[str]) -> str:
    """A record with the values in ``seen`` taken out of its facts (not its signature);
    a label left with no value goes, and so do facts left with none (``→ …``)."""
    head, arrow, facts = text.partition(" → ")
    if not arrow or failed_record(text):
        return text  # a failure is kept whole
    groups = []
    for group in facts.rstrip(".").split("; "):
        label, colon, values = group.partition(": ")
        if not colon:
            groups.append(group)
            continue
        kept = [v for v in values.split(", ") if v not in seen]
        if kept:
            groups.append(f"{label}: {', '.join(kept)}")
    return f"{head} → {'; '.join(groups) if groups else '…'}"


def compact_records(facts: list[Fact]) -> list[Fact]:
    """Agent records with every value written once: a value a newer record already shows
    (in its signature or its facts) is taken out of the older ones, which then cost fewer
    tokens, so more records fit a summary. Failures are kept whole; other facts as
    they are."""
    seen: set[str] = set()
    out: dict[int, Fact] = {}
    ranked = sorted(range(len(facts)), key=lambda i: facts[i].order, reverse=True)
    for i in ranked:
        fact = facts[i]
        if fact.speaker != AGENT_SPEAKER:
            continue
        text = _strip_values(fact.text, seen)
        if text != fact.text:
            out[i] = Fact(text.rstrip(" .") + ".", fact.speaker, fact.day, fact.order)
        if MORE_MARK not in fact.text:  # a second line may go first: it vouches for nothing
            seen.update(_TOKENS.findall(fact.text))
    return [out.get(i, f) for i, f in enumerate(facts)]
