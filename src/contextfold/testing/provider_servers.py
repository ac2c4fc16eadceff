"""Local fake provider servers on 127.0.0.1 speaking the real wire formats:
OpenAI chat completions (:class:`OpenAIServer`), Anthropic messages
(:class:`AnthropicServer`) and Gemini ``generateContent`` (:class:`GeminiServer`).

Point the real SDK (or ``openai-compatible:MODEL@{server.url}``) at ``server.url``.
Script replies with :class:`ServerReply`; unscripted requests get a deterministic
stand-in summary. Every request is recorded in ``server.requests``::

    with OpenAIServer([ServerReply.rate_limit(retry_after=0.01), ServerReply.ok("Hi")]) as s:
        chat = OpenAIChat("gpt-4o-mini", api_key="test", base_url=s.url)

``context_limit`` (characters of prompt text) makes the server answer oversized requests
with that provider's context-length error, before consulting the script.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Literal

from .chat import default_summary

__all__ = [
    "AnthropicServer",
    "FakeProviderServer",
    "GeminiServer",
    "OpenAIServer",
    "ReceivedRequest",
    "ServerReply",
]

ReplyKind = Literal[
    "text",
    "rate_limit",
    "server_error",
    "overloaded",
    "hang",
    "refusal",
    "truncated",
    "context_length",
    "invalid_json",
    "quota",
    "error",
]


@dataclass(frozen=True)
class ServerReply:
    """What the fake server does with one request. Build with the class methods."""

    kind: ReplyKind
    text: str | None = None
    status: int = 200
    retry_after: float | None = None
    retry_after_ms: int | None = None
    seconds: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    message: str = ""
    code: str | None = None

    @classmethod
    def ok(
        cls,
        text: str | None = None,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> ServerReply:
        """Success; ``text=None`` means the stand-in summary of the request."""
        return cls("text", text, input_tokens=input_tokens, output_tokens=output_tokens)

    @classmethod
    def rate_limit(
        cls, retry_after: float | None = 0.01, retry_after_ms: int | None = None
    ) -> ServerReply:
        return cls("rate_limit", status=429, retry_after=retry_after, retry_after_ms=retry_after_ms)

    @classmethod
    def server_error(cls, status: int = 500) -> ServerReply:
        return cls("server_error", status=status)

    @classmethod
    def overloaded(cls) -> ServerReply:
        return cls("overloaded", status=529)

    @classmethod
    def hang(cls, seconds: float = 30.0) -> ServerReply:
        """Wait ``seconds`` (or until the server stops) before a normal reply."""
        return cls("hang", seconds=seconds)

    @classmethod
    def refusal(cls, text: str = "I'm sorry, but I can't help with that.") -> ServerReply:
        return cls("refusal", text)

    @classmethod
    def truncated(cls, text: str = "The user discussed the") -> ServerReply:
        return cls("truncated", text)

    @classmethod
    def context_length(cls) -> ServerReply:
        return cls("context_length", status=400)

    @classmethod
    def invalid_json(cls, text: str = '{"summary": "unterminated') -> ServerReply:
        return cls("invalid_json", text)

    @classmethod
    def quota(cls) -> ServerReply:
        return cls("quota", status=429)

    @classmethod
    def error(cls, status: int, message: str = "error", code: str | None = None) -> ServerReply:
        return cls("error", status=status, message=message, code=code)


@dataclass(frozen=True)
class ReceivedRequest:
    """A request the server received (body parsed as JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    prompt: str = field(default="")

    @property
    def structured(self) -> bool:
        return _wants_json(self.body)


def _wants_json(body: dict[str, Any]) -> bool:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
        return True
    output = body.get("output_config")
    if isinstance(output, dict) and output.get("format"):
        return True
    config = body.get("generationConfig")
    return isinstance(config, dict) and config.get("responseMimeType") == "application/json"


class FakeProviderServer:
    """Base of the three wire formats: a threaded HTTP server with a reply script."""

    wire: ClassVar[str] = ""

    def __init__(
        self,
        replies: Iterable[ServerReply] = (),
        *,
        context_limit: int | None = None,
        model: str = "fake-model",
    ) -> None:
        self._script: deque[ServerReply] = deque(replies)
        self.context_limit = context_limit
        self.model = model
        self.requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> FakeProviderServer:
        if self._server is not None:
            return self
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"fake-{self.wire}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the server is not running; call start() or use `with`")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``base_url=``)."""
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: ServerReply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        return len(self._script)

    # -- per request --------------------------------------------------------------------

    def _next(self, prompt: str) -> ServerReply:
        with self._lock:
            if self.context_limit is not None and len(prompt) > self.context_limit:
                return ServerReply.context_length()
            return self._script.popleft() if self._script else ServerReply.ok()

    def handle(
        self, method: str, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, str], bytes]:
        prompt = self.prompt_of(body)
        request = ReceivedRequest(method, path, headers, body, prompt)
        with self._lock:
            self.requests.append(request)
        if not self.accepts(method, path):
            return 404, {}, json.dumps({"error": {"message": f"no route {path}"}}).encode()
        reply = self._next(prompt)
        if reply.kind == "hang":
            self._stopping.wait(reply.seconds)
            reply = ServerReply.ok()
        status, payload, extra = self.render(reply, request)
        hdrs = dict(extra)
        if reply.retry_after is not None:
            hdrs["retry-after"] = f"{reply.retry_after:g}"
        if reply.retry_after_ms is not None:
            hdrs["retry-after-ms"] = str(reply.retry_after_ms)
        if isinstance(payload, (bytes, str)):
            raw = payload.encode() if isinstance(payload, str) else payload
        else:
            raw = json.dumps(payload, ensure_ascii=False).encode()
        return status, hdrs, raw

    def reply_text(self, reply: ServerReply, request: ReceivedRequest) -> str:
        """The assistant text of a successful reply (JSON-wrapped when asked for JSON)."""
        if reply.kind == "invalid_json":
            return reply.text or ""
        text = reply.text if reply.text is not None else default_summary(request.prompt)
        if reply.kind == "text" and request.structured:
            return json.dumps({"summary": text}, ensure_ascii=False)
        return text

    @staticmethod
    def usage(reply: ServerReply, request: ReceivedRequest, text: str) -> tuple[int, int]:
        return (
            reply.input_tokens
            if reply.input_tokens is not None
            else max(1, len(request.prompt) // 4),
            reply.output_tokens if reply.output_tokens is not None else max(1, len(text) // 4),
        )

    # -- wire format hooks --------------------------------------------------------------

    def accepts(self, method: str, path: str) -> bool:
        raise NotImplementedError(f"{type(self).__name__}.accepts")

    def prompt_of(self, body: dict[str, Any]) -> str:
        raise NotImplementedError(f"{type(self).__name__}.prompt_of")

    def render(
        self, reply: ServerReply, request: ReceivedRequest
    ) -> tuple[int, Any, dict[str, str]]:
        raise NotImplementedError(f"{type(self).__name__}.render")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(part.get("text", "")) for part in content if isinstance(part, dict)
        )
    return ""


class OpenAIServer(FakeProviderServer):
    """``POST /v1/chat/completions``. ``url`` ends in ``/v1`` (what the SDK's base_url wants)."""

    wire = "openai"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def accepts(self, method: str, path: str) -> bool:
        return method == "POST" and path.rstrip("/").endswith("/chat/completions")

    def prompt_of(self, body: dict[str, Any]) -> str:
        return "\n\n".join(_text_of(m.get("content")) for m in body.get("messages", []))

    def render(
        self, reply: ServerReply, request: ReceivedRequest
    ) -> tuple[int, Any, dict[str, str]]:
        def error(
            status: int, message: str, kind: str, code: str | None
        ) -> tuple[int, Any, dict[str, str]]:
            return (
                status,
                {"error": {"message": message, "type": kind, "param": None, "code": code}},
                {},
            )

        if reply.kind == "rate_limit":
            return error(429, "Rate limit reached for requests", "requests", "rate_limit_exceeded")
        if reply.kind == "quota":
            return error(
                429,
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                "insufficient_quota",
            )
        if reply.kind in ("server_error", "overloaded"):
            return error(reply.status, "The server had an error", "server_error", None)
        if reply.kind == "context_length":
            return error(
                400,
                "This model's maximum context length is 128000 tokens. However, your "
                "messages resulted in 130000 tokens.",
                "invalid_request_error",
                "context_length_exceeded",
            )
        if reply.kind == "error":
            return error(reply.status, reply.message, "invalid_request_error", reply.code)
        text = self.reply_text(reply, request)
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        finish = "stop"
        if reply.kind == "refusal":
            message = {"role": "assistant", "content": None, "refusal": text}
        elif reply.kind == "truncated":
            finish = "length"
        prompt_tokens, completion_tokens = self.usage(reply, request, text)
        return (
            200,
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": request.body.get("model", self.model),
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
            {},
        )


class AnthropicServer(FakeProviderServer):
    """``POST /v1/messages``."""

    wire = "anthropic"

    def accepts(self, method: str, path: str) -> bool:
        return method == "POST" and path.rstrip("/").endswith("/v1/messages")

    def prompt_of(self, body: dict[str, Any]) -> str:
        system = _text_of(body.get("system", ""))
        turns = [_text_of(m.get("content")) for m in body.get("messages", [])]
        return "\n\n".join([system, *turns]) if system else "\n\n".join(turns)

    def render(
        self, reply: ServerReply, request: ReceivedRequest
    ) -> tuple[int, Any, dict[str, str]]:
        def error(status: int, kind: str, message: str) -> tuple[int, Any, dict[str, str]]:
            return status, {"type": "error", "error": {"type": kind, "message": message}}, {}

        if reply.kind == "rate_limit":
            return error(
                429, "rate_limit_error", "Number of request tokens has exceeded your rate limit"
            )
        if reply.kind == "quota":
            return error(
                400,
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API.",
            )
        if reply.kind == "overloaded":
            return error(529, "overloaded_error", "Overloaded")
        if reply.kind == "server_error":
            return error(reply.status, "api_error", "Internal server error")
        if reply.kind == "context_length":
            return error(
                400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
            )
        if reply.kind == "error":
            return error(reply.status, reply.code or "invalid_request_error", reply.message)
        text = self.reply_text(reply, request)
        stop = {"refusal": "refusal", "truncated": "max_tokens"}.get(reply.kind, "end_turn")
        input_tokens, output_tokens = self.usage(reply, request, text)
        return (
            200,
            {
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": request.body.get("model", self.model),
                "content": [{"type": "text", "text": text}] if text else [],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            },
            {},
        )


class GeminiServer(FakeProviderServer):
    """``POST /v1beta/models/{model}:generateContent``."""

    wire = "gemini"

    def accepts(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith(":generateContent")

    def prompt_of(self, body: dict[str, Any]) -> str:
        def parts(content: Any) -> str:
            if not isinstance(content, dict):
                return ""
            return "\n".join(
                str(p.get("text", "")) for p in content.get("parts", []) if isinstance(p, dict)
            )

        system = parts(body.get("systemInstruction") or body.get("system_instruction"))
        turns = [parts(c) for c in body.get("contents", [])]
        return "\n\n".join([system, *turns]) if system else "\n\n".join(turns)

    def render(
        self, reply: ServerReply, request: ReceivedRequest
    ) -> tuple[int, Any, dict[str, str]]:
        def error(
            status: int, state: str, message: str, details: list[dict[str, Any]] | None = None
        ) -> tuple[int, Any, dict[str, str]]:
            body = {"error": {"code": status, "message": message, "status": state}}
            if details:
                body["error"]["details"] = details
            return status, body, {}

        if reply.kind == "rate_limit":
            delay = f"{reply.retry_after:g}s" if reply.retry_after is not None else "1s"
            return error(
                429,
                "RESOURCE_EXHAUSTED",
                "Resource has been exhausted (e.g. check quota).",
                [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}],
            )
        if reply.kind == "quota":
            return error(
                429,
                "RESOURCE_EXHAUSTED",
                "You exceeded your current quota.",
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [
                            {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}
                        ],
                    }
                ],
            )
        if reply.kind in ("server_error", "overloaded"):
            status = 503 if reply.kind == "overloaded" else reply.status
            return error(status, "INTERNAL", "An internal error has occurred.")
        if reply.kind == "context_length":
            return error(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1200000) exceeds the "
                "maximum number of tokens allowed (1048576).",
            )
        if reply.kind == "error":
            return error(reply.status, reply.code or "INVALID_ARGUMENT", reply.message)
        text = self.reply_text(reply, request)
        finish = {"refusal": "SAFETY", "truncated": "MAX_TOKENS"}.get(reply.kind, "STOP")
        candidate: dict[str, Any] = {"finishReason": finish, "index": 0}
        if reply.kind != "refusal":
            candidate["content"] = {"parts": [{"text": text}], "role": "model"}
        prompt_tokens, output_tokens = self.usage(reply, request, text)
        return (
            200,
            {
                "candidates": [candidate],
                "usageMetadata": {
                    "promptTokenCount": prompt_tokens,
                    "candidatesTokenCount": output_tokens,
                    "totalTokenCount": prompt_tokens + output_tokens,
                },
                "modelVersion": self.model,
            },
            {},
        )


def _make_handler(server: FakeProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, payload = server.handle("POST", self.path.split("?")[0], headers, body)
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler
