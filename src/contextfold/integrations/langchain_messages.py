"""LangChain messages ↔ contextfold messages (shared by the LangChain middleware and the
LangGraph helper). Needs ``langchain-core`` (the ``langchain`` extra).

To contextfold: ``HumanMessage`` → user, ``AIMessage`` → assistant with its ``tool_calls``
(arguments as JSON), ``ToolMessage`` → tool (an error status is kept in metadata),
``SystemMessage`` → system; text and image blocks are kept, provider blocks that only
repeat the tool calls or carry reasoning (``tool_use``, ``thinking``, ``reasoning``) are
not stored. The message id is the LangChain id (LangGraph's ``add_messages`` gives every
message one); a message without one gets an id derived from its content and position.

Back to LangChain: the framework's own message object is reused whenever the context shows
it unchanged (so provider metadata, content blocks and ids survive); a message the view
changed or that exists only in the store (after a restart or a trimmed state) is rebuilt.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolMessage,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_extra

    raise missing_extra("LangChain", "langchain", exc) from exc

from ..errors import ValidationError
from ..messages import MediaPart, Message, TextPart, ToolCall
from .bridge import stable_id

__all__ = ["LangChainView", "from_langchain", "message_id", "system_message", "to_langchain"]

_MEDIA = {"image_url": "image", "image": "image", "input_image": "image", "file": "file",
          "input_audio": "audio", "audio": "audio"}
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
_CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant",
               "system": "system", "developer": "system", "tool": "tool"}


def message_id(message: BaseMessage, position: int) -> str:
    """The message's LangChain id, or one derived from its content and position."""
    if message.id:
        return str(message.id)
    calls = [(c.get("id"), c.get("name"), c.get("args")) for c in _tool_calls(message)]
    return stable_id("lc", position, message.type, message.content, calls,
                     getattr(message, "tool_call_id", None))


def _tool_calls(message: BaseMessage) -> list[Mapping[str, Any]]:
    # only AI messages carry tool calls (a getattr on the others is a slow pydantic miss)
    return list(message.tool_calls) if isinstance(message, AIMessage) else []


def _content(content: str | list[str | dict[str, Any]]) -> str | tuple[TextPart | MediaPart, ...]:
    if isinstance(content, str):
        return content
    parts: list[TextPart | MediaPart] = []
    for block in content:
        if isinstance(block, str):
            parts.append(TextPart(block))
        elif isinstance(block, Mapping):
            kind = block.get("type")
            if kind in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
                parts.append(TextPart(block["text"]))
            elif isinstance(kind, str) and kind in _MEDIA:
                parts.append(MediaPart(_MEDIA[kind], dict(block)))  # type: ignore[arg-type]
            # tool_use / thinking / reasoning blocks: carried by tool_calls or not history
    if all(isinstance(p, TextPart) for p in parts):
        return "\n".join(p.text for p in parts if isinstance(p, TextPart))
    return tuple(parts)


def from_langchain(message: BaseMessage, position: int = 0) -> Message | None:
    """One LangChain message as a contextfold message (None for ``RemoveMessage``).
    Raises ``ValidationError`` for a message contextfold cannot store."""
    if isinstance(message, RemoveMessage):
        return None
    if isinstance(message, ChatMessage):
        role = _CHAT_ROLES.get(message.role)
    else:
        role = _ROLES.get(message.type)
    if role is None:
        raise ValidationError(f"cannot store a LangChain {type(message).__name__} "
                              f"(type {message.type!r}) in contextfold")
    metadata: dict[str, Any] = {}
    calls: tuple[ToolCall, ...] = ()
    if isinstance(message, AIMessage):
        calls = tuple(
            ToolCall(id=str(c.get("id") or stable_id("call", message_id(message, position), i)),
                     name=str(c["name"]),
                     arguments=json.dumps(c.get("args") or {}, ensure_ascii=False))
            for i, c in enumerate(_tool_calls(message)))
    tool_call_id = None
    if isinstance(message, ToolMessage):
        tool_call_id = message.tool_call_id
        if message.status == "error":
            metadata["lc_status"] = "error"
    return Message(
        role=role,  # type: ignore[arg-type]
        content=_content(message.content),
        name=message.name or None,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        metadata=metadata,
        id=message_id(message, position),
    )


