"""Provider-neutral chat messages, their validation, and OpenAI chat-completions conversion.

Everything here is pure: no I/O, deterministic. A :class:`Message` that exists is valid on
its own (role, text, metadata); :func:`check_sequence` checks what only a sequence can get
wrong (tool results without their call, a call answered twice, a turn while calls are
pending). Both raise :class:`~contextfold.errors.ValidationError` and nothing else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar, Union, cast, get_args

from .errors import ValidationError
from .message_values import (
    DEFAULT_MAX_MESSAGE_CHARS,
    NO_CAP,
    check_json,
    check_metadata,
    check_text,
    coerce_timestamp,
    dump_json,
)

_T = TypeVar("_T")

__all__ = [
    "DEFAULT_MAX_MESSAGE_CHARS",
    "MediaPart",
    "Message",
    "Part",
    "Role",
    "StoredMessage",
    "TextPart",
    "ToolCall",
    "check_sequence",
    "check_text",
    "coerce_message",
    "render_text",
    "stamp_batch",
]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset(get_args(Role))
MediaKind = Literal["image", "audio", "file"]

_MAX_NAME_CHARS = 256
_OPENAI_NAME_BAD = re.compile(r"[^a-zA-Z0-9_-]")

#: The fields :meth:`Message.from_openai` accepts.
_OPENAI_FIELDS = frozenset(
    {
        "role",
        "content",
        "name",
        "tool_calls",
        "tool_call_id",
        "timestamp",
        "metadata",
        "id",
        "refusal",
        "function_call",
        "audio",
        "annotations",
    }
)

JSONValue = Union[None, bool, int, float, str, list["JSONValue"], dict[str, "JSONValue"]]  # noqa: UP007


@dataclass(frozen=True, slots=True)
class TextPart:
    """A text content part."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class MediaPart:
    """A non-text part (image, audio, file), kept exactly as the provider dict it came as.

    It is stored unchanged and reaches summarizers only as a typed placeholder
    (``[image]``), never as its payload.
    """

    kind: MediaKind
    data: Mapping[str, Any]
    type: Literal["media"] = "media"

    def check(self) -> None:
        """Raise ``ValidationError`` unless ``kind`` is known and ``data`` is a JSON object
        (what every store can keep unchanged); normalises ``data`` to a plain dict."""
        if self.kind not in get_args(MediaKind):
            raise ValidationError(
                f"media part kind {self.kind!r} is not one of {list(get_args(MediaKind))}"
            )
        if not isinstance(self.data, Mapping):
            raise ValidationError(f"media part data must be a mapping, got {self.data!r:.60}")
        check_json(self.data, 0)
        object.__setattr__(self, "data", json.loads(dump_json(self.data, "media part")))

    def placeholder(self) -> str:
        kind = self.data.get("type", "")
        inner = self.data.get(kind, {}) if isinstance(kind, str) else {}
        name = inner.get("filename") if isinstance(inner, Mapping) else None
        return f"[{self.kind}: {name}]" if isinstance(name, str) and name else f"[{self.kind}]"


