"""The message-sequence rules OpenAI and Anthropic enforce, as a checker you can run on
any context before sending it (or in your tests, on every context your app builds).

Both providers reject a request with HTTP 400 when a tool result is not answering a call
of the turn right before it, when a call is left unanswered before the conversation moves
on, and (Anthropic) when the turns do not alternate starting with the user. These rules
are easy to break by trimming or summarizing a history, which is what a memory layer
does; contextfold's own reliability suite runs this checker on every context the engine
builds.

The Anthropic rules are checked on the conversion a Messages-API adapter makes:
leading system messages become the ``system`` parameter, tool results become
``tool_result`` blocks in a user turn, and consecutive messages of one role are merged
into one turn. A system message anywhere else cannot be converted and is reported.

Trailing tool calls with no results yet (a tool is still running) are allowed by default;
pass ``allow_pending=False`` to require every call to be answered, as both APIs do for the
request you actually send.

::

    from contextfold.testing.provider_rules import check_provider_rules
    problems = check_provider_rules(memory.context("s"))
    assert not problems, problems
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ConfigError
from ..messages import MediaPart, Message, coerce_message

__all__ = [
    "Provider",
    "Violation",
    "anthropic_violations",
    "assert_provider_rules",
    "check_provider_rules",
    "openai_violations",
]

Provider = Literal["openai", "anthropic"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic")


@dataclass(frozen=True)
class Violation:
    """One broken rule: which provider, which message (index in the given sequence;
    for Anthropic the index of the first message of the offending turn), the rule's
    name, and a sentence saying what is wrong."""

    provider: Provider
    index: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.provider}: message {self.index}: {self.rule}: {self.detail}"


def _messages(context: object) -> list[Message]:
    """Accept a ``Context``, or a sequence of ``Message`` objects / OpenAI dicts."""
    inner = getattr(context, "messages", None)
    items = inner if isinstance(inner, Sequence) and not isinstance(context, Sequence) else context
    if not isinstance(items, Iterable) or isinstance(items, (str, bytes, Mapping)):
        raise TypeError(
            f"expected a Context or a sequence of messages, got {type(context).__name__}")
    return [coerce_message(m) for m in items]


def openai_violations(context: object, *, allow_pending: bool = True) -> list[Violation]:
    """The rules of OpenAI chat completions.

    * at least one message;
    * a ``tool`` message answers a call of the nearest assistant message with
      ``tool_calls``, and only tool messages come between them (``orphan_tool_result``);
    * each call is answered once (``duplicate_tool_result``) and before any non-tool
      message (``unanswered_tool_call``); at the end of the context only with
      ``allow_pending`` (``pending_tool_call``);
    * tool call ids are unique in the context (``duplicate_tool_call_id``).
    """
    msgs = _messages(context)
    out: list[Violation] = []

    def bad(i: int, rule: str, detail: str) -> None:
        out.append(Violation("openai", i, rule, detail))

    if not msgs:
        bad(0, "empty", "a request needs at least one message")
    open_calls: dict[str, int] = {}  # call id -> index of the assistant message
    answered: set[str] = set()
    seen_ids: set[str] = set()
    for i, msg in enumerate(msgs):
        if msg.role == "tool":
            cid = msg.tool_call_id or ""
            if cid in open_calls:
                del open_calls[cid]
                answered.add(cid)
            elif cid in answered:
                bad(i, "duplicate_tool_result", f"call {cid!r} was already answered")
            else:
                bad(i, "orphan_tool_result",
                    f"tool result for {cid!r} follows no assistant message that made that call")
            continue
        for cid, at in open_calls.items():
            bad(at, "unanswered_tool_call",
                f"call {cid!r} has no tool result before the {msg.role} message {i}")
        open_calls = {}
        answered = set()
        for call in msg.tool_calls:
            if call.id in seen_ids:
                bad(i, "duplicate_tool_call_id", f"call id {call.id!r} is used twice")
            seen_ids.add(call.id)
            open_calls[call.id] = i
    if not allow_pending:
        for cid, at in open_calls.items():
            bad(at, "pending_tool_call", f"call {cid!r} has no tool result yet")
    return out


@dataclass
class _Turn:
    role: Literal["user", "assistant"]
    first: int
    blocks: list[tuple[str, str]] = field(default_factory=list)  # (kind, value)


def _anthropic_turns(msgs: Sequence[Message], out: list[Violation]) -> list[_Turn]:
    turns: list[_Turn] = []
    seen_non_system = False
    for i, msg in enumerate(msgs):
        if msg.role == "system":
            if seen_non_system:
                out.append(Violation(
                    "anthropic", i, "system_placement",
                    "a system message after the conversation started cannot become part of "
                    "the system parameter"))
            continue
        seen_non_system = True
        role: Literal["user", "assistant"] = "assistant" if msg.role == "assistant" else "user"
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role, i))
        blocks = turns[-1].blocks
        if msg.role == "tool":
            blocks.append(("tool_result", msg.tool_call_id or ""))
            continue
        parts = (msg.content,) if isinstance(msg.content, str) else msg.content
        for part in parts:
            if isinstance(part, MediaPart):
                blocks.append((part.kind, ""))
            else:
                text = part if isinstance(part, str) else part.text
                if text.strip():
                    blocks.append(("text", text))
        blocks.extend(("tool_use", c.id) for c in msg.tool_calls)
    return turns


def anthropic_violations(context: object, *, allow_pending: bool = True) -> list[Violation]:
    """The rules of the Anthropic Messages API, on the converted turns.

    * system messages only before the conversation starts (``system_placement``);
    * at least one non-system message (``empty``), and the first turn is the user's
      (``first_turn_not_user``);
    * every ``tool_use`` is answered by a ``tool_result`` in the very next turn
      (``unanswered_tool_call``; with ``allow_pending`` calls may stay unanswered when
      nothing but their sibling results follows), and every ``tool_result`` answers a
      ``tool_use`` of the turn right before it, once (``orphan_tool_result``);
    * in a user turn the tool results come before any other block
      (``tool_result_not_first``);
    * every turn but a final assistant one has non-blank content (``empty_content``).
    """
    msgs = _messages(context)
    out: list[Violation] = []
    turns = _anthropic_turns(msgs, out)

    def bad(i: int, rule: str, detail: str) -> None:
        out.append(Violation("anthropic", i, rule, detail))

    if not turns:
        bad(0, "empty", "a request needs at least one user or assistant message")
        return out
    if turns[0].role != "user":
        bad(turns[0].first, "first_turn_not_user",
            f"the first turn is the {turns[0].role}'s; Anthropic requires the user's")
    for n, turn in enumerate(turns):
        last = n == len(turns) - 1
        if not turn.blocks and not (last and turn.role == "assistant"):
            bad(turn.first, "empty_content", f"the {turn.role} turn has no non-blank content")
        uses = [v for k, v in turn.blocks if k == "tool_use"]
        if uses:
            nxt = turns[n + 1] if not last else None
            results = {v for k, v in nxt.blocks if k == "tool_result"} if nxt else set()
            # still running: nothing came after the results that did arrive
            waiting = nxt is None or (
                n + 1 == len(turns) - 1 and all(k == "tool_result" for k, _ in nxt.blocks))
            for cid in uses:
                if cid not in results and not (waiting and allow_pending):
                    bad(turn.first, "unanswered_tool_call",
                        f"tool_use {cid!r} has no tool_result in the next turn")
        if turn.role == "user":
            prev_uses = {v for k, v in turns[n - 1].blocks if k == "tool_use"} if n else set()
            seen: set[str] = set()
            for k, v in turn.blocks:
                if k != "tool_result":
                    continue
                if v not in prev_uses or v in seen:
                    bad(turn.first, "orphan_tool_result",
                        f"tool_result for {v!r} answers no tool_use of the previous turn")
                seen.add(v)
            kinds = [k for k, _ in turn.blocks]
            if "tool_result" in kinds:
                last_result = max(j for j, k in enumerate(kinds) if k == "tool_result")
                if any(k != "tool_result" for k in kinds[:last_result]):
                    bad(turn.first, "tool_result_not_first",
                        "tool_result blocks must come before other content in the user turn")
    return out


def check_provider_rules(
    context: object,
    providers: Iterable[Provider] = PROVIDERS,
    *,
    allow_pending: bool = True,
) -> list[Violation]:
    """Every violation of the given providers' rules (empty list: the context is valid).

    ``context`` is a ``Context`` or a sequence of ``Message`` objects or OpenAI dicts.
    """
    checks: dict[Provider, Any] = {"openai": openai_violations,
                                   "anthropic": anthropic_violations}
    out: list[Violation] = []
    for name in providers:
        if name not in checks:
            raise ConfigError(f"unknown provider {name!r}; expected one of {PROVIDERS}")
        out.extend(checks[name](context, allow_pending=allow_pending))
    return out


def assert_provider_rules(
    context: object,
    providers: Iterable[Provider] = PROVIDERS,
    *,
    allow_pending: bool = True,
) -> None:
    """Raise ``AssertionError`` listing every violation, if there is any."""
    problems = check_provider_rules(context, providers, allow_pending=allow_pending)
    if problems:
        raise AssertionError("provider rules broken:\n" + "\n".join(map(str, problems)))
