"""Building the context a model receives: system prompt + summary block + live messages.

Pure code. The result never exceeds the budget and never fails for size:

- when the live messages do not all fit (a fold is pending or failed) the oldest are left
  out of the *view* in whole tool-call groups — the store keeps them — and the
  :class:`Context` says how many;
- the newest tool result, with its call and everything after it, always stays; when even
  that does not fit, the largest texts in it are cut head + tail in the view
  (:mod:`.elision`), the room shared fairly across a parallel batch, and flagged;
- with :class:`~contextfold.masking.Masking`, tool results older than the newest few are
  shown as compact stand-ins (:mod:`.masking`).

The view is incremental (:class:`LiveView`): it keeps, per session, running token sums,
the safe cuts and the stand-ins made so far, and on each call takes in only the messages
appended since the last one, so a call costs the same with 100 live messages or 10,000:
the context's messages are a :class:`~contextfold.message_view.MessageView` over the
view's own lists, not a copy. After a fold it re-bases its sums
and the shown forms settled so far (:func:`~contextfold.view_cache.drop_folded`).

When earlier turns were folded or left out and the verbatim part would open with an
assistant turn, a one-line user turn (:data:`BRIDGE_TEXT`) is put before it: Anthropic
rejects a conversation whose first turn is not the user's, and a fold or a trimmed view
must not turn a valid conversation into an invalid one. The summary block itself (its label,
and where a provider's prompt cache can keep it) is :mod:`.summary_block`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .elision import CutKey, elide
from .errors import ConfigError, ValidationError
from .masking import Masking, mask_call, masked_result
from .message_view import MessageView
from .messages import Message, StoredMessage, ToolCall
from .summarizers.agent_state import (
    DEFAULT_FACT_CHARS,
    VIEW_SCAN_CHARS,
    ValueFacts,
    call_signature,
    call_values,
    extract,
    render,
)
from .summary_block import SUMMARY_HEADER, render_summary, summary_overhead
from .tokens import REPLY_PRIMING_TOKENS, TokenCounter, count_message

if TYPE_CHECKING:
    from .stores.base import Summary

__all__ = [
    "BRIDGE_TEXT",
    "SUMMARY_HEADER",
    "Context",
    "LiveView",
    "bridge_turn_tokens",
    "build_context",
    "render_summary",
    "summary_overhead",
]

#: The user turn put before a verbatim part that would otherwise open with the assistant.
BRIDGE_TEXT = "(The conversation continues from earlier turns that are not shown.)"
_BRIDGE = Message(role="user", content=BRIDGE_TEXT)
#: When the newest part must be cut down, the summary stays if it leaves the newest part
#: at least this share of the room (system prompt and tools aside).
_MIN_NEWEST_SHARE = 0.25
#: Most room, in characters, for the key facts in the elision marker of a text result.
_TEXT_NOTE_CHARS = 320
#: Shares of the room tried for the newest result's group when the turns after it are
#: left out of the view (the rest goes to the newest turns).
_PIN_SHARES = (1 / 3, 1 / 2, 3 / 4)


@dataclass(frozen=True)
class Context:
    """What to send to the model, and how it was made.

    ``omitted`` live messages were left out of this view to honour the budget (the oldest,
    and — when the newest tool result is kept in view ahead of a chat too long to show —
    the turns between that result and the newest ones); they are still stored and will be
    folded. ``omitted_seqs`` is the first and the last seq left out. ``elided`` lists the seqs of
    messages shown cut (head + tail, with a marker) because the newest part of the
    conversation did not fit whole; ``truncated`` is true when any was. ``masked`` older
    tool results are shown as stand-ins (observation masking). ``bridged`` is true when a
    :data:`BRIDGE_TEXT` user turn was put before a verbatim part that opened with the
    assistant after earlier turns were folded or omitted. ``recalled`` lists the seqs of
    folded messages shown in the recalled block (:mod:`contextfold.recall`).
    """

    messages: Sequence[Message]  # a tuple, or a read-only MessageView that acts as one
    tokens: int
    budget: int | None
    summary_included: bool
    live_count: int
    omitted: int = 0
    omitted_seqs: tuple[int, int] | None = None
    truncated: bool = False
    bridged: bool = False
    elided: tuple[int, ...] = ()
    masked: int = 0
    recalled: tuple[int, ...] = ()
    #: the rolling summary this context was built with (None before the first fold)
    summary: Summary | None = field(default=None, compare=False, repr=False)

    def to_openai(self) -> list[dict[str, Any]]:
        """Provider-ready OpenAI chat-completions dicts."""
        return [m.to_openai() for m in self.messages]

    def __len__(self) -> int:
        return len(self.messages)


def _new_context(**fields: Any) -> Context:
    """``Context(**fields)`` minus a setattr per field (made every turn; no __post_init__)."""
    ctx = object.__new__(Context)
    ctx.__dict__.update(fields)
    return ctx


def build_context(
    *,
    counter: TokenCounter,
    live: Sequence[StoredMessage],
    summary_text: str | None,
    summary_tokens: int = 0,
    system: str | None = None,
    budget: int | None = None,
    reserved_tokens: int = 0,
    masking: Masking | None = None,
) -> Context:
    """Assemble the context. ``reserved_tokens`` is what tool schemas cost; ``budget``
    None means no limit; ``masking`` shows older tool results as stand-ins. (One-off:
    an agent loop keeps a :class:`LiveView` per session so each call costs O(1).)"""
    view = LiveView(counter, masking)
    view.sync(live)
    return view.build(
        summary_text=summary_text,
        summary_tokens=summary_tokens,
        system=system,
        budget=budget,
        reserved_tokens=reserved_tokens,
    )


_BRIDGE_TOKENS: dict[int, tuple[TokenCounter, int]] = {}


def bridge_turn_tokens(counter: TokenCounter) -> int:
    """The bridge turn's token count, once per counter."""
    hit = _BRIDGE_TOKENS.get(id(counter))
    if hit is None or hit[0] is not counter:
        hit = _BRIDGE_TOKENS[id(counter)] = (counter, count_message(counter, _BRIDGE))
    return hit[1]


