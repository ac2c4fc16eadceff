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
from .tokens import TokenCounter, call_tokens, count_message, count_repeated, framing_tokens

__all__ = ["ELISION_MARK", "CutKey", "elide"]

#: A cut text's cache key: (seq, unit, share, the text cut).
CutKey = tuple[int, int, int, str]

#: The marker put where text was left out (``{tokens}`` and ``{seq}`` filled in).
ELISION_MARK = (
    "\n[… {tokens} tokens elided by contextfold; whole message stored as seq {seq}{notes} …]\n"
)
#: Room for a marker's key facts, in characters, tried in turn until the cut fits.
#: (A JSON result's head and tail are mostly keys and brackets: its key facts may take
#: the larger sizes; other results keep their head and tail and at most 320.)
NOTE_CHARS = (960, 640, 480, 320, 240, 160, 120, 80)
_HEAD = 2 / 3  # of the kept characters, the share that goes to the head
_STEP = 32  # shares are rounded down to a multiple of this many tokens (cache hits) ...


def _step(cap: int) -> int:
    """... or, for large shares, of about a tenth of the share (a power of two), so a
    share that shrinks a little as messages arrive keeps its cut."""
    if cap <= 4 * _STEP:
        return 1
    return max(_STEP, 1 << max(0, cap.bit_length() - 3))


@dataclass(frozen=True)
class _Unit:
    """One elidable text: a message's content (``call`` -1) or one call's arguments."""

    index: int
    call: int
    text: str
    tokens: int


def _mark(seq: int, tokens: int, notes: str = "") -> str:
    return ELISION_MARK.format(tokens=f"{tokens:,}", seq=seq,
                               notes=f"; its key facts: {notes}" if notes else "")


def _cut(counter: TokenCounter, text: str, tokens: int, share: int, seq: int,
         fits: Callable[[str], bool], notes: str = "") -> str | None:
    """``text`` cut to head + marker + tail such that ``fits`` accepts it, keeping about
    ``share`` tokens of the text."""
    if share <= 0:
        for note in (notes, ""):
            cand = _mark(seq, tokens, note).strip()
            if fits(cand):
                return cand
        return None
    per_token = len(text) / max(1, tokens)
    keep = int(share * per_token)
    for _ in range(12):
        head = int(keep * _HEAD)
        tail = keep - head
        omitted = max(1, tokens - int(keep / per_token))  # estimate: no extra encoding
        cand = text[:head] + _mark(seq, omitted, notes) + (
            text[len(text) - tail:] if tail else "")
        if fits(cand):
            return cand
        keep = int(keep * 0.85)
        if keep < 4:
            break
    for note in (notes, ""):
        cand = _mark(seq, tokens, note).strip()
        if fits(cand):
            return cand
    return None


def _units(messages: Sequence[Message], tokens: Sequence[int], counter: TokenCounter
           ) -> list[_Unit]:
    units: list[_Unit] = []
    for i, msg in enumerate(messages):
        text = msg.text
        if text:
            if isinstance(msg.content, str):  # counting is additive: no need to encode it
                size = tokens[i] - framing_tokens(counter, msg) - call_tokens(counter, msg)
            else:
                size = counter.count(text)
            units.append(_Unit(i, -1, text, max(0, size)))
        for k, call in enumerate(msg.tool_calls):
            if len(call.arguments) > 64:
                units.append(_Unit(i, k, call.arguments, counter.count(call.arguments)))
    return units


