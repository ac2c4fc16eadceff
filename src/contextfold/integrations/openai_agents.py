"""OpenAI Agents SDK: :class:`ContextFoldSession`, a ``Session`` backed by contextfold.

::

    from agents import Agent, Runner
    from contextfold.integrations.openai_agents import ContextFoldSession

    session = ContextFoldSession("user-42", memory, max_tokens=8000)
    result = await Runner.run(agent, "Where is my order?", session=session,
                              hooks=session.usage_hooks(), run_config=session.run_config())

``get_items`` returns contextfold's context as Responses-API input items: the summary as a
system message, then the live turns — never over ``max_tokens`` (pass the agent's
``system=`` instructions and ``tools=`` schemas to count them too), never separating a
``function_call`` from its ``function_call_output``. ``add_items`` maps input items to
contextfold messages: user/system/developer messages one each; an assistant's output items
(message, function calls, reasoning and other items) up to the next user message or tool
output become one assistant message with ``tool_calls``, its original items kept in
metadata so they come back exactly when the view shows the message unchanged; each
``function_call_output`` becomes a tool message. Items are appended by id (output items'
own ids, ``call_id``\\ s, or an id derived from the position in the session), so a retried
write stores nothing twice. ``usage_hooks()`` feeds each response's input tokens to
``record_usage`` (for ``ReportedUsage``). ``clear_session`` deletes the session.

The SDK reads a session once per run; the tool calls and outputs of a long run pile up on
top of that history. ``run_config()`` (a ``RunConfig`` whose ``call_model_input_filter`` is
:meth:`ContextFoldSession.input_filter`) makes every model call of a run receive a fresh
bounded context: the SDK stores each turn's items before the next model call, so the
filter rebuilds the input from the store (and leaves the SDK's input alone, with a
warning, if its newest item is not stored yet).
``pop_item`` is not supported: contextfold never removes a single stored message (the SDK
only pops to rewind server-managed conversations, and treats a failure as "not rewound").
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from agents import RunConfig, RunHooks
    from agents.items import ModelResponse
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_extra

    raise missing_extra("OpenAI Agents SDK", "openai-agents", exc) from exc

from ..errors import ValidationError
from ..memory import AsyncMemory, Memory
from ..messages import Message, TextPart, ToolCall
from .bridge import MemoryBridge, split_context, stable_id

__all__ = ["ContextFoldSession", "from_items", "to_items"]

log = logging.getLogger("contextfold.integrations")

#: Metadata key holding an assistant message's original output items.
ITEMS_KEY = "oai_items"
_MAX_KEPT_CHARS = 48_000
_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
_TEXT_PARTS = ("input_text", "output_text", "text")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS)
    return "" if content is None else str(content)


def _user_content(content: Any) -> Any:
    """Input content in the chat-completions shape contextfold parses."""
    if isinstance(content, str) or content is None:
        return content or ""
    return [p for p in content if isinstance(p, Mapping)
            and (p.get("type") in _TEXT_PARTS or p.get("type") in ("input_image", "input_file",
                                                                       "input_audio"))]


def _text_and_calls(items: Sequence[Mapping[str, Any]]) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls of an assistant's output items, as stored."""
    text = "\n".join(_text(i.get("content")) for i in items
                     if i.get("type", "message") == "message")
    calls = tuple(ToolCall(id=str(i["call_id"]), name=str(i["name"]),
                           arguments=str(i.get("arguments") or "{}"))
                  for i in items if i.get("type") == "function_call")
    return text, calls


