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

from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import ConfigError
from .messages import Message, ToolCall
from .summarizers.agent_state import DEFAULT_FACT_CHARS, call_signature, facts_and_failure

__all__ = ["Masking", "mask_call", "stand_in"]

#: The first words of every stand-in (tests and tools can recognise one).
STAND_IN_PREFIX = "[contextfold: older tool result, shown as key facts"


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
    would not be smaller than itself is shown verbatim.
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


def stand_in(message: Message, seq: int, call: ToolCall | None, masking: Masking,
             facts: tuple[list[str], bool] | None = None) -> Message:
    """The stand-in shown for the tool result ``message`` (stored as ``seq``), answering
    the same call. Depends only on its arguments, so it never changes. ``facts``: the
    result's :func:`facts_and_failure` at ``masking.fact_chars``, if already made."""
    name = call.name if call is not None else (message.name or "tool")
    found, failed = facts or facts_and_failure(message.text, masking.fact_chars)
    text_facts = "; ".join(found) or "no key facts"
    status = " It reported a failure." if failed else ""
    called = ""
    if call is not None and not masking.keep_call_args:
        called = f" Called as {call_signature(call.name, call.arguments, 200)}."
    text = (
        f"{STAND_IN_PREFIX}; the full result is stored as seq {seq}] "
        f"{name}:{called}{status} {text_facts}"
    )
    return Message(
        role="tool",
        content=text,
        name=message.name,
        tool_call_id=message.tool_call_id,
        timestamp=message.timestamp,
        id=message.id,
    )


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
