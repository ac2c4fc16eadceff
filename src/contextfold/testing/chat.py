"""Chat-model test doubles: :class:`FakeChat` (scripted replies) and :class:`FunctionChat`
(a function plays the model). Both record every request and implement
:class:`~contextfold.llm.ChatModel`, so they plug into ``LLMSummarizer`` unchanged.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from ..llm.base import Completion, Usage, parse_structured
from ..messages import Message

__all__ = ["ChatRequest", "FakeChat", "FunctionChat", "Reply", "default_summary"]


@dataclass(frozen=True)
class ChatRequest:
    """One request a double received."""

    messages: tuple[Message, ...]
    max_tokens: int
    temperature: float
    response_format: type[BaseModel] | None
    timeout: float | None

    @property
    def system(self) -> str:
        return "\n\n".join(m.text for m in self.messages if m.role == "system")

    @property
    def user(self) -> str:
        return "\n\n".join(m.text for m in self.messages if m.role != "system")

    @property
    def text(self) -> str:
        return "\n\n".join(m.text for m in self.messages)


Reply = str | Completion | BaseException | Callable[[ChatRequest], str | Completion]
"""A scripted reply: text, a full :class:`Completion`, an exception to raise, or a
function of the request."""


def _estimate(text: str) -> int:
    return math.ceil(len(text) / 4) if text else 0


def _completion(reply: str | Completion, request: ChatRequest, model: str) -> Completion:
    """Text becomes a successful completion with estimated usage; with structured output
    it is wrapped as ``{"summary": text}`` unless it already is JSON."""
    if isinstance(reply, Completion):
        return reply
    text = reply
    parsed, error = None, None
    if request.response_format is not None:
        parsed, error = parse_structured(text, request.response_format)
        if parsed is None and not text.lstrip().startswith(("{", "[")):
            text = json.dumps({"summary": reply}, ensure_ascii=False)
            parsed, error = parse_structured(text, request.response_format)
    return Completion(
        text=text,
        parsed=parsed,
        finish_reason="stop",
        usage=Usage(_estimate(request.text), _estimate(text)),
        model=model,
        parse_error=error,
    )


class _Double:
    def __init__(
        self, name: str, context_window: int | None, structured_output: bool, delay: float
    ) -> None:
        self._name = name
        self._context_window = context_window
        self._structured = structured_output
        self.delay = delay
        self.requests: list[ChatRequest] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def context_window(self) -> int | None:
        return self._context_window

    @property
    def supports_structured_output(self) -> bool:
        return self._structured

    @property
    def calls(self) -> int:
        return len(self.requests)

    def _record(
        self,
        messages: Sequence[Message],
        max_tokens: int,
        temperature: float,
        response_format: type[BaseModel] | None,
        timeout: float | None,
    ) -> ChatRequest:
        request = ChatRequest(tuple(messages), max_tokens, temperature, response_format, timeout)
        self.requests.append(request)
        return request


class FakeChat(_Double):
    """Replies from a script, in order; records requests in ``requests``.

    With no script (or once ``repeat_last`` has nothing new) a deterministic default
    reply summarises the request's data lines, so examples run offline. When the script
    runs out and ``replies`` was given, it raises ``AssertionError`` (a test asked for
    more calls than it expected).
    """

    def __init__(
        self,
        replies: Iterable[Reply] | None = None,
        *,
        name: str = "fake:chat",
        context_window: int | None = None,
        structured_output: bool = True,
        delay: float = 0.0,
    ) -> None:
        super().__init__(name, context_window, structured_output, delay)
        self._scripted = replies is not None
        self._replies: deque[Reply] = deque(replies or ())

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        response_format: type[BaseModel] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        request = self._record(messages, max_tokens, temperature, response_format, timeout)
        if self.delay:
            await asyncio.sleep(self.delay)
        if not self._replies:
            if self._scripted:
                raise AssertionError(
                    f"FakeChat ran out of scripted replies at call {len(self.requests)}"
                )
            return _completion(default_reply(request), request, self.name)
        reply = self._replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(request)
        return _completion(reply, request, self.name)


ChatFunction = Callable[[ChatRequest], str | Completion | Awaitable[str | Completion]]


class FunctionChat(_Double):
    """A function plays the model: it gets the :class:`ChatRequest` and returns text or a
    :class:`Completion` (sync or async), or raises."""

    def __init__(
        self,
        fn: ChatFunction,
        *,
        name: str = "function:chat",
        context_window: int | None = None,
        structured_output: bool = True,
        delay: float = 0.0,
    ) -> None:
        super().__init__(name, context_window, structured_output, delay)
        self.fn = fn

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        response_format: type[BaseModel] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        request = self._record(messages, max_tokens, temperature, response_format, timeout)
        if self.delay:
            await asyncio.sleep(self.delay)
        out = self.fn(request)
        if inspect.isawaitable(out):
            out = await out
        return _completion(out, request, self.name)


def default_reply(request: ChatRequest) -> str:
    """The stand-in reply to a chat request: :func:`default_summary` of its user part."""
    return default_summary(request.user)


def default_summary(prompt: str, max_chars: int = 600) -> str:
    """A deterministic stand-in summary of a summarizer prompt: the earlier summary's
    first line plus the first words of each transcript turn, at most ``max_chars``.
    Good enough for offline examples and fake servers; not a summarizer."""
    parts: list[str] = []
    inside = ""
    for line in prompt.splitlines():
        stripped = line.strip()
        if stripped.startswith(("<earlier-summary-", "<transcript-")):
            inside = stripped[1:].split("-", 1)[0]
            continue
        if stripped.startswith(("</earlier-summary-", "</transcript-")):
            inside = ""
            continue
        if inside == "earlier" and stripped and not parts:
            parts.append(stripped[:200])
        elif inside == "transcript" and "]: " in line and not line.startswith(" "):
            head, _, body = line.partition("]: ")
            role = head.rsplit("[", 1)[-1].split()[0].title()
            words = body.split()
            parts.append(f"{role}: {' '.join(words[:12])}" + (" …" if len(words) > 12 else ""))
    text = "Earlier conversation: " + "; ".join(parts) if parts else "Earlier conversation."
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"