class LiveView:
    """The incremental view of one session's live messages (see the module docstring).

    :meth:`sync` takes the live messages as the store returns them: when they extend the
    ones seen last time it only takes in the new ones (O(new)); anything else (a fold, a
    cleared or replaced session) rebuilds the state once, reusing the stand-ins already
    made. :meth:`build` then assembles a :class:`Context` for any budget with binary
    searches over running sums. A stand-in is made once per message and never changes.
    """

    def __init__(self, counter: TokenCounter, masking: Masking | None = None) -> None:
        self.counter = counter
        self.masking = masking
        #: seq -> (source message, shown message, its tokens): survives rebuilds
        self._forms: dict[int, tuple[Message, Message, int]] = {}
        #: seq -> (source, its values): for stand-ins and elision markers
        self._notes: dict[int, tuple[Message, ValueFacts]] = {}
        self._note_texts: dict[tuple[int, int], tuple[Message, str]] = {}
        self._cut_texts: dict[CutKey, tuple[str, int]] = {}  # cut texts, by share
        self._system: tuple[str, Message, int] | None = None
        self._reset()

    def _reset(self) -> None:
        self.items: list[StoredMessage] = []
        self._orig: list[Message] = []
        self._full = [0]  # running sums of the stored token counts
        self._cuts = [0]  # safe cuts (indices where no call is open)
        self._user_cuts: list[int] = []  # cuts where a user message starts
        self._group: list[int] = []  # index of the start of each item's tool-call group
        self._open: set[str] = set()
        self._calls: dict[str, ToolCall] = {}
        self._call_for: dict[int, ToolCall | None] = {}
        self._tools: list[int] = []  # maskable tool results
        self._last_tool = -1  # the newest tool result, maskable or not
        self._shown: list[Message] = []  # final (masked) forms of items[:len(_shown)]
        self._view = [0]  # running sums of the shown forms' tokens
        self._nmask = [0]  # running count of stand-ins among them

    # -- taking in messages ----------------------------------------------------------------

    def sync(self, live: Sequence[StoredMessage]) -> None:
        """Bring the view up to ``live`` (every live message, oldest first)."""
        n = len(self.items)
        if (
            n
            and len(live) >= n
            and live[0].seq == self.items[0].seq
            and live[n - 1].seq == self.items[-1].seq
            and (live[n - 1].message is self._orig[-1] or live[n - 1].message == self._orig[-1])
        ):
            for i in range(n, len(live)):
                self._push(live[i])
            return
        self._reset()
        first = live[0].seq if live else 0
        self._forms = {seq: f for seq, f in self._forms.items() if seq >= first}
        self._notes = {seq: n for seq, n in self._notes.items() if seq >= first}
        self._cut_texts.clear()
        for item in live:
            self._push(item)

    def _push(self, item: StoredMessage) -> None:
        i = len(self.items)
        msg = item.message
        self.items.append(item)
        self._orig.append(msg)
        self._full.append(self._full[-1] + item.tokens)
        self._group.append(self._cuts[-1])
        if msg.role == "user" and self._cuts[-1] == i:
            self._user_cuts.append(i)
        if msg.role == "tool" and msg.tool_call_id is not None:
            self._open.discard(msg.tool_call_id)
            call = self._calls.get(msg.tool_call_id)
            self._call_for[i] = call
            self._last_tool = i
            name = call.name if call is not None else msg.name
            if self.masking is not None and self.masking.maskable(name):
                self._tools.append(i)
        for c in msg.tool_calls:
            self._open.add(c.id)
            self._calls[c.id] = c
        if not self._open:
            self._cuts.append(i + 1)

    # -- masking ---------------------------------------------------------------------------

    def _boundary(self, over_budget: bool = True) -> int:
        """Items before this index are shown in their masked form (settled up to it)."""
        b = self._mask_end(over_budget)
        while len(self._shown) < b:
            self._settle(len(self._shown))
        return b

    def _mask_end(self, over_budget: bool = True) -> int:
        """:meth:`_boundary` without settling. Masking starts when the live messages exceed
        ``trigger_tokens``, or by default when the context would not fit its budget whole
        (``over_budget``)."""
        m = self.masking
        if m is None or (m.trigger_tokens is None and not over_budget):
            return 0
        if m.trigger_tokens is not None and self._full[-1] <= m.trigger_tokens:
            return 0
        if m.keep == 0:
            return self._cuts[-1]
        return self._group[self._tools[-m.keep]] if len(self._tools) > m.keep else 0

    def _settle(self, i: int) -> None:
        shown, tokens = self._form(i)
        msg = self.items[i].message
        self._shown.append(shown)
        self._view.append(self._view[-1] + tokens)
        self._nmask.append(self._nmask[-1] + (shown is not msg and msg.role == "tool"))

    def _form(self, i: int) -> tuple[Message, int]:
        """Item ``i`` as shown when masked, and its tokens (made once per message)."""
        item = self.items[i]
        msg = item.message
        m = self.masking
        assert m is not None
        if not (msg.role == "tool" or (msg.tool_calls and not m.keep_call_args)):
            return msg, item.tokens
        cached = self._forms.get(item.seq)
        if cached is not None and (cached[0] is msg or cached[0] == msg):
            return cached[1], cached[2]
        if msg.role == "tool":
            shown, tokens = masked_result(
                self.counter, item, self._call_for.get(i), m, lambda: self._facts(i))
        else:
            shown, tokens = mask_call(msg, m), item.tokens
            if shown is not msg:
                tokens = count_message(self.counter, shown)
        self._forms[item.seq] = (msg, shown, tokens)
        return shown, tokens

    def _sum(self, a: int, b: int) -> int:
        n = len(self.items)
        if a < b:
            return self._view[b] - self._view[a] + self._full[n] - self._full[b]
        return self._full[n] - self._full[a]

    def _body(self, a: int, b: int) -> list[Message]:
        """The shown messages from ``a`` (read-only: may be the view's own list)."""
        if a < b:
            return self._shown[a:b] + self._orig[b:]
        return self._orig[a:] if a else self._orig

    def _values(self, item: StoredMessage) -> ValueFacts:
        """A tool result's values (:func:`extract`), made once per message and only when
        needed (a stand-in or an elision marker), shared by both."""
        hit = self._notes.get(item.seq)
        if hit is None or hit[0] is not item.message:
            hit = self._notes[item.seq] = (item.message, extract(item.text, VIEW_SCAN_CHARS))
        return hit[1]

    def _shown_args(self, i: int) -> list[str]:
        """The argument values of the call item ``i`` answers that the view shows with it
        (its stand-in and marker need not repeat them)."""
        call = self._call_for.get(i)
        if call is None:
            return []
        values = call_values(call.arguments)
        if self.masking is not None and not self.masking.keep_call_args:
            shown = call_signature(call.name, call.arguments, 200)  # "Called as …"
            values = [v for v in values if v in shown]
        return values

    def _facts(self, i: int) -> tuple[list[str], bool]:
        """Item ``i``'s key facts for its stand-in, and its failure flag."""
        chars = self.masking.fact_chars if self.masking is not None else DEFAULT_FACT_CHARS
        values = self._values(self.items[i])
        return render(values.ranked(self._shown_args(i)), chars)[0], values.failed

    def _note(self, i: int, chars: int) -> str:
        """Item ``i``'s key facts within ``chars``, for its marker when it is elided (made
        once per message and size)."""
        item = self.items[i]
        if item.role != "tool":
            return ""
        if chars > _TEXT_NOTE_CHARS and item.text.lstrip()[:1] not in ("{", "["):
            chars = _TEXT_NOTE_CHARS  # a log or a file keeps its head and tail instead
        key = (item.seq, chars)
        hit = self._note_texts.get(key)
        if hit is None or hit[0] is not item.message:
            text = "; ".join(render(self._values(item).ranked(self._shown_args(i)), chars)[0])
            if len(self._note_texts) > 256:
                self._note_texts.clear()
            hit = self._note_texts[key] = (item.message, text)
        return hit[1]

    # -- assembling --------------------------------------------------------------------------

    def _head(self, system: str | None) -> tuple[list[Message], int]:
        if not system:
            return [], 0
        if self._system is None or self._system[0] != system:
            msg = Message(role="system", content=system)
            self._system = (system, msg, count_message(self.counter, msg))
        return [self._system[1]], self._system[2]

    def _first_fitting(self, room: int, b: int, hi: int) -> int | None:
        """The earliest safe cut among ``_cuts[:hi]`` from which the shown messages fit."""
        cuts = self._cuts
        if hi == 0 or self._sum(cuts[hi - 1], b) > room:
            return None
        lo, top = 0, hi - 1
        while lo < top:
            mid = (lo + top) // 2
            if self._sum(cuts[mid], b) <= room:
                top = mid
            else:
                lo = mid + 1
        return cuts[lo]

    def _prefer_user(self, a: int, limit: int) -> int:
        """Move a trimmed view's start forward to a user message if one starts a group at
        or before ``limit`` (Anthropic requires the first turn to be the user's)."""
        if a == 0 or self.items[a].role == "user":
            return a
        j = bisect_left(self._user_cuts, a)
        if j < len(self._user_cuts) and self._user_cuts[j] <= limit:
            return self._user_cuts[j]
        return a

    def build(
        self,
        *,
        summary_text: str | None,
        summary_tokens: int = 0,
        system: str | None = None,
        budget: int | None = None,
        reserved_tokens: int = 0,
    ) -> Context:
        """The context for the live messages last :meth:`sync`-ed."""
        counter = self.counter
        head, system_tokens = self._head(system)
        used = REPLY_PRIMING_TOKENS + reserved_tokens + system_tokens
        if budget is not None and used > budget:
            raise ConfigError(
                f"the system prompt and tools alone take {used} tokens, over the budget of "
                f"{budget}"
            )
        summary_msg = render_summary(summary_text) if summary_text else None
        if summary_msg is not None and summary_tokens <= 0:
            summary_tokens = count_message(counter, summary_msg)
        bridge_tokens = bridge_turn_tokens(counter)
        items = self.items
        n = len(items)

        def bridged(a: int) -> bool:
            while a < n and items[a].role == "system":
                a += 1
            return a < n and items[a].role == "assistant" and (summary_msg is not None or a > 0)

        b = 0
        if self.masking is not None:
            whole = used + (summary_tokens if summary_msg is not None else 0) + self._full[-1]
            whole += bridge_tokens if bridged(0) else 0
            b = self._boundary(budget is not None and whole > budget)

        def done(
            a: int,
            with_summary: bool,
            body: list[Message] | None,
            tokens: int,
            elided: Sequence[int] = (),
            gap: tuple[int, int] | None = None,
        ) -> Context:
            """The context showing ``body`` (items from ``a`` on, except ``gap``; None: all
            of them as shown, read in place)."""
            lead: tuple[Message, ...] = (*head, summary_msg) if (
                with_summary and summary_msg is not None) else tuple(head)
            bridge = bridged(a)
            if bridge:
                tokens += bridge_tokens
            messages = self._messages(lead, a, b, n, body, bridge)
            # left out: items ..a-1 and the gap g0..g1-1, counted (not listed: O(1) per call)
            g0, g1 = (max(gap[0], a), min(gap[1], n)) if gap is not None else (n, n)
            gap_len = max(0, g1 - g0)
            shown = [i for i in range(a, n) if not g0 <= i < g1] if elided else []
            return _new_context(
                messages=messages,
                tokens=used + (summary_tokens if with_summary else 0) + tokens,
                budget=budget,
                summary_included=with_summary,
                live_count=n,
                omitted=a + gap_len,
                omitted_seqs=(items[0 if a else g0].seq, items[g1 - 1 if gap_len else a - 1].seq)
                if a or gap_len else None,
                truncated=bool(elided),
                bridged=bridge,
                elided=tuple(items[shown[i]].seq for i in elided),
                masked=sum(self._nmask[min(hi, b)] - self._nmask[min(lo, b)]
                           for lo, hi in ((a, min(g0, n)), (g1, n)) if lo < hi) if b else 0,
            )

        whole = self._sum(0, b)
        has_summary = summary_msg is not None
        if budget is None or (
            used + (summary_tokens if has_summary else 0) + whole
            + (bridge_tokens if bridged(0) else 0) <= budget
        ):
            return done(0, has_summary, None, whole)
        if n == 0:
            return done(0, False, [], 0)

        # Over budget: keep the newest whole groups that fit (never fewer than the newest
        # tool result's group and everything after it), with the summary if it still fits;
        # else the summary with the newest part cut down (the summary is all the memory of
        # earlier turns, worth more than the middle of a huge result); only then without it.
        last_start = self._group[n - 1]
        required = last_start
        if self._last_tool >= 0:
            required = min(required, self._group[self._last_tool])
        hi = bisect_right(self._cuts, last_start)
        room_bare = budget - used
        options = (True, False) if has_summary else (False,)
        for with_summary in options:
            room = budget - used - (summary_tokens if with_summary else 0)
            for extra in (0, bridge_tokens):
                a = self._first_fitting(room - extra, b, hi)
                if a is None or a > required:
                    break
                a = self._prefer_user(a, required)
                tokens = self._sum(a, b)
                if tokens + (bridge_tokens if bridged(a) else 0) > room:
                    continue  # the bridge did not fit: try again leaving room for it
                return done(a, with_summary, None, tokens)
            if with_summary and room < room_bare * _MIN_NEWEST_SHARE:
                continue  # keeping the summary would leave the newest messages too little
            # Not even that fits: cut the largest texts in it (head + tail), in the view.
            fit = self._elided(required, b, room - (bridge_tokens if bridged(required) else 0))
            if fit is not None:
                return done(required, with_summary, fit[0], fit[2], fit[1])
            if last_start > required:
                # the newest result's group cut down, then the newest messages that fit
                # (the ones between them are left out of the view): the result stays
                pinned = self._pinned(required, b,
                                      room - (bridge_tokens if bridged(required) else 0))
                if pinned is not None:
                    body, cut, tokens, gap = pinned
                    return done(required, with_summary, body, tokens, cut, gap)
        if last_start > required:
            # last resort: the newest group alone, cut down
            for with_summary in options:
                room = budget - used - (summary_tokens if with_summary else 0)
                fit = self._elided(last_start, b,
                                   room - (bridge_tokens if bridged(last_start) else 0))
                if fit is not None:
                    return done(last_start, with_summary, fit[0], fit[2], fit[1])
        newest = items[-1]
        raise ValidationError(
            f"the newest message (seq {newest.seq}, {newest.tokens} tokens) cannot be shown "
            f"within the budget of {budget} tokens even cut down: its framing and tool calls "
            "alone are too large; raise max_tokens"
        )

    def _messages(self, lead: tuple[Message, ...], a: int, b: int, n: int,
                  body: list[Message] | None, bridge: bool) -> MessageView:
        """``lead`` then ``body`` (None: items ``a..n-1`` as shown, read in place from
        the lists this view only appends to — no per-turn copy), with the bridge turn
        before the first non-system message when ``bridge``."""
        if body is None and a >= b:
            if bridge and self._orig[a].role != "system":
                return MessageView((*lead, _BRIDGE), self._orig, a, n)
            if not bridge:
                return MessageView(lead, self._orig, a, n)
        if body is None:
            body = self._body(a, b)
        if bridge:
            k = next(i for i, m in enumerate(body) if m.role != "system")
            body = [*body[:k], _BRIDGE, *body[k:]]
        return MessageView(lead, body)

    def _pinned(self, g: int, b: int, room: int
                ) -> tuple[list[Message], list[int], int, tuple[int, int]] | None:
        """The tool-call group starting at ``g`` (the newest result's) within a third of
        ``room`` (half, three quarters if it cannot be cut that small), cut down if
        needed, followed by the newest whole groups that fit the rest (or the newest group
        cut down): (messages, indices cut, tokens, (start, end) of the messages left out
        between them); None if even that does not fit."""
        n = len(self.items)
        k = bisect_right(self._cuts, g)
        if k >= len(self._cuts) or self._cuts[k] > self._group[n - 1]:
            return None  # the group is still open, or nothing follows it
        end = self._cuts[k]  # the cut closing the group
        last_start = self._group[n - 1]
        group = self._sum_range(g, end, b)
        lo = bisect_left(self._cuts, end + 1)
        hi = bisect_right(self._cuts, last_start)
        for share in dict.fromkeys(min(group, int(room * f)) for f in _PIN_SHARES):
            part = self._elided(g, b, share, end) if group > share else (
                self._body(g, b)[: end - g], [], group)
            if part is None:
                continue
            rest = room - part[2]
            if lo < hi and self._sum(self._cuts[hi - 1], b) <= rest:
                top, bottom = lo, hi - 1  # the earliest cut after the gap the rest fits from
                while top < bottom:
                    mid = (top + bottom) // 2
                    if self._sum(self._cuts[mid], b) <= rest:
                        bottom = mid
                    else:
                        top = mid + 1
                c = self._prefer_user(self._cuts[top], last_start)
                return (part[0] + self._body(c, b), part[1], part[2] + self._sum(c, b),
                        (end, c))
            cut = self._elided(last_start, b, rest)
            if cut is not None:
                offset = len(part[0])
                return (part[0] + cut[0], part[1] + [offset + i for i in cut[1]],
                        part[2] + cut[2], (end, last_start))
        return None

    def _sum_range(self, a: int, c: int, b: int) -> int:
        """Tokens of items ``a..c-1`` as shown (masked below ``b``)."""
        return self._sum(a, b) - self._sum(c, b)

    def _elided(self, a: int, b: int, room: int, end: int | None = None
                ) -> tuple[list[Message], list[int], int] | None:
        """The messages from ``a`` (to ``end``) cut down (head + tail) to fit ``room``, or
        None."""
        items = self.items
        end = len(items) if end is None else end
        sizes = [
            (self._view[i + 1] - self._view[i]) if i < b else items[i].tokens
            for i in range(a, end)
        ]
        return elide(
            self.counter,
            self._body(a, b)[: end - a],
            [m.seq for m in items[a:end]],
            sizes,
            room,
            notes=lambda i, chars: self._note(a + i, chars),
            cache=self._cut_texts,
        )