Part = Union[TextPart, MediaPart]  # noqa: UP007 - a runtime alias, kept valid on 3.10
_MEDIA_TYPES: dict[str, MediaKind] = {
    "image_url": "image",
    "image": "image",
    "input_image": "image",
    "input_audio": "audio",
    "audio": "audio",
    "file": "file",
    "input_file": "file",
    "document": "file",
}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by an assistant message."""

    id: str
    name: str
    arguments: str = "{}"

    def __post_init__(self) -> None:
        for attr in ("id", "name"):
            value = getattr(self, attr)
            if not isinstance(value, str) or not value.strip():
                raise ValidationError(f"tool call {attr} must be a non-empty string, got {value!r}")
            check_text(value, f"tool call {attr}", 512)
        if isinstance(self.arguments, Mapping):
            object.__setattr__(self, "arguments", dump_json(self.arguments, "tool arguments"))
        check_text(self.arguments, "tool call arguments")

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class Message:
    """A provider-neutral chat message.

    ``content`` is a string or a tuple of parts. ``id`` is an optional client message id:
    a store keeps at most one message per (session, id), so retrying an acknowledged
    append does not duplicate it. ``timestamp`` is normalised to an aware UTC datetime
    (naive datetimes are taken as UTC). Construction validates; an invalid message
    cannot exist.
    """

    role: Role
    content: str | tuple[Part, ...] = ""
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    timestamp: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.role, str) or self.role not in ROLES:
            raise ValidationError(f"unknown role {self.role!r}; expected one of {sorted(ROLES)}")
        content = self.content
        if content is None:
            content = ""
        if isinstance(content, list):
            content = tuple(content)
        if isinstance(content, tuple):
            for part in content:
                if isinstance(part, TextPart):
                    check_text(part.text, "text part", NO_CAP)
                elif isinstance(part, MediaPart):
                    part.check()
                else:
                    raise ValidationError(
                        f"content part must be TextPart or MediaPart: {part!r:.80}"
                    )
        else:
            check_text(content, f"{self.role} message content", NO_CAP)
        object.__setattr__(self, "content", content)
        if self.name is not None:
            check_text(self.name, "message name", _MAX_NAME_CHARS)
            if not self.name.strip():
                raise ValidationError("message name must not be blank")
        if not isinstance(self.tool_calls, (list, tuple)):
            raise ValidationError(
                f"tool_calls must be a list of ToolCall, got {type(self.tool_calls).__name__}"
            )
        calls = tuple(self.tool_calls)
        if calls and self.role != "assistant":
            raise ValidationError(f"only assistant messages carry tool_calls, not {self.role!r}")
        for call in calls:
            if not isinstance(call, ToolCall):
                raise ValidationError(f"tool_calls must hold ToolCall objects: {call!r:.80}")
        if calls:
            ids = [c.id for c in calls]
            if len(set(ids)) != len(ids):
                raise ValidationError(f"duplicate tool call ids in one message: {ids!r}")
        object.__setattr__(self, "tool_calls", calls)
        if self.role == "tool":
            if not isinstance(self.tool_call_id, str) or not self.tool_call_id.strip():
                raise ValidationError(
                    "a tool message needs the tool_call_id of the call it answers"
                )
            check_text(self.tool_call_id, "tool_call_id", 512)
        elif self.tool_call_id is not None:
            raise ValidationError(f"only tool messages carry tool_call_id, not {self.role!r}")
        if self.timestamp is not None:
            object.__setattr__(self, "timestamp", coerce_timestamp(self.timestamp))
        object.__setattr__(self, "metadata", check_metadata(self.metadata))
        if self.id is not None:
            check_text(self.id, "message id", 512)
            if not self.id:
                raise ValidationError("message id must not be empty")

    @property
    def text(self) -> str:
        """The message as plain text; non-text parts become placeholders like ``[image]``."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(
            p.text if isinstance(p, TextPart) else p.placeholder() for p in self.content
        )

    # -- OpenAI chat-completions conversion ------------------------------------------------

    def to_openai(self) -> dict[str, Any]:
        """This message as an OpenAI chat-completions dict (provider-ready, no extras)."""
        out: dict[str, Any] = {"role": self.role}
        if isinstance(self.content, str):
            out["content"] = self.content
        else:
            out["content"] = [
                {"type": "text", "text": p.text} if isinstance(p, TextPart) else dict(p.data)
                for p in self.content
            ]
        if self.role == "assistant" and self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
            if out["content"] == "":
                out["content"] = None
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role in ("user", "assistant", "system"):
            out["name"] = _OPENAI_NAME_BAD.sub("_", self.name)[:64]
        return out

    def to_dict(self) -> dict[str, Any]:
        """Lossless JSON-ready dict: the OpenAI form plus ``timestamp``, ``metadata``, ``id``."""
        out = self.to_openai()
        if self.name is not None:
            out["name"] = self.name
        if self.timestamp is not None:
            out["timestamp"] = self.timestamp.isoformat()
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        if self.id is not None:
            out["id"] = self.id
        return out

    @classmethod
    def from_openai(
        cls, data: Mapping[str, Any], *, timestamp: datetime | None = None
    ) -> Message:
        """Parse an OpenAI chat-completions message dict (plus optional ``timestamp``,
        ``metadata``, ``id``). Anything else raises ``ValidationError``. ``timestamp`` is
        used when the dict has none."""
        if type(data) is dict and len(data) == 2:  # the common {"role", "content"} turn
            role, content = data.get("role"), data.get("content")
            if type(content) is str and type(role) is str and role in _PLAIN_ROLES:
                return _plain(cast(Role, role), content, timestamp)
        if not isinstance(data, Mapping):
            raise ValidationError(f"a message must be a mapping, got {type(data).__name__}")
        if not _OPENAI_FIELDS.issuperset(data):
            unknown = sorted(str(k) for k in data if k not in _OPENAI_FIELDS)
            raise ValidationError(f"unknown message fields {unknown!r}")
        if data.get("function_call") is not None:
            raise ValidationError("legacy function_call messages are not supported; use tool_calls")
        role = data.get("role")
        if role == "developer":
            role = "system"
        if not isinstance(role, str) or role not in ROLES:
            raise ValidationError(f"unknown role {role!r}; expected one of {sorted(ROLES)}")
        raw_calls = data.get("tool_calls") or ()
        if not isinstance(raw_calls, (list, tuple)):
            raise ValidationError(f"tool_calls must be a list, got {type(raw_calls).__name__}")
        return cls(
            role=cast(Role, role),
            content=_parse_content(data.get("content")),
            name=data.get("name"),
            tool_calls=tuple(_parse_tool_call(c) for c in raw_calls),
            tool_call_id=data.get("tool_call_id"),
            timestamp=stamp if (stamp := data.get("timestamp")) is not None else timestamp,
            metadata=data.get("metadata") or {},
            id=data.get("id"),
        )


