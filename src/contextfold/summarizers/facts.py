"""Facts: the unit the extractive summarizer keeps or evicts, and the summary text format.

A summary is one line per (day, speaker), days in time order::

    8 May 2023 — Caroline: I went to an LGBTQ support group. I'm researching adoption agencies.
    8 May 2023 — Melanie: I painted a lake sunrise last year.
    Assistant: Booked the table for 4 at 7pm.

Each line is ``DATE — SPEAKER: sentences``; the date is left out when the messages had no
timestamp, the speaker when it is unknown. :func:`parse_summary` reads the text back into
facts, so the next fold can merge, re-rank and evict them together with the new messages;
any text it does not recognise (a summary written by another summarizer, an edited one)
becomes undated facts instead of being lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from .salience import split_sentences

__all__ = ["Fact", "format_day", "parse_summary", "render_summary_text"]

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
_MONTH_INDEX = {m: i + 1 for i, m in enumerate(MONTHS)}
_DASH = " — "
_DATED_LINE = re.compile(
    r"^(?P<day>\d{1,2}) (?P<month>[A-Z][a-z]+) (?P<year>\d{4})"
    r"(?: — (?:(?P<speaker>[^:\n—]{1,60}): )?(?P<body>.*))?$"
)
_SPEAKER_LINE = re.compile(r"^(?P<speaker>[^:\n—]{1,60}): (?P<body>.+)$")
_BAD_SPEAKER = re.compile(r"[:\n\r\t—]+")
_TERMINAL = (".", "!", "?", "…", "。", "！", "？", "؟", "।")
#: What may follow a sentence's end mark and still end it ("…, she said.'", "(yes!)").
_CLOSERS = "\"'”’)]»"


@dataclass(frozen=True, slots=True)
class Fact:
    """One sentence worth remembering: who said it, on which day, and its position.

    ``order`` sorts facts in conversation order (previous-summary facts first, then the
    folded messages by seq and sentence).
    """

    text: str
    speaker: str | None
    day: date | None
    order: tuple[int, int, int]


def format_day(day: date) -> str:
    """``8 May 2023`` — unambiguous, locale-free, and what people write."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def day_of(timestamp: datetime | None) -> date | None:
    return timestamp.date() if timestamp is not None else None


def clean_speaker(speaker: str | None) -> str | None:
    """A speaker label that cannot break the line format (no colons, dashes, newlines)."""
    if speaker is None:
        return None
    cleaned = " ".join(_BAD_SPEAKER.sub(" ", speaker).split())[:60].strip()
    return cleaned or None


def sentence_text(text: str) -> str:
    """A fact as it is rendered: one line, ending in punctuation so that it splits back
    into exactly itself."""
    text = " ".join(text.split())
    if text and not text.rstrip(_CLOSERS).endswith(_TERMINAL):
        text += "."  # a closing bracket alone ("next friday (6 March 2026)") ends nothing
    return text


def render_summary_text(facts: list[Fact]) -> str:
    """Render facts as summary lines: grouped by (day, speaker), days in time order, and
    within a day in the order each speaker first spoke. Undated facts keep conversation
    order and start a new line whenever the speaker changes."""
    lines: list[tuple[tuple[int, int, int], str, list[str]]] = []
    dated: dict[tuple[date, str | None], int] = {}
    last_key: tuple[date | None, str | None] | None = None
    for fact in sorted(facts, key=_sort_key):
        if fact.day is not None:
            key = (fact.day, fact.speaker)
            index = dated.get(key)
            if index is None:
                dated[key] = len(lines)
                lines.append((fact.order, _prefix(fact.day, fact.speaker), [fact.text]))
            else:
                lines[index][2].append(fact.text)
            last_key = (fact.day, fact.speaker)
            continue
        if last_key == (None, fact.speaker) and lines:
            lines[-1][2].append(fact.text)
        else:
            lines.append((fact.order, _prefix(None, fact.speaker), [fact.text]))
        last_key = (None, fact.speaker)
    return "\n".join(prefix + " ".join(sentence_text(t) for t in body) for _, prefix, body in lines)


def _sort_key(fact: Fact) -> tuple[int, int, tuple[int, int, int]]:
    if fact.day is None:
        return (0, 0, fact.order)
    return (1, fact.day.toordinal(), fact.order)


def _prefix(day: date | None, speaker: str | None) -> str:
    if day is not None and speaker:
        return f"{format_day(day)}{_DASH}{speaker}: "
    if day is not None:
        return f"{format_day(day)}{_DASH}"
    if speaker:
        return f"{speaker}: "
    return ""


def parse_summary(text: str) -> list[Fact]:
    """Read a summary back into facts (the inverse of :func:`render_summary_text` on its
    own output). Unrecognised lines become undated, unattributed facts, in order."""
    facts: list[Fact] = []
    for line_no, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if not line:
            continue
        day: date | None = None
        speaker: str | None = None
        body = line
        match = _DATED_LINE.match(line)
        if match is not None and match.group("month") in _MONTH_INDEX:
            try:
                day = date(
                    int(match.group("year")),
                    _MONTH_INDEX[match.group("month")],
                    int(match.group("day")),
                )
            except ValueError:
                day = None
            if day is not None:
                speaker = match.group("speaker")
                body = match.group("body") or ""
        if day is None:
            spoken = _SPEAKER_LINE.match(line)
            if spoken is not None:
                speaker, body = spoken.group("speaker"), spoken.group("body")
        speaker = clean_speaker(speaker)
        for k, sentence in enumerate(split_sentences(body)):
            facts.append(Fact(sentence, speaker, day, (0, line_no, k)))
    return facts