def _lc_content(message: Message) -> str | list[str | dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    return [{"type": "text", "text": p.text} if isinstance(p, TextPart) else dict(p.data)
            for p in message.content]


def _rebuild(message: Message) -> BaseMessage:
    content = _lc_content(message)
    kwargs: dict[str, Any] = {"id": message.id} if message.id else {}
    if message.name:
        kwargs["name"] = message.name
    if message.role == "assistant":
        calls = []
        for c in message.tool_calls:
            try:
                args = json.loads(c.arguments) if c.arguments else {}
            except ValueError:
                args = {"arguments": c.arguments}
            calls.append({"name": c.name, "args": args if isinstance(args, dict) else
                          {"arguments": args}, "id": c.id, "type": "tool_call"})
        return AIMessage(content=content, tool_calls=calls, **kwargs)
    if message.role == "tool":
        status = "error" if message.metadata.get("lc_status") == "error" else "success"
        return ToolMessage(content=content, tool_call_id=message.tool_call_id or "",
                           status=status, **kwargs)
    if message.role == "system":
        return SystemMessage(content=content, **kwargs)
    return HumanMessage(content=content, **kwargs)


def _unchanged(original: BaseMessage, position: int, message: Message) -> bool:
    """Whether the view shows ``original`` as it was stored (not elided or masked)."""
    calls = _tool_calls(original)
    if isinstance(original.content, str) and isinstance(message.content, str):
        return original.content == message.content and \
            [c.get("id") for c in calls] == [c.id for c in message.tool_calls]
    same = from_langchain(original, position)
    return same is not None and same.content == message.content and \
        same.tool_calls == message.tool_calls


def to_langchain(messages: Sequence[Message], originals: Sequence[BaseMessage] = ()
                 ) -> list[BaseMessage]:
    """contextfold messages as LangChain messages, reusing ``originals`` (by id) that the
    view shows unchanged. Only the tail of ``originals`` that the view reaches is scanned."""
    wanted = {m.id for m in messages if m.id}
    found: dict[str, tuple[int, BaseMessage]] = {}
    for i in range(len(originals) - 1, -1, -1):
        if len(found) == len(wanted):
            break
        oid = originals[i].id
        if oid and oid in wanted:
            found[oid] = (i, originals[i])
    out: list[BaseMessage] = []
    for msg in messages:
        hit = found.get(msg.id) if msg.id else None
        if hit is not None and _unchanged(hit[1], hit[0], msg):
            out.append(hit[1])
        else:
            out.append(_rebuild(msg))
    return out


class LangChainView:
    """One session's conversions, kept between model calls so that a call converts only
    what changed since the last one:

    - :meth:`to_langchain` remembers, per message object the view showed, the LangChain
      message it became (the view hands out the same object while it shows a message
      unchanged), and scans the framework's messages only for the ones new to the view;
    - :meth:`system_texts` scans only the state messages appended since the last call
      (all of them again when the list no longer starts with what it scanned).

    Both hold little more than what the last call saw, so they stay about as small as the
    context.
    """

    __slots__ = ("_scanned", "_shown", "_texts")

    def __init__(self) -> None:
        self._shown: dict[int, tuple[Message, BaseMessage]] = {}
        self._scanned: list[BaseMessage] = []  # held, so their ids cannot be reused
        self._texts: list[str] = []

    def to_langchain(self, messages: Sequence[Message], originals: Sequence[BaseMessage]
                     ) -> list[BaseMessage]:
        """:func:`to_langchain`, each view message converted once."""
        shown = self._shown
        out: list[BaseMessage | None] = []
        fresh: list[Message] = []
        slots: list[int] = []
        for m, hit in zip(messages, map(shown.get, map(id, messages)), strict=True):
            if hit is not None and hit[0] is m:
                out.append(hit[1])
            else:
                slots.append(len(out))
                fresh.append(m)
                out.append(None)
        if fresh:
            for i, m, done in zip(slots, fresh, to_langchain(fresh, originals), strict=True):
                out[i] = done
                shown[id(m)] = (m, done)
            if len(shown) > 2 * len(out) + 64:  # forget what the view no longer shows
                self._shown = {id(m): shown[id(m)] for m in messages}
        return out  # type: ignore[return-value]  # every slot filled

    def system_texts(self, messages: Sequence[BaseMessage]) -> list[str]:
        """The texts of the system messages among ``messages`` (see the class docstring)."""
        seen = self._scanned
        n = len(seen)
        # the same objects in the same places (a C-level identity walk, no conversion):
        # a message replaced or removed in the middle makes the whole list scanned again
        if not (len(messages) >= n and all(map(operator.is_, messages[:n], seen))):
            n, self._texts = 0, []
        texts = self._texts
        texts += [m.text for m in messages[n:] if isinstance(m, SystemMessage) and m.text]
        self._scanned = list(messages)
        return list(texts)


def system_message(original: SystemMessage | None, extra: str | None) -> SystemMessage | None:
    """``original`` with ``extra`` (the summary block) appended; its blocks are kept."""
    if not extra:
        return original
    if original is None:
        return SystemMessage(content=extra)
    content = original.content
    if isinstance(content, str):
        merged: str | list[str | dict[str, Any]] = f"{content}\n\n{extra}" if content else extra
    else:
        merged = [*content, {"type": "text", "text": extra}]
    return SystemMessage(content=merged, id=original.id, name=original.name,
                         additional_kwargs=original.additional_kwargs)
