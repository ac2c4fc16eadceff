"""pydantic-ai: :class:`ContextFoldCapability` and :func:`history_processor`.

pydantic-ai 2.x takes history processors as capabilities. The full integration is one
capability::

    from pydantic_ai import Agent
    from contextfold.integrations.pydantic_ai import ContextFoldCapability

    agent = Agent(model, capabilities=[ContextFoldCapability(memory, "user-42")])
    result = await agent.run("hi", message_history=history)   # or no history at all

Before every model request the run's new messages are appended to contextfold (each part
of a ``ModelRequest`` — user prompts, tool returns, retry prompts — and each
``ModelResponse`` becomes one contextfold message; ids are derived from the message's own
timestamp and content, so the same message is never stored twice), and the model receives
contextfold's context instead: your system prompt, the summary as a second system-prompt
part, then the live messages, never over the budget and never separating a tool call from
its return (the request's tool definitions count against the budget). After every
response it is stored at once (so a run's final answer is kept even
if you pass no ``message_history`` next time) and its reported input tokens feed
``record_usage``. Like pydantic-ai's ``ProcessHistory``, the run's own history becomes the
bounded one.

:func:`history_processor` is the same conversion as a plain processor for
``ProcessHistory(...)``; it cannot store the final answer of a run or see usage, so prefer
the capability. A ``ModelResponse`` the view shows unchanged is passed on as the original
object (thinking signatures and provider details survive); everything else is rebuilt from
the store, marked in its ``metadata`` so it is recognised and not stored again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    from pydantic_ai import messages as pai
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_extra

    raise missing_extra("pydantic-ai", "pydantic-ai", exc) from exc

from ..bounded import LRU
from ..context import SUMMARY_HEADER
from ..memory import AsyncMemory, Memory
from ..messages import MediaPart, Message, TextPart, ToolCall
from .bridge import MemoryBridge, split_context, stable_id

__all__ = ["ContextFoldCapability", "from_pydantic_ai", "history_processor", "to_pydantic_ai"]

#: ``metadata`` key on messages rebuilt from the store: the contextfold ids they carry.
MARK = "contextfold_ids"
_KNOWN = 4096  # ids remembered per processor, to skip re-sending what is stored
_RETRY = "pai_retry"


def _stamp(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _user_content(content: str | Sequence[Any]) -> str | tuple[TextPart | MediaPart, ...]:
    if isinstance(content, str):
        return content
    parts: list[TextPart | MediaPart] = []
    for item in content:
        if isinstance(item, str):
            parts.append(TextPart(item))
        elif isinstance(item, pai.ImageUrl):
            parts.append(MediaPart("image", {"type": "image_url", "image_url": {"url": item.url}}))
        else:  # binary content, documents, audio: a placeholder keeps the turn readable
            parts.append(TextPart(f"[{type(item).__name__}]"))
    if all(isinstance(p, TextPart) for p in parts):
        return "\n".join(p.text for p in parts if isinstance(p, TextPart))
    return tuple(parts)


def _part_id(part: Any, index: int) -> str:
    content = getattr(part, "content", None)
    return stable_id("pai", part.part_kind, index, _stamp(getattr(part, "timestamp", None)),
                     content if isinstance(content, str) else repr(content),
                     getattr(part, "tool_call_id", None))


def _response_id(response: pai.ModelResponse) -> str:
    parts = [(p.part_kind, getattr(p, "content", None) if isinstance(
        getattr(p, "content", None), str) else None, getattr(p, "tool_call_id", None))
        for p in response.parts]
    return stable_id("pai", "response", _stamp(response.timestamp), response.provider_response_id,
                     parts)


def from_pydantic_ai(message: pai.ModelMessage) -> tuple[list[str], list[Message]]:
    """One pydantic-ai message as (system prompt texts, contextfold messages). Parts that
    are contextfold's own (the summary, messages rebuilt from the store) are left out."""
    marked = set((message.metadata or {}).get(MARK, ()))
    system: list[str] = []
    out: list[Message] = []
    if isinstance(message, pai.ModelResponse):
        if marked:
            return system, out
        text = "\n".join(p.content for p in message.parts if isinstance(p, pai.TextPart))
        calls = tuple(ToolCall(id=p.tool_call_id, name=p.tool_name, arguments=p.args_as_json_str())
                      for p in message.parts if isinstance(p, pai.ToolCallPart))
        if text or calls:
            out.append(Message(role="assistant", content=text, tool_calls=calls,
                               name=None, id=_response_id(message)))
        return system, out
    for i, part in enumerate(message.parts):
        if isinstance(part, pai.SystemPromptPart):
            if not part.content.startswith(SUMMARY_HEADER):
                system.append(part.content)
            continue
        if marked:
            continue
        pid = _part_id(part, i)
        if isinstance(part, pai.UserPromptPart):
            out.append(Message(role="user", content=_user_content(part.content), id=pid))
        elif isinstance(part, pai.ToolReturnPart):
            out.append(Message(role="tool", content=part.model_response_str(),
                               tool_call_id=part.tool_call_id, name=part.tool_name, id=pid))
        elif isinstance(part, pai.RetryPromptPart):
            if part.tool_name:
                out.append(Message(role="tool", content=part.model_response(),
                                   tool_call_id=part.tool_call_id, name=part.tool_name,
                                   metadata={_RETRY: True}, id=pid))
            else:
                out.append(Message(role="user", content=part.model_response(),
                                   metadata={_RETRY: True}, id=pid))
    return system, out