def _cap(sizes: Sequence[int], available: int, markers: Sequence[int]) -> int | None:
    """The largest share ``c`` such that every unit kept whole or cut to ``c`` tokens plus
    its marker, whichever is smaller, costs at most ``available`` in total; None if not
    even the markers fit."""

    def cost(c: int) -> int:
        return sum(min(s, c + m) for s, m in zip(sizes, markers, strict=True))

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
    notes: Callable[[int, int], str] | None = None,
    cache: dict[CutKey, tuple[str, int]] | None = None,
) -> tuple[list[Message], list[int], int] | None:
    """``messages`` (stored as ``seqs``, costing ``tokens``) cut to fit ``room`` tokens in
    total, or None when even the framing and markers do not fit. Returns the messages,
    the indices of those that were cut, and their total tokens. ``notes(i, chars)`` may
    give a line of key facts for message ``i``'s marker (what the cut-out middle held)
    within ``chars`` characters, tried at :data:`NOTE_CHARS` from the most room down;
    ``cache`` keeps cut texts and their token counts by (seq, unit, share, text) between
    calls (the text too: a message's shown form changes when it is masked).
    Arguments of a cut call become a JSON object ``{"elided_by_contextfold": "head …
    tail"}`` (still valid JSON)."""
    total = sum(tokens)
    if total <= room:
        return list(messages), [], total
    units = _units(messages, tokens, counter)
    if not units:
        return None

    def attempt(units: list[_Unit]) -> tuple[list[Message], list[int], int] | None:
        """Cut ``units`` to fit, with key facts in the markers when there is room for
        them (each size of notes tried once), else with bare markers."""
        if notes is not None:
            tried: list[list[str]] = []
            for chars in NOTE_CHARS:
                level = [notes(u.index, chars) if u.call < 0 else "" for u in units]
                if level in tried:
                    continue  # the same notes as a size already tried
                tried.append(level)
                fit = _elide(counter, messages, seqs, tokens, room, units, level, cache)
                if fit is not None:
                    return fit
        return _elide(counter, messages, seqs, tokens, room, units, None, cache)

    last = len(messages) - 1
    if last > 0 and messages[last].role in ("user", "assistant"):
        # the newest turn (what the model answers) stays whole if cutting the others does
        others = [u for u in units if u.index != last]
        if others and len(others) < len(units):
            fit = attempt(others)
            if fit is not None:
                return fit
    return attempt(units)


def _elide(
    counter: TokenCounter,
    messages: Sequence[Message],
    seqs: Sequence[int],
    tokens: Sequence[int],
    room: int,
    units: list[_Unit],
    unit_notes: list[str] | None,
    cache: dict[CutKey, tuple[str, int]] | None,
) -> tuple[list[Message], list[int], int] | None:
    total = sum(tokens)
    fixed = total - sum(u.tokens for u in units)
    if unit_notes is None:
        unit_notes = [""] * len(units)
    markers = [count_repeated(counter, _mark(seqs[u.index], u.tokens, n)) + 2
               for u, n in zip(units, unit_notes, strict=True)]
    available = room - fixed
    for _ in range(4):
        cap = _cap([u.tokens for u in units], available, markers)
        if cap is None:
            return None
        cap -= cap % _step(cap)  # shares on a grid, so the same cut is reused turn after turn
        out = list(messages)
        cut: dict[int, tuple[str | None, dict[int, str]]] = {}
        saved: dict[int, int] = {}  # tokens each cut message saves (exact: counting adds up)
        for u, note, marker in zip(units, unit_notes, markers, strict=True):
            if u.tokens <= cap + marker:
                continue
            is_args = u.call >= 0
            seq = seqs[u.index]
            # the cut depends on the unit, its share, its marker's notes (by their size) and
            # the text cut: a result elided in full and later as its stand-in is cut anew
            # (the text is the message's own string, its hash computed once)
            key = (seq, u.call if u.call >= 0 else -2 - len(note), cap, u.text)
            hit = cache.get(key) if cache is not None else None
            if hit is None:
                counted = [0]

                def fits(text: str, is_args: bool = is_args, limit: int = cap + marker,
                         counted: list[int] = counted) -> bool:
                    body = json.dumps({"elided_by_contextfold": text}, ensure_ascii=False) if (
                        is_args) else text
                    counted[0] = counter.count(body)
                    return counted[0] <= limit

                short = _cut(counter, u.text, u.tokens, cap, seq, fits, note)
                if short is None:
                    return None
                hit = (short, counted[0])
                if cache is not None:
                    if len(cache) > 256:
                        cache.clear()
                    cache[key] = hit
            short, short_tokens = hit
            content, args = cut.get(u.index, (None, {}))
            if is_args:
                args[u.call] = json.dumps({"elided_by_contextfold": short}, ensure_ascii=False)
            else:
                content = short
            cut[u.index] = (content, args)
            saved[u.index] = saved.get(u.index, 0) + u.tokens - short_tokens
        for index, (content, args) in cut.items():
            out[index] = _rebuild(messages[index], content, args)
        used = sum(
            (t - saved[i] if isinstance(messages[i].content, str) else count_message(counter, m))
            if i in cut else t
            for i, (m, t) in enumerate(zip(out, tokens, strict=True))
        )
        if used <= room:
            return out, sorted(cut), used
        available -= used - room  # token boundaries moved: try again with less
    return None