_PLAIN_ROLES = frozenset({"system", "user", "assistant"})


def slots_maker(cls: type[_T]) -> Callable[..., _T]:
    """``cls(*values)`` for a frozen, slotted dataclass given every field in order, without
    its ``__init__``'s ``object.__setattr__`` call per field and without ``__post_init__``:
    each slot is set by its own descriptor, in a function generated once (as dataclasses
    generates ``__init__``), at about half the cost. For objects made on every turn from
    values known to be valid."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    assert not {"s", "new", "cls"} & set(names), names  # the generated function's own names
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    namespace.update({f"set_{n}": getattr(cls, n).__set__ for n in names})
    body = "".join(f"    set_{n}(s, {n})\n" for n in names)
    exec(f"def make({', '.join(names)}):\n    s = new(cls)\n{body}    return s\n", namespace)
    return namespace["make"]  # type: ignore[no-any-return]


_make_message = slots_maker(Message)


def _plain(role: Role, content: str, timestamp: datetime | None) -> Message:
    """``Message(role=role, content=content, timestamp=timestamp)`` for a role that needs
    no tool fields: the checks ``__post_init__`` would make of it (the text, the
    timestamp), without walking the fields that are empty by construction — every chat
    turn given as a dict comes this way."""
    check_text(content, f"{role} message content", NO_CAP)
    stamp = None if timestamp is None else coerce_timestamp(timestamp)
    return _make_message(role, content, None, (), None, stamp, {}, None)


_ROW_FIELDS = frozenset({"role", "content", "name", "timestamp", "metadata", "id"})


def trusted_message(data: object) -> Message | None:
    """The message of a row body a store wrote (``Message.to_dict`` as JSON, parsed),
    without the checks its construction made before it was stored — or None when ``data``
    is not a plain text turn of a system, user or assistant role with a UTC timestamp,
    fields of the right types (the caller then parses it with :meth:`Message.from_openai`,
    which validates). Reading back a long session's turns (recall's hits and neighbours,
    the live messages) makes one per row."""
    if type(data) is not dict or not _ROW_FIELDS.issuperset(data):
        return None
    role, content = data.get("role"), data.get("content")
    if type(role) is not str or role not in _PLAIN_ROLES or type(content) is not str:
        return None
    name, stamp, metadata, mid = (
        data.get("name"), data.get("timestamp"), data.get("metadata"), data.get("id"))
    if (name is not None and type(name) is not str) or (mid is not None and type(mid) is not str):
        return None
    if metadata is None:
        metadata = {}
    elif type(metadata) is not dict:
        return None
    timestamp = None
    if stamp is not None:
        if type(stamp) is not str:
            return None
        try:
            timestamp = datetime.fromisoformat(stamp)
        except ValueError:
            return None
        if timestamp.tzinfo is not timezone.utc:  # what the store writes; else coerce it
            return None
    return _make_message(role, content, name, (), None, timestamp, metadata, mid)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message as the store holds it: its per-session ``seq``, cached token count, and
    whether it has been folded into the summary (archive retention keeps folded rows)."""

    seq: int
    message: Message
    tokens: int
    folded: bool = False

    @property
    def role(self) -> Role:
        return self.message.role

    @property
    def text(self) -> str:
        return self.message.text


#: ``StoredMessage(seq, message, tokens, folded)`` at half the cost (see :func:`slots_maker`):
#: stores and the view make one per appended message.
make_stored = slots_maker(StoredMessage)


def with_timestamp(message: Message, timestamp: datetime) -> Message:
    """``message`` with ``timestamp`` set, without validating the (already valid) rest
    again: stamping happens on every append, and re-validating large texts is costly."""
    if timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=timezone.utc)
    new = object.__new__(Message)
    for name in Message.__dataclass_fields__:
        object.__setattr__(new, name, getattr(message, name))
    object.__setattr__(new, "timestamp", timestamp.astimezone(timezone.utc))
    return new


