"""LlamaIndex: :class:`ContextFoldMemory`, a chat memory for agents and chat engines.

::

    from llama_index.core.agent.workflow import FunctionAgent
    from contextfold.integrations.llamaindex import ContextFoldMemory

    chat_memory = ContextFoldMemory.from_defaults(memory=memory, session_id="user-42")
    response = await agent.run("Where is my order?", memory=chat_memory)

``get``/``aget`` return contextfold's context as ``ChatMessage``\\ s — the summary as a
system message, then the live messages, never over the budget (pass ``system=``/``tools=``
to count the agent's own prompt and tool schemas), never separating a tool call from its
result. ``put``/``put_messages`` append (atomically per call); tool calls travel as
``ToolCallBlock``\\ s (or the older ``additional_kwargs["tool_calls"]``), tool results as
``tool`` messages with ``additional_kwargs["tool_call_id"]``. A message's id is
``additional_kwargs["id"]`` if it has one, else one derived from its position in the
session, so a retried write is not stored twice. A message the view shows unchanged comes
back as the object that was put (while this process holds it). ``get_all`` returns every
stored message, folded ones included; ``set`` replaces the session (its summary too);
``reset`` deletes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

try:
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ImageBlock,
        MessageRole,
        TextBlock,
        ToolCallBlock,
    )
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.memory.types import BaseMemory
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_extra

    raise missing_extra("LlamaIndex", "llamaindex", exc) from exc

from ..bounded import LRU
from ..memory import AsyncMemory, Memory
from ..messages import MediaPart, Message, TextPart, ToolCall
from .bridge import MemoryBridge, split_context, stable_id

__all__ = ["ContextFoldMemory", "from_llamaindex", "to_llamaindex"]

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "chatbot": "assistant", "model": "assistant", "tool": "tool", "function": "tool"}
_KEEP = 512  # originals kept per memory for exact round trips


def _calls(message: ChatMessage) -> tuple[ToolCall, ...]:
    calls = [ToolCall(id=b.tool_call_id or stable_id("call", b.tool_name, i), name=b.tool_name,
                      arguments=b.tool_kwargs if isinstance(b.tool_kwargs, str)
                      else json.dumps(b.tool_kwargs, ensure_ascii=False))
             for i, b in enumerate(message.blocks) if isinstance(b, ToolCallBlock)]
    if calls:
        return tuple(calls)
    for raw in message.additional_kwargs.get("tool_calls") or ():  # OpenAI-style objects
        data = raw if isinstance(raw, dict) else getattr(raw, "model_dump", lambda: {})()
        fn = data.get("function") or {}
        if data.get("id") and fn.get("name"):
            calls.append(ToolCall(id=str(data["id"]), name=str(fn["name"]),
                                  arguments=str(fn.get("arguments") or "{}")))
    return tuple(calls)


def from_llamaindex(message: ChatMessage, message_id: str) -> Message:
    """One ``ChatMessage`` as a contextfold message with id ``message_id``."""
    role = _ROLES.get(str(message.role.value), "user")
    parts: list[TextPart | MediaPart] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            parts.append(TextPart(block.text))
        elif isinstance(block, ImageBlock) and block.url is not None:
            parts.append(MediaPart("image", {"type": "image_url",
                                             "image_url": {"url": str(block.url)}}))
    content: str | tuple[TextPart | MediaPart, ...] = (
        "\n".join(p.text for p in parts if isinstance(p, TextPart))
        if all(isinstance(p, TextPart) for p in parts) else tuple(parts))
    call_id = message.additional_kwargs.get("tool_call_id")
    if role == "tool":
        return Message(role="tool", content=content, tool_call_id=str(call_id or ""),
                       name=message.additional_kwargs.get("name"), id=message_id)
    if role == "assistant" and call_id:  # a return_direct tool's answer echoed as assistant
        return Message(role="assistant", content=content, id=message_id,
                       metadata={"li_tool_call_id": str(call_id)})
    return Message(role=role, content=content,  # type: ignore[arg-type]
                   tool_calls=_calls(message) if role == "assistant" else (), id=message_id)


def to_llamaindex(message: Message) -> ChatMessage:
    """A contextfold message as a ``ChatMessage``."""
    blocks: list[Any] = []
    if isinstance(message.content, str):
        if message.content:
            blocks.append(TextBlock(text=message.content))
    else:
        for p in message.content:
            if isinstance(p, TextPart):
                blocks.append(TextBlock(text=p.text))
            elif p.kind == "image" and isinstance(p.data.get("image_url"), dict):
                blocks.append(ImageBlock(url=p.data["image_url"].get("url")))
            else:
                blocks.append(TextBlock(text=p.placeholder()))
    for c in message.tool_calls:
        try:
            kwargs: Any = json.loads(c.arguments)
        except ValueError:
            kwargs = c.arguments
        blocks.append(ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=kwargs))
    extra: dict[str, Any] = {}
    if message.tool_call_id:
        extra["tool_call_id"] = message.tool_call_id
    if message.metadata.get("li_tool_call_id"):
        extra["tool_call_id"] = message.metadata["li_tool_call_id"]
    if message.role == "tool" and message.name:
        extra["name"] = message.name
    role = MessageRole(message.role)
    return ChatMessage(role=role, blocks=blocks, additional_kwargs=extra)


class ContextFoldMemory(BaseMemory):
    """A LlamaIndex memory backed by contextfold (see the module docstring)."""

    session_id: str = Field(description="The contextfold session this memory reads and writes.")
    max_tokens: int | None = Field(default=None, description="Context budget (default: "
                                   "the contextfold policy's).")
    system: str | None = Field(default=None, description="System prompt counted against the "
                               "budget (not returned).")
    tools: list[dict[str, Any]] | None = Field(default=None, description="Tool schemas counted "
                                               "against the budget.")
    _bridge: MemoryBridge = PrivateAttr()
    _originals: LRU[str, ChatMessage] = PrivateAttr(default_factory=lambda: LRU(_KEEP))
    _shown: dict[int, tuple[Message, ChatMessage]] = PrivateAttr(default_factory=dict)

    def __init__(self, memory: Memory | AsyncMemory, session_id: str, **data: Any) -> None:
        super().__init__(session_id=session_id, **data)  # type: ignore[call-arg]
        self._bridge = MemoryBridge(memory, "ContextFoldMemory")

    @classmethod
    def class_name(cls) -> str:
        return "ContextFoldMemory"

    @classmethod
    def from_defaults(cls, **kwargs: Any) -> ContextFoldMemory:
        """``ContextFoldMemory.from_defaults(memory=..., session_id=..., max_tokens=...)``."""
        return cls(**kwargs)

    # -- conversion ---------------------------------------------------------------------------

    def _prepare(self, messages: Sequence[ChatMessage], last_seq: int) -> list[Message]:
        out: list[Message] = []
        for i, m in enumerate(messages):
            mid = m.additional_kwargs.get("id")
            if not mid:
                mid = stable_id("li", last_seq + 1 + i, m.role.value, m.content,
                                [c.id for c in _calls(m)], m.additional_kwargs.get("tool_call_id"))
            converted = from_llamaindex(m, str(mid))
            out.append(converted)
            self._originals.put(str(mid), m)
        return out

    def _view(self, context: Any) -> list[ChatMessage]:
        """The context as ``ChatMessage``\\ s, each message converted once: the view hands
        out the same message object while it shows it unchanged, so a call converts only
        the messages new since the last one (the cache holds the ones last shown)."""
        parts = split_context(context)
        out = [ChatMessage(role=MessageRole.SYSTEM, content=parts.summary)] if parts.summary \
            else []
        known = self._shown
        shown: dict[int, tuple[Message, ChatMessage]] = {}
        for m in parts.messages:
            hit = known.get(id(m))
            if hit is None or hit[0] is not m:
                hit = (m, self._convert(m))
            shown[id(m)] = hit
            out.append(hit[1])
        self._shown = shown
        return out

    def _convert(self, m: Message) -> ChatMessage:
        """The object that was put, if the view shows it unchanged; else rebuilt."""
        original = self._originals.get(m.id or "")
        if original is not None:
            same = from_llamaindex(original, m.id or "")
            if same.content == m.content and same.tool_calls == m.tool_calls:
                return original
        return to_llamaindex(m)

    # -- BaseMemory ---------------------------------------------------------------------------

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        return self._view(self._bridge.context(self.session_id, system=self.system,
                                               tools=self.tools, max_tokens=self.max_tokens))

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        return self._view(await self._bridge.acontext(
            self.session_id, system=self.system, tools=self.tools, max_tokens=self.max_tokens))

    def get_all(self) -> list[ChatMessage]:
        return [to_llamaindex(m.message) for m in self._bridge.call("messages", self.session_id)]

    async def aget_all(self) -> list[ChatMessage]:
        stored = await self._bridge.acall("messages", self.session_id)
        return [to_llamaindex(m.message) for m in stored]

    def put(self, message: ChatMessage) -> None:
        self.put_messages([message])

    async def aput(self, message: ChatMessage) -> None:
        await self.aput_messages([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        if messages:
            stats = self._bridge.call("stats", self.session_id)
            self._bridge.add(self.session_id, self._prepare(messages, stats.last_seq if stats
                                                            else 0))

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        if messages:
            stats = await self._bridge.acall("stats", self.session_id)
            await self._bridge.aadd(self.session_id, self._prepare(
                messages, stats.last_seq if stats else 0))

    def set(self, messages: list[ChatMessage]) -> None:
        self.reset()
        self.put_messages(messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        await self.areset()
        await self.aput_messages(messages)

    def reset(self) -> None:
        self._bridge.call("delete", self.session_id)
        self._originals.clear()
        self._shown = {}

    async def areset(self) -> None:
        await self._bridge.acall("delete", self.session_id)
        self._originals.clear()
        self._shown = {}
