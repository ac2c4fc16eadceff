"""A local fake OpenAI server for agent frameworks: a function decides each reply — text
or tool calls — and it answers on both the Responses endpoint (``POST /v1/responses``,
what the OpenAI Agents SDK uses by default) and Chat Completions
(``POST /v1/chat/completions``). Non-streaming only.

::

    def play(request: ReceivedRequest) -> ToolReply:
        return ToolReply.call("lookup_order", {"order": "A-1"}) if ... else ToolReply.say("Done")

    with OpenAIToolServer(play) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="test")

Every request is recorded in ``server.requests`` (body parsed), so a test can assert on
exactly what the framework sent. Usage is reported (input tokens ≈ prompt characters / 4
unless the reply says otherwise).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .provider_servers import FakeProviderServer, ReceivedRequest, ServerReply

__all__ = ["OpenAIToolServer", "ToolReply"]


@dataclass(frozen=True)
class ToolReply:
    """One reply: ``text``, or ``calls`` of (name, JSON arguments, call id)."""

    text: str | None = None
    calls: tuple[tuple[str, str, str], ...] = ()
    input_tokens: int | None = None

    @classmethod
    def say(cls, text: str, *, input_tokens: int | None = None) -> ToolReply:
        return cls(text=text, input_tokens=input_tokens)

    @classmethod
    def call(cls, *calls: tuple[str, Mapping[str, Any], str],
             input_tokens: int | None = None) -> ToolReply:
        return cls(calls=tuple((n, json.dumps(dict(a)), i) for n, a, i in calls),
                   input_tokens=input_tokens)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class OpenAIToolServer(FakeProviderServer):
    """See the module docstring. ``url`` ends in ``/v1``."""

    wire = "openai-tools"

    def __init__(self, responder: Callable[[ReceivedRequest], ToolReply],
                 *, model: str = "fake-model") -> None:
        super().__init__(model=model)
        self.responder = responder
        self._tag = uuid.uuid4().hex[:12]  # ids stay unique across server instances

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def accepts(self, method: str, path: str) -> bool:
        path = path.rstrip("/")
        return method == "POST" and (path.endswith("/responses")
                                     or path.endswith("/chat/completions"))

    def prompt_of(self, body: dict[str, Any]) -> str:
        texts = [_text(body.get("instructions"))]
        for item in body.get("input") or body.get("messages") or []:
            if isinstance(item, dict):
                texts.append(_text(item.get("content")) or str(item.get("output", "")) or
                             str(item.get("arguments", "")))
        if isinstance(body.get("input"), str):
            texts.append(body["input"])
        return "\n\n".join(t for t in texts if t)

    def render(self, reply: ServerReply, request: ReceivedRequest
               ) -> tuple[int, Any, dict[str, str]]:
        answer = self.responder(request)
        n = f"{self._tag}_{len(self.requests)}"
        tokens_in = answer.input_tokens if answer.input_tokens is not None \
            else max(1, len(request.prompt) // 4)
        tokens_out = max(1, len(answer.text or "") // 4 + 8 * len(answer.calls))
        if request.path.rstrip("/").endswith("/responses"):
            return 200, self._response(answer, request, n, tokens_in, tokens_out), {}
        return 200, self._completion(answer, request, n, tokens_in, tokens_out), {}

    def _response(self, answer: ToolReply, request: ReceivedRequest, n: str, tokens_in: int,
                  tokens_out: int) -> dict[str, Any]:
        output: list[dict[str, Any]] = []
        if answer.text is not None:
            output.append({"type": "message", "id": f"msg_{n}", "status": "completed",
                           "role": "assistant", "content": [
                               {"type": "output_text", "text": answer.text, "annotations": []}]})
        for name, args, call_id in answer.calls:
            output.append({"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id,
                           "name": name, "arguments": args, "status": "completed"})
        return {
            "id": f"resp_{n}", "object": "response", "created_at": 0, "status": "completed",
            "model": request.body.get("model", self.model), "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
            "incomplete_details": None, "instructions": None, "metadata": {},
            "temperature": 1.0, "top_p": 1.0, "text": {"format": {"type": "text"}},
            "truncation": "disabled",
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out,
                      "total_tokens": tokens_in + tokens_out,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}},
        }

    def _completion(self, answer: ToolReply, request: ReceivedRequest, n: str, tokens_in: int,
                    tokens_out: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": answer.text, "refusal": None}
        if answer.calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
                for name, args, call_id in answer.calls]
        return {
            "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
            "model": request.body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if answer.calls else "stop"}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                      "total_tokens": tokens_in + tokens_out},
        }
