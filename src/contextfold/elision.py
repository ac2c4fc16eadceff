"""Elision: messages too big for the budget shown head + tail in the view.

When the newest part of a conversation that must stay visible (the newest tool result with
its call, and everything after it) does not fit the budget, the view cuts the largest
texts in it instead of failing: each keeps its head and its tail around a marker naming
how many tokens were left out and the seq under which the whole message is stored. The
room is shared fairly (water-filling): small messages stay whole, and every result of a
parallel batch keeps the same share, so all stay visible and every call keeps its result.

Pure: a function of (messages, room, counter). The store keeps every message whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .messages import Message, ToolCall
from .tokens import TokenCounter, count_message

__all__ = ["ELISION_MARK", "elide"]

#: The marker put where text was left out (``{tokens}`` and ``{seq}`` filled in).
ELISION_MARK = (
    "\n[… {tokens} tokens elided by contextfold to fit the token budget; "
    "the whole message is stored as seq {seq} …]\n"
)
_HEAD = 2 / 3  # of the kept characters, the share that goes to the head


@dataclass(frozen=True)
class _Unit:
    """One elidable text: a message's content (``call`` -1) or one call's arguments."""

    index: int
    call: int
    text: str
    tokens: int


def _mark(seq: int, tokens: int) -> str:
    return ELISION_MARK.format(tokens=f"{tokens:,}", seq=seq)


def _cut(counter: TokenCounter, text: str, tokens: int, share: int, seq: int,
         fits: Callable[[str], bool]) -> str | None:
    """``text`` cut to head + marker + tail such that ``fits`` accepts it, keeping about
    ``share`` tokens of the text."""
    if share <= 0:
        cand = _mark(seq, tokens).strip()
        return cand if fits(cand) else None
    per_token = len(text) / max(1, tokens)
    keep = int(share * per_token)
    for _ in range(12):
        head = int(keep * _HEAD)
        tail = keep - head
        kept = text[:head] + text[len(text) - tail:] if tail else text[:head]
        omitted = max(1, tokens - counter.count(kept))
        cand = text[:head] + _mark(seq, omitted) + (text[len(text) - tail:] if tail else "")
        if fits(cand):
            return cand
        keep = int(keep * 0.85)
        if keep < 4:
            break
    cand = _mark(seq, tokens).strip()
    return cand if fits(cand) else None


def _units(messages: Sequence[Message], counter: TokenCounter) -> list[_Unit]:
    units: list[_Unit] = []
    for i, msg in enumerate(messages):
        text = msg.text
        if text:
            units.append(_Unit(i, -1, text, counter.count(text)))
        for k, call in enumerate(msg.tool_calls):
            if len(call.arguments) > 64:
                units.append(_Unit(i, k, call.arguments, counter.count(call.arguments)))
    return units


def _cap(sizes: Sequence[int], available: int, marker: int) -> int | None:
    """The largest share ``c`` such that every unit kept whole or cut to ``c`` tokens plus
    a marker, whichever is smaller, costs at most ``available`` in total; None if not
    even the markers fit."""

    def cost(c: int) -> int:
        return sum(min(s, c + marker) for s in sizes)

    if cost(0) > available:
        return None
    lo, hi = 0, max(sizes, default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if cost(mid) <= available:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _rebuild(message: Message, content: str | None, args: dict[int, str]) -> Message:
    calls = tuple(
        ToolCall(c.id, c.name, args[k]) if k in args else c
        for k, c in enumerate(message.tool_calls)
    )
    return Message(
        role=message.role,
        content=message.content if content is None else content,
        name=message.name,
        tool_calls=calls,
        tool_call_id=message.tool_call_id,
        timestamp=message.timestamp,
        metadata=message.metadata,
        id=message.id,
    )


def elide(
    counter: TokenCounter,
    messages: Sequence[Message],
    seqs: Sequence[int],
    tokens: Sequence[int],
    room: int,
) -> tuple[list[Message], list[int], int] | None:
    """``messages`` (stored as ``seqs``, costing ``tokens``) cut to fit ``room`` tokens in
    total, or None when even the framing and markers do not fit. Returns the messages,
    the indices of those that were cut, and their total tokens. Arguments of a cut call
    become a JSON object ``{"elided_by_contextfold": "head … tail"}`` (still valid JSON)."""
    total = sum(tokens)
    if total <= room:
        return list(messages), [], total
    units = _units(messages, counter)
    if not units:
        return None
    fixed = total - sum(u.tokens for u in units)
    marker = counter.count(_mark(max(seqs), max(tokens))) + 2
    available = room - fixed
    for _ in range(4):
        cap = _cap([u.tokens for u in units], available, marker)
        if cap is None:
            return None
        out = list(messages)
        cut: dict[int, tuple[str | None, dict[int, str]]] = {}
        for u in units:
            if u.tokens <= cap + marker:
                continue
            is_args = u.call >= 0
            seq = seqs[u.index]

            def fits(text: str, is_args: bool = is_args, cap: int = cap) -> bool:
                body = json.dumps({"elided_by_contextfold": text}, ensure_ascii=False) if (
                    is_args) else text
                return counter.count(body) <= cap + marker

            short = _cut(counter, u.text, u.tokens, cap, seq, fits)
            if short is None:
                return None
            content, args = cut.get(u.index, (None, {}))
            if is_args:
                args[u.call] = json.dumps({"elided_by_contextfold": short}, ensure_ascii=False)
            else:
                content = short
            cut[u.index] = (content, args)
        for index, (content, args) in cut.items():
            out[index] = _rebuild(messages[index], content, args)
        used = sum(
            count_message(counter, m) if i in cut else t
            for i, (m, t) in enumerate(zip(out, tokens, strict=True))
        )
        if used <= room:
            return out, sorted(cut), used
        available -= used - room  # token boundaries moved: try again with less
    return None