def coerce_message(
    value: Message | Mapping[str, Any], timestamp: datetime | None = None
) -> Message:
    """Accept a :class:`Message` or an OpenAI-style dict; anything else is a ValidationError.
    ``timestamp`` is given to a message that has none."""
    if isinstance(value, Message):
        if value.timestamp is None and timestamp is not None:
            return with_timestamp(value, timestamp)
        return value
    if isinstance(value, Mapping):
        return Message.from_openai(value, timestamp=timestamp)
    raise ValidationError(
        f"expected a Message or a dict, got {type(value).__name__}: {value!r:.80}"
    )


def stamp_batch(messages: list[Message], now: datetime) -> list[Message]:
    """Give every message of one batch a timestamp. A message without one takes its
    neighbour's when the batch has any (the one before it, else the first after it): a
    user turn stamped 09:14 and its answer sent without a time belong together, not
    months apart at the moment of the upload. A batch with none is stamped ``now``."""
    if all(m.timestamp is not None for m in messages):
        return messages
    known = next((m.timestamp for m in messages if m.timestamp is not None), None)
    out: list[Message] = []
    last = known if known is not None else now
    for m in messages:
        if m.timestamp is None:
            out.append(with_timestamp(m, last))
        else:
            last = m.timestamp
            out.append(m)
    return out


def render_text(message: Message) -> str:
    """One line-oriented rendering for summarizers: tool calls as ``name(args)``, media as
    placeholders. Never includes media payloads."""
    text = message.text
    if message.tool_calls:
        calls = "; ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        text = f"{text}\n[tool calls: {calls}]" if text else f"[tool calls: {calls}]"
    return text


def check_sequence(messages: Iterable[Message], pending: Iterable[str] = ()) -> tuple[str, ...]:
    """Check that ``messages`` may follow a session whose unanswered tool calls are
    ``pending``; return the calls still unanswered afterwards, in call order.

    Rules (those OpenAI and Anthropic enforce): a tool result answers a pending call,
    once; while calls are pending only tool results may come; an assistant message may
    not reuse a pending call id. Pending calls at the end are allowed: their results
    may arrive in a later append.
    """
    open_calls = list(pending)
    for i, msg in enumerate(messages):
        if msg.role == "tool":
            if msg.tool_call_id not in open_calls:
                raise ValidationError(
                    f"message {i}: tool result for {msg.tool_call_id!r} answers no pending "
                    f"tool call (pending: {open_calls!r}); it is an orphan or answered twice"
                )
            open_calls.remove(msg.tool_call_id)
            continue
        if open_calls:
            raise ValidationError(
                f"message {i}: a {msg.role} message cannot come while tool calls "
                f"{open_calls!r} are unanswered; append their tool results first"
            )
        open_calls.extend(c.id for c in msg.tool_calls)
    return tuple(open_calls)


# -- helpers ------------------------------------------------------------------------------


def _parse_content(content: object) -> str | tuple[Part, ...]:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, (list, tuple)):
        raise ValidationError(f"content must be a string or a list of parts, got {content!r:.80}")
    parts: list[Part] = []
    for raw in content:
        if isinstance(raw, str):
            parts.append(TextPart(check_text(raw, "text part", NO_CAP)))
            continue
        if not isinstance(raw, Mapping):
            raise ValidationError(f"content part must be a mapping, got {raw!r:.80}")
        kind = raw.get("type")
        if kind in ("text", "input_text", "output_text"):
            parts.append(TextPart(check_text(raw.get("text"), "text part", NO_CAP)))
        elif isinstance(kind, str) and kind in _MEDIA_TYPES:
            check_json(raw, 0)
            parts.append(MediaPart(_MEDIA_TYPES[kind], json.loads(dump_json(raw, "part"))))
        else:
            raise ValidationError(f"unknown content part type {kind!r}")
    return tuple(parts)


def _parse_tool_call(raw: object) -> ToolCall:
    if isinstance(raw, ToolCall):
        return raw
    if not isinstance(raw, Mapping):
        raise ValidationError(f"tool call must be a mapping, got {raw!r:.80}")
    fn = raw.get("function")
    if not isinstance(fn, Mapping):
        raise ValidationError(f"tool call needs a 'function' object: {raw!r:.80}")
    args = fn.get("arguments", "{}")
    if args is None:
        args = "{}"
    if isinstance(args, Mapping):
        args = dump_json(args, "tool arguments")
    return ToolCall(id=raw.get("id"), name=fn.get("name"), arguments=args)  # type: ignore[arg-type]


def messages_to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Provider-ready OpenAI dicts for a list of messages."""
    return [m.to_openai() for m in messages]
