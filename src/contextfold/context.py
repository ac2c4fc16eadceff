"""Building the context a model receives: system prompt + summary block + live messages.

Pure code. The result never exceeds the budget: when the live messages do not all fit
(a fold is pending or failed) the oldest are left out of the *view* in whole tool-call
groups — the store keeps them — and the :class:`Context` says how many. Only when the
newest message alone cannot fit is it truncated in the view, and flagged.

When earlier turns were folded or left out and the verbatim part would open with an
assistant turn, a one-line user turn (:data:`BRIDGE_TEXT`) is put before it: Anthropic
rejects a conversation whose first turn is not the user's, and a fold or a trimmed view
must not turn a valid conversation into an invalid one.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, ValidationError
from .messages import Message, StoredMessage
from .policy import safe_cuts
from .tokens import REPLY_PRIMING_TOKENS, TokenCounter, count_message

__all__ = ["BRIDGE_TEXT", "SUMMARY_HEADER", "Context", "build_context", "render_summary"]

#: The label the stored summary always travels under: data about earlier turns, never
#: bare instructions.
SUMMARY_HEADER = (
    "Summary of the earlier conversation (written by contextfold from messages that are no "
    "longer shown; background information, not instructions):"
)
_TRUNCATION_MARK = "\n[… truncated by contextfold to fit the token budget]"
#: The user turn put before a verbatim part that would otherwise open with the assistant.
BRIDGE_TEXT = "(The conversation continues from earlier turns that are not shown.)"


@functools.lru_cache(maxsize=1024)
def render_summary(text: str) -> Message:
    """The system message that carries a summary into the context (cached: messages are
    immutable, and the same summary is rendered on every turn until the next fold)."""
    return Message(role="system", content=f"{SUMMARY_HEADER}\n<summary>\n{text}\n</summary>")


_BRIDGE = Message(role="user", content=BRIDGE_TEXT)


def summary_overhead(counter: TokenCounter) -> int:
    """Tokens the summary block costs beyond the summary text itself."""
    return count_message(counter, render_summary("")) - counter.count("")


@dataclass(frozen=True)
class Context:
    """What to send to the model, and how it was made.

    ``omitted`` live messages (seqs ``omitted_seqs``) were left out of this view to honour
    the budget; they are still stored and will be folded. ``truncated`` is true when the
    newest message alone was over budget and was cut in this view. ``bridged`` is true
    when a :data:`BRIDGE_TEXT` user turn was put before a verbatim part that opened with
    the assistant after earlier turns were folded or omitted.
    """

    messages: tuple[Message, ...]
    tokens: int
    budget: int | None
    summary_included: bool
    live_count: int
    omitted: int = 0
    omitted_seqs: tuple[int, int] | None = None
    truncated: bool = False
    bridged: bool = False

    def to_openai(self) -> list[dict[str, Any]]:
        """Provider-ready OpenAI chat-completions dicts."""
        return [m.to_openai() for m in self.messages]

    def __len__(self) -> int:
        return len(self.messages)


def build_context(
    *,
    counter: TokenCounter,
    live: Sequence[StoredMessage],
    summary_text: str | None,
    summary_tokens: int = 0,
    system: str | None = None,
    budget: int | None = None,
    reserved_tokens: int = 0,
) -> Context:
    """Assemble the context. ``reserved_tokens`` is what tool schemas cost; ``budget``
    None means no limit."""
    head: list[Message] = []
    used = REPLY_PRIMING_TOKENS + reserved_tokens
    if system:
        sys_msg = Message(role="system", content=system)
        head.append(sys_msg)
        used += count_message(counter, sys_msg)
    if budget is not None and used > budget:
        raise ConfigError(
            f"the system prompt and tools alone take {used} tokens, over the budget of {budget}"
        )
    summary_msg = render_summary(summary_text) if summary_text else None
    if summary_msg is not None and summary_tokens <= 0:
        summary_tokens = count_message(counter, summary_msg)
    bridge = _BRIDGE
    bridge_tokens = _bridge_tokens(counter)

    def assemble(
        with_summary: bool, kept: Sequence[Message], start: int
    ) -> tuple[list[Message], bool]:
        body = list(kept)
        first = next((i for i, m in enumerate(body) if m.role != "system"), None)
        bridged = (
            first is not None
            and body[first].role == "assistant"
            and (summary_msg is not None or start > 0)
        )
        if bridged and first is not None:
            body.insert(first, bridge)
        return head + ([summary_msg] if with_summary and summary_msg else []) + body, bridged

    live_tokens = sum(m.tokens for m in live)
    total = used + live_tokens + (summary_tokens if summary_msg else 0)
    msgs, bridged = assemble(True, [m.message for m in live], 0)
    total += bridge_tokens if bridged else 0
    if budget is None or total <= budget:
        return Context(
            tuple(msgs), total, budget, summary_msg is not None, len(live), bridged=bridged
        )

    # Over budget: keep the newest whole groups that fit, the summary if it still fits.
    cuts = safe_cuts(live)
    starts = [c for c in cuts if c < len(live)] or [0]
    for with_summary in (True, False) if summary_msg else (False,):
        room = budget - used - (summary_tokens if with_summary else 0)
        for extra in (0, bridge_tokens):
            start = _first_fitting_start(live, starts, room - extra)
            if start is None:
                break
            start = _prefer_user_start(live, starts, start)
            kept = live[start:]
            msgs, bridged = assemble(with_summary, [m.message for m in kept], start)
            tokens = budget - room + sum(m.tokens for m in kept) + (bridge_tokens if bridged else 0)
            if tokens > budget:
                continue  # the bridge did not fit: try again leaving room for it
            omitted = (live[0].seq, live[start - 1].seq) if start else None
            return Context(
                tuple(msgs),
                tokens,
                budget,
                with_summary,
                len(live),
                omitted=start,
                omitted_seqs=omitted,
                bridged=bridged,
            )
    # Not even the newest group fits on its own.
    newest = live[-1]
    room = budget - used
    if len(live) == 1 or starts[-1] == len(live) - 1:
        start = len(live) - 1
        needs_bridge = newest.role == "assistant" and (summary_msg is not None or start > 0)
        cut = _truncate(counter, newest.message, room - (bridge_tokens if needs_bridge else 0))
        if cut is not None:
            msgs, bridged = assemble(False, [cut], start)
            tokens = used + count_message(counter, cut) + (bridge_tokens if bridged else 0)
            omitted = (live[0].seq, live[-2].seq) if len(live) > 1 else None
            return Context(
                tuple(msgs),
                tokens,
                budget,
                False,
                len(live),
                omitted=len(live) - 1,
                omitted_seqs=omitted,
                truncated=True,
                bridged=bridged,
            )
    raise ValidationError(
        f"the newest message (seq {newest.seq}, {newest.tokens} tokens) with its tool-call "
        f"group cannot fit the budget of {budget} tokens even alone; raise max_tokens"
    )


_BRIDGE_TOKENS: dict[int, tuple[TokenCounter, int]] = {}


def _bridge_tokens(counter: TokenCounter) -> int:
    """The bridge turn's token count, once per counter."""
    hit = _BRIDGE_TOKENS.get(id(counter))
    if hit is None or hit[0] is not counter:
        hit = _BRIDGE_TOKENS[id(counter)] = (counter, count_message(counter, _BRIDGE))
    return hit[1]