class _Group:
    """Assistant output items being collected into one message."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def message(self, fallback_id: str) -> Message:
        text, calls = _text_and_calls(self.items)
        first = self.items[0]
        mid = first.get("id") or (f"fc-{first['call_id']}" if first.get("call_id") else None)
        kept = json.dumps(self.items, ensure_ascii=False, default=str)
        metadata = {ITEMS_KEY: self.items} if len(kept) <= _MAX_KEPT_CHARS else {}
        return Message(role="assistant", content=text, tool_calls=calls,
                       metadata=json.loads(json.dumps(metadata, default=str)),
                       id=str(mid or fallback_id))


def from_items(items: Sequence[Mapping[str, Any]], first_seq: int) -> list[Message]:
    """Responses input items as contextfold messages (see the module docstring);
    ``first_seq`` is where they land in the session (for derived ids)."""
    out: list[Message] = []
    group = _Group()

    def derived(kind: str, item: Any) -> str:
        return stable_id("oai", kind, first_seq + len(out), item)

    def flush() -> None:
        if group.items:
            out.append(group.message(derived("assistant", group.items[0])))
            group.items = []

    for raw in items:
        item = dict(raw)
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message" and role in ("user", "system", "developer"):
            flush()
            mid = item.get("id") or derived(str(role), item.get("content"))
            out.append(Message.from_openai({"role": _ROLES[str(role)],
                                            "content": _user_content(item.get("content")),
                                            "id": str(mid)}))
        elif kind == "function_call_output":
            flush()
            out.append(Message(role="tool", content=_text(item.get("output")),
                               tool_call_id=str(item["call_id"]),
                               id=f"fco-{item['call_id']}"))
        elif kind == "message" and role not in ("assistant", None):
            raise ValidationError(f"unknown message role {role!r} in an input item")
        else:  # assistant messages, function calls, reasoning and other output items
            group.items.append(item)
    flush()
    return out


def _items_of(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id,
                 "output": message.text}]
    if message.role != "assistant":
        if isinstance(message.content, str):
            content: Any = message.content
        else:
            content = [{"type": "input_text", "text": p.text} if isinstance(p, TextPart)
                       else dict(p.data) for p in message.content]
        return [{"role": message.role, "content": content}]
    kept = message.metadata.get(ITEMS_KEY)
    if isinstance(kept, list) and kept:
        text, calls = _text_and_calls(kept)
        if text == message.text and calls == message.tool_calls:
            return [dict(i) for i in kept]  # shown unchanged: the original items
    out: list[dict[str, Any]] = []
    if message.text:
        out.append({"type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": message.text,
                                 "annotations": []}]})
    out += [{"type": "function_call", "call_id": c.id, "name": c.name,
             "arguments": c.arguments} for c in message.tool_calls]
    return out


def to_items(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """contextfold messages as Responses input items."""
    return [item for m in messages for item in _items_of(m)]


class ContextFoldSession:
    """The Agents SDK ``Session`` protocol over contextfold (see the module docstring).
    ``max_tokens``: the history budget (default: the memory policy's); ``system``/``tools``:
    the agent's instructions and tool schemas, counted against it but not returned."""

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        memory: Memory | AsyncMemory,
        *,
        max_tokens: int | None = None,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self.session_id = session_id
        self.bridge = MemoryBridge(memory, "ContextFoldSession")
        self.max_tokens = max_tokens
        self.system = system
        self.tools = list(tools) if tools else None
        self._items_cache: dict[int, tuple[Message, list[dict[str, Any]]]] = {}

    async def get_items(self, limit: int | None = None) -> list[Any]:
        context = await self.bridge.acontext(self.session_id, system=self.system,
                                             tools=self.tools, max_tokens=self.max_tokens)
        parts = split_context(context)
        items: list[dict[str, Any]] = []
        if parts.summary:
            items.append({"role": "system", "content": parts.summary})
        items += self._to_items(parts.messages)
        return items[-limit:] if limit else items

    def _to_items(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """:func:`to_items`, converting each message once: the view hands out the same
        message object while it shows it unchanged, so a model call converts only the
        messages new since the last one (the cache holds exactly the ones last shown)."""
        cache: dict[int, tuple[Message, list[dict[str, Any]]]] = {}
        known = self._items_cache
        out: list[dict[str, Any]] = []
        for m in messages:
            hit = known.get(id(m))
            if hit is None or hit[0] is not m:
                hit = (m, _items_of(m))
            cache[id(m)] = hit
            out += [dict(i) for i in hit[1]]  # the SDK gets its own copies
        self._items_cache = cache
        return out

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        stats = await self.bridge.acall("stats", self.session_id)
        messages = from_items(items, (stats.last_seq if stats else 0) + 1)
        if messages:
            await self.bridge.aadd(self.session_id, messages)

    async def pop_item(self) -> Any:
        raise NotImplementedError(
            "ContextFoldSession.pop_item: contextfold never removes a single stored message; "
            "use clear_session() to delete the session")

    async def clear_session(self) -> None:
        await self.bridge.acall("delete", self.session_id)

    async def record_usage(self, input_tokens: int) -> None:
        """Feed a response's reported input tokens to ``record_usage``."""
        await self.bridge.arecord_usage(self.session_id, input_tokens)

    async def input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """``call_model_input_filter``: the model input rebuilt from the bounded context."""
        given = data.model_data.input
        fresh = await self.get_items()
        if given and (not fresh or _key(fresh[-1]) != _key(given[-1])):
            log.warning("session %s: the newest input item is not stored yet; sending the "
                        "SDK's input unchanged", self.session_id)
            return data.model_data
        return ModelInputData(input=fresh, instructions=data.model_data.instructions)

    def run_config(self, **options: Any) -> RunConfig:
        """A ``RunConfig`` (with ``options``) whose input filter is :meth:`input_filter`."""
        return RunConfig(call_model_input_filter=self.input_filter, **options)

    def usage_hooks(self) -> RunHooks[Any]:
        """``RunHooks`` that record every model response's input tokens."""
        return _UsageHooks(self)


def _key(item: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies an input item across a store round trip."""
    kind = item.get("type", "message")
    if kind in ("function_call", "function_call_output"):
        return kind, item.get("call_id")
    return kind, item.get("role"), _text(item.get("content"))


class _UsageHooks(RunHooks[Any]):
    def __init__(self, session: ContextFoldSession) -> None:
        self.session = session

    async def on_llm_end(self, context: Any, agent: Any, response: ModelResponse) -> None:
        tokens = response.usage.input_tokens if response.usage else 0
        if tokens:
            await self.session.record_usage(tokens)
