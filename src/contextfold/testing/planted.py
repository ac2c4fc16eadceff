"""Planted-fact conversations: the common shape of the synthetic evaluation sets.

A :class:`PlantedChat` is a list of messages plus the facts planted in it. Each
:class:`PlantedFact` has a *needle*, an exact string that appears in the conversation only
where the fact is stated, so finding it in a context means the fact survived. A corrected
fact also names its ``stale`` value (the one the correction replaced); a fact stated with
a relative date ("next friday") names the absolute date it means (``resolved``).
:func:`score` measures a context against them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..messages import Message

__all__ = ["ChatScore", "PlantedChat", "PlantedFact", "context_lines", "score"]


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """One fact to keep: ``needle`` must be found; ``owner`` is who said it (canonical
    name); ``stale`` is the value a correction replaced; ``resolved`` the absolute date a
    relative date in the fact means (``"12 May 2023"``)."""

    needle: str
    owner: str
    description: str = ""
    stale: str | None = None
    resolved: str | None = None


@dataclass(frozen=True)
class PlantedChat:
    name: str
    language: str
    messages: list[Message]
    facts: list[PlantedFact]
    speakers: dict[str, str] = field(default_factory=dict)
    """Every name a speaker appears under (lower-cased) → the canonical name."""


@dataclass
class ChatScore:
    """Counts over one or more chats."""

    kept: int = 0
    total: int = 0
    attributed: int = 0
    corrections: int = 0
    stale_alone: int = 0
    relative: int = 0
    resolved: int = 0

    def add(self, other: ChatScore) -> None:
        for name in ("kept", "total", "attributed", "corrections", "stale_alone",
                     "relative", "resolved"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def share(self) -> float:
        return self.kept / self.total if self.total else 0.0


_SUMMARY_SPEAKER = re.compile(r"^(?:\d{1,2} [A-Z][a-z]+ \d{4} — )?(?P<who>[^:\n—]{1,60}): ")


def context_lines(messages: Iterable[Message]) -> list[tuple[str | None, str, bool]]:
    """(speaker, line, is a summary line) for every line of a context: summary lines carry
    their own speaker, live messages their name (or role)."""
    out: list[tuple[str | None, str, bool]] = []
    for message in messages:
        if message.role == "system":
            for line in message.text.splitlines():
                match = _SUMMARY_SPEAKER.match(line)
                out.append((match.group("who") if match else None, line, True))
        else:
            out.append((message.name or message.role, message.text, False))
    return out


def score(chat: PlantedChat, context: Iterable[Message]) -> ChatScore:
    """How many planted facts a context keeps; how many it attributes to the right
    speaker; for corrected facts, how often the summary shows the stale value on a line
    without the new one (live messages are verbatim and show both, in order); for
    relative-date facts kept in the summary, how often the absolute date is with them."""
    lines = context_lines(context)
    result = ChatScore(total=len(chat.facts))
    for fact in chat.facts:
        needle = fact.needle.lower()
        holding = [(who, line, s) for who, line, s in lines if needle in line.lower()]
        if fact.stale is not None:
            result.corrections += 1
            stale = fact.stale.lower()
            live_new = any(not s for _, _, s in holding)  # the correction is still verbatim
            result.stale_alone += not live_new and any(
                s and stale in line.lower() and needle not in line.lower()
                for _, line, s in lines
            )
        summarised = [line for _, line, s in holding if s]
        if fact.resolved is not None and summarised:
            result.relative += 1
            result.resolved += any(fact.resolved in line for line in summarised)
        if not holding:
            continue
        result.kept += 1
        owner = fact.owner.lower()
        result.attributed += any(
            who is not None and chat.speakers.get(who.lower(), who).lower() == owner
            for who, _, _ in holding
        )
    return result