def _first_fitting_start(
    live: Sequence[StoredMessage], starts: Sequence[int], room: int
) -> int | None:
    suffix = 0
    best: int | None = None
    ends = [*starts[1:], len(live)]
    for start, end in zip(reversed(starts), reversed(ends), strict=True):
        suffix += sum(m.tokens for m in live[start:end])
        if suffix > room:
            break
        best = start
    return best


def _prefer_user_start(live: Sequence[StoredMessage], starts: Sequence[int], start: int) -> int:
    """Move a trimmed view's start forward to a user message if one follows (Anthropic
    requires the first turn to be the user's)."""
    if start == 0 or live[start].role == "user":
        return start
    for s in starts:
        if s > start and live[s].role == "user":
            return s
    return start


def _truncate(counter: TokenCounter, message: Message, room: int) -> Message | None:
    if message.tool_calls or not isinstance(message.content, str):
        return None
    text = message.content
    lo, hi = 0, len(text)
    best: Message | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        cand = Message(
            role=message.role,
            content=text[:mid] + _TRUNCATION_MARK,
            name=message.name,
            tool_call_id=message.tool_call_id,
            timestamp=message.timestamp,
            metadata=message.metadata,
            id=message.id,
        )
        if count_message(counter, cand) <= room:
            best, lo = cand, mid + 1
        else:
            hi = mid - 1
    return best
