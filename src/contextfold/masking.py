"""Observation masking: older tool results shown as compact stand-ins in the view.

An agent's tool results are large and mostly stale one call later, while the values the
next call needs (ids, statuses, amounts, the last error) are small. With :class:`Masking`
on, every tool result older than the newest ``keep`` is shown in the *view* as a stand-in:
the tool's name, the result's key facts (:func:`~contextfold.summarizers.agent_state.key_facts`)
and the seq under which the full result is stored. The store keeps every message whole.

Masking is a pure function of (live messages, options), decided in whole tool-call groups
(a parallel batch is masked together), and a stand-in depends only on its own message: it
is made once and is byte-identical on every later turn, so a provider's prompt cache keeps
hitting. Folding runs only when masking is not enough (the engine gives the policy the
masked size of the live messages).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .errors import ConfigError
from .messages import Message, StoredMessage, ToolCall
from .summarizers.agent_state import DEFAULT_FACT_CHARS, call_signature, facts_and_failure
from .tokens import (
    TiktokenCounter,
    TokenCounter,
    count_message,
    count_repeated,
    framing_tokens,
)

__all__ = ["Masking", "mask_call", "masked_result", "stand_in", "stand_in_head"]

#: The first words of every stand-in (tests and tools can recognise one).
STAND_IN_PREFIX = "[contextfold: older tool result, shown as key facts"
#: A stand-in head up to its seq (then `` {seq}] {name}:{called}``).
_HEAD_START = f"{STAND_IN_PREFIX}; the full result is stored as seq"


@dataclass(frozen=True)
class Masking:
    """Options of observation masking (the names follow LangChain's ``ClearToolUsesEdit``
    where one exists).

    ``keep``: the newest tool results shown verbatim (default 3); older ones become
    stand-ins. ``exclude_tools``: tool names never masked. ``keep_call_args``: keep a masked
    call's arguments in the assistant message (default); ``False`` shows them as ``{}``
    and puts the call's key arguments in the stand-in instead. ``trigger_tokens``: mask
    only while the live messages hold more than this many tokens (``0``: always); the
    default ``None`` masks only when the context would not fit its budget whole, so a
    model with room to spare sees every result verbatim.
    ``fact_chars``: room for a stand-in's key facts, in characters. A result whose stand-in
    would not be at most three quarters of it is shown verbatim.
    """

    keep: int = 3
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    keep_call_args: bool = True
    trigger_tokens: int | None = None
    fact_chars: int = DEFAULT_FACT_CHARS

    def __post_init__(self) -> None:
        if isinstance(self.keep, bool) or not isinstance(self.keep, int) or self.keep < 0:
            raise ConfigError(f"keep must be an int >= 0, got {self.keep!r}")
        tools = self.exclude_tools
        if isinstance(tools, str) or not isinstance(tools, Iterable):
            raise ConfigError(f"exclude_tools must be a collection of names, got {tools!r}")
        object.__setattr__(self, "exclude_tools", frozenset(tools))
        trig = self.trigger_tokens
        if trig is not None and (isinstance(trig, bool) or not isinstance(trig, int) or trig < 0):
            raise ConfigError(f"trigger_tokens must be an int >= 0 or None, got {trig!r}")
        fc = self.fact_chars
        if isinstance(fc, bool) or not isinstance(fc, int) or fc < 40:
            raise ConfigError(f"fact_chars must be an int >= 40, got {fc!r}")

    def maskable(self, tool_name: str | None) -> bool:
        return tool_name not in self.exclude_tools


def stand_in_head(message: Message, seq: int, call: ToolCall | None, masking: Masking) -> str:
    """The fixed start of ``message``'s stand-in: everything before its failure note and
    key facts (which :func:`stand_in` appends after it, starting with a space)."""
    name = call.name if call is not None else (message.name or "tool")
    called = ""
    if call is not None and not masking.keep_call_args:
        called = f" Called as {call_signature(call.name, call.arguments, 200)}."
    return f"{_HEAD_START} {seq}] {name}:{called}"


def _head_end(head: str, seq: int) -> str:
    """The part of ``head`` after its seq (``] {name}:{called}``)."""
    return head[len(_HEAD_START) + 1 + len(str(seq)):]


def head_tokens(counter: TokenCounter, head: str, seq: int) -> int:
    """``counter.count(head)`` for a :func:`split_counter`, by parts: the fixed start
    (counted once), then `` {seq}`` — a one-token space and one token per group of up to
    three digits — and the rest from ``]`` on (counted once per tool name).

    Exact for both tiktoken encodings: their pre-tokenisation ends a piece after the
    start's last letter, makes a lone space before a digit a piece of its own, cuts a
    digit run in groups of at most three, and starts a fresh piece at ``]``; every 1-3
    digit string is one token; BPE merges only within a piece (tested against counting
    the head whole, ``tests/test_masking_cost.py``)."""
    if seq < 0:
        return counter.count(head)
    digits = len(str(seq))
    return (count_repeated(counter, _HEAD_START) + 1 + (digits + 2) // 3
            + count_repeated(counter, _head_end(head, seq)))


def stand_in(message: Message, seq: int, call: ToolCall | None, masking: Masking,
             facts: tuple[list[str], bool] | None = None, head: str | None = None) -> Message:
    """The stand-in shown for the tool result ``message`` (stored as ``seq``), answering
    the same call. Depends only on its arguments, so it never changes. ``facts``: the
    result's :func:`facts_and_failure` at ``masking.fact_chars``, if already made;
    ``head``: its :func:`stand_in_head`, if already made."""
    if head is None:
        head = stand_in_head(message, seq, call, masking)
    found, failed = facts or facts_and_failure(message.text, masking.fact_chars)
    text = head + stand_in_tail(found, failed)
    return Message(
        role="tool",
        content=text,
        name=message.name,
        tool_call_id=message.tool_call_id,
        timestamp=message.timestamp,
        id=message.id,
    )


def stand_in_tail(found: list[str], failed: bool) -> str:
    """The end of a stand-in after its head: the failure note and the key facts (never
    empty, starts with a space)."""
    status = " It reported a failure." if failed else ""
    return f"{status} {'; '.join(found) or 'no key facts'}"


def split_counter(counter: TokenCounter) -> bool:
    """Whether ``counter`` counts a stand-in exactly as its head's count plus its tail's.

    True for the two tiktoken encodings: a head ends with ``:`` or ``.`` and a tail starts
    with a space, and both encodings' pre-tokenisation patterns end a piece at such a
    boundary whatever follows (no pattern joins a punctuation run with a following space,
    none looks behind), and BPE merges only within a piece. Tested on random heads and
    tails (``tests/test_masking_cost.py``). Other counters are counted whole."""
    return isinstance(counter, TiktokenCounter)


def masked_result(counter: TokenCounter, item: StoredMessage, call: ToolCall | None,
                  masking: Masking, facts: Callable[[], tuple[list[str], bool]]
                  ) -> tuple[Message, int]:
    """The stored tool result ``item`` as shown when masked, and its tokens: its stand-in,
    or the result itself when not maskable or when the stand-in would not be at most three
    quarters of it.
    ``facts``: makes the result's key facts (:func:`facts_and_failure`).

    With a tiktoken counter a stand-in costs its framing + its head's tokens + its tail's
    (:func:`split_counter`), and a tail is at least one token: a result whose stand-in's
    head alone is too large gets no key facts made (the costly part), with the outcome it
    would have had."""
    msg = item.message
    if not masking.maskable(call.name if call is not None else msg.name):
        return msg, item.tokens
    head = stand_in_head(msg, item.seq, call, masking)
    if split_counter(counter):
        low = framing_tokens(counter, msg) + head_tokens(counter, head, item.seq)
        if not _saves_enough(low + 1, item.tokens):
            return msg, item.tokens
        found, failed = facts()
        tokens = low + counter.count(stand_in_tail(found, failed))
        shown = stand_in(msg, item.seq, call, masking, (found, failed), head)
    else:
        shown = stand_in(msg, item.seq, call, masking, facts(), head)
        tokens = count_message(counter, shown)
    if not _saves_enough(tokens, item.tokens):
        return msg, item.tokens
    return shown, tokens


def _saves_enough(stand_in_tokens: int, result_tokens: int) -> bool:
    """A stand-in replaces a result only when it is at most three quarters of it: one
    barely smaller would save a few tokens and lose the result's own text."""
    return stand_in_tokens * 4 <= result_tokens * 3


def mask_call(message: Message, masking: Masking) -> Message:
    """The assistant ``message`` with the arguments of its maskable calls shown as ``{}``
    (only with ``keep_call_args=False``; otherwise ``message`` itself)."""
    if masking.keep_call_args or not message.tool_calls:
        return message
    calls = tuple(
        ToolCall(c.id, c.name, "{}") if masking.maskable(c.name) else c
        for c in message.tool_calls
    )
    if calls == message.tool_calls:
        return message
    return Message(
        role="assistant",
        content=message.content,
        name=message.name,
        tool_calls=calls,
        timestamp=message.timestamp,
        metadata=message.metadata,
        id=message.id,
    )