def _request_part(message: Message) -> Any:
    if message.role == "tool":
        if message.metadata.get(_RETRY):
            return pai.RetryPromptPart(content=message.text, tool_name=message.name,
                                       tool_call_id=message.tool_call_id or "")
        return pai.ToolReturnPart(tool_name=message.name or "tool", content=message.text,
                                  tool_call_id=message.tool_call_id or "")
    if message.role == "system":
        return pai.SystemPromptPart(content=message.text)
    if message.metadata.get(_RETRY):
        return pai.RetryPromptPart(content=message.text)
    if isinstance(message.content, str):
        return pai.UserPromptPart(content=message.content)
    items: list[Any] = []
    for p in message.content:
        if isinstance(p, TextPart):
            items.append(p.text)
        else:
            url = (p.data.get("image_url") or {}).get("url") if p.kind == "image" else None
            items.append(pai.ImageUrl(url=url) if isinstance(url, str) else p.placeholder())
    return pai.UserPromptPart(content=items)


def to_pydantic_ai(system: Sequence[str], messages: Sequence[Message],
                   originals: dict[str, pai.ModelResponse] | None = None
                   ) -> list[pai.ModelMessage]:
    """System texts and contextfold messages as pydantic-ai messages: one ``ModelRequest``
    per run of user/tool messages (the first also carrying the system parts), one
    ``ModelResponse`` per assistant message (the original object when given)."""
    out: list[pai.ModelMessage] = []
    parts: list[Any] = [pai.SystemPromptPart(content=s) for s in system]
    ids: list[str] = []

    def flush() -> None:
        if parts:
            out.append(pai.ModelRequest(parts=list(parts), metadata={MARK: list(ids)}))
            parts.clear()
            ids.clear()

    for msg in messages:
        if msg.role != "assistant":
            parts.append(_request_part(msg))
            ids.append(msg.id or "")
            continue
        flush()
        original = (originals or {}).get(msg.id or "")
        if original is not None:
            out.append(original)
            continue
        body: list[Any] = [pai.TextPart(content=msg.text)] if msg.text else []
        body += [pai.ToolCallPart(tool_name=c.name, args=c.arguments, tool_call_id=c.id)
                 for c in msg.tool_calls]
        out.append(pai.ModelResponse(parts=body, metadata={MARK: [msg.id or ""]}))
    flush()
    return out


_Seen = tuple[pai.ModelMessage, int, tuple[list[str], list[Message]]]


class _Processor:
    """The conversion both entry points share."""

    def __init__(self, memory: Memory | AsyncMemory, session_id: str,
                 max_tokens: int | None) -> None:
        self.bridge = MemoryBridge(memory, "contextfold's pydantic-ai adapter")
        self.session_id = session_id
        self.max_tokens = max_tokens
        self.system: list[str] = []
        self._known: LRU[str, None] = LRU(_KNOWN)  # ids stored by this process
        #: id(message) -> (message, its part count, its conversion): the messages of the
        #: last call and the responses since
        self._seen: dict[int, _Seen] = {}

    def _convert(self, messages: Sequence[pai.ModelMessage], *, keep: bool = False
                 ) -> list[tuple[pai.ModelMessage, list[str], list[Message]]]:
        """:func:`from_pydantic_ai` of each message, each object converted once: a run
        hands the same message objects to every model call, so a call converts only what
        is new since the last one. The cache then holds exactly this call's messages
        (``keep``: it is added to instead — for a response, part of the next call)."""
        seen: dict[int, _Seen] = self._seen if keep else {}
        out = []
        for message in messages:
            hit = self._seen.get(id(message))
            if hit is None or hit[0] is not message or hit[1] != len(message.parts):
                hit = (message, len(message.parts), from_pydantic_ai(message))
            seen[id(message)] = hit
            out.append((message, *hit[2]))
        self._seen = seen
        return out

    async def store(self, messages: Sequence[pai.ModelMessage], *, keep: bool = False
                    ) -> dict[str, pai.ModelResponse]:
        new: list[Message] = []
        responses: dict[str, pai.ModelResponse] = {}
        for message, system, converted in self._convert(messages, keep=keep):
            if system:
                self.system = system
            new += [m for m in converted if m.id not in self._known]
            if isinstance(message, pai.ModelResponse) and converted:
                responses[converted[0].id or ""] = message
        if new:
            await self.bridge.aadd(self.session_id, new)  # the store drops ids it holds
            for m in new:
                self._known.put(m.id or "", None)
        return responses

    async def __call__(self, messages: list[pai.ModelMessage],
                       tools: list[dict[str, Any]] | None = None) -> list[pai.ModelMessage]:
        responses = await self.store(messages)
        context = await self.bridge.acontext(
            self.session_id, system="\n\n".join(self.system) or None, tools=tools,
            max_tokens=self.max_tokens)
        parts = split_context(context)
        system = [*self.system, *([parts.summary] if parts.summary else [])]
        return to_pydantic_ai(system, parts.messages, responses)

    async def response(self, response: pai.ModelResponse, record_usage: bool) -> None:
        await self.store([response], keep=True)
        tokens = response.usage.input_tokens if response.usage else None
        if record_usage and isinstance(tokens, int) and tokens > 0:
            await self.bridge.arecord_usage(self.session_id, tokens)


def _tool_schemas(request_context: ModelRequestContext) -> list[dict[str, Any]] | None:
    """The request's tool definitions as OpenAI schemas, to count them against the budget."""
    params = request_context.model_request_parameters
    tools = [*getattr(params, "function_tools", ()), *getattr(params, "output_tools", ())]
    return [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                              "parameters": t.parameters_json_schema}}
            for t in tools] or None


def history_processor(
    memory: Memory | AsyncMemory, session_id: str, *, max_tokens: int | None = None
) -> Callable[[list[pai.ModelMessage]], Awaitable[list[pai.ModelMessage]]]:
    """A history processor for ``ProcessHistory(...)``: stores new messages and returns the
    bounded context (see the module docstring for what only the capability does)."""
    processor = _Processor(memory, session_id, max_tokens)

    async def process(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
        return await processor(messages)

    return process


@dataclass
class ContextFoldCapability(AbstractCapability[Any]):
    """contextfold as the memory of a pydantic-ai agent (see the module docstring).
    ``max_tokens``: the context budget (default: the memory policy's)."""

    memory: Memory | AsyncMemory
    session_id: str
    max_tokens: int | None = None
    record_usage: bool = True
    _processor: _Processor = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._processor = _Processor(self.memory, self.session_id, self.max_tokens)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a Memory: not spec-serializable

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        messages = await self._processor(list(request_context.messages),
                                         _tool_schemas(request_context))
        request_context.messages = messages.copy()
        ctx.messages[:] = messages
        return request_context

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext,
        response: pai.ModelResponse,
    ) -> pai.ModelResponse:
        await self._processor.response(response, self.record_usage)
        return response
