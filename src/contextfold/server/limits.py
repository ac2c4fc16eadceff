"""Request limits: body size (an ASGI middleware, before any parsing) and a per-key rate.

The body limit counts the bytes actually received, so a chunked body without
``Content-Length`` is held to it too; a declared ``Content-Length`` over the limit is refused
before the body is read. The rate limit is a token bucket per API key *per server process*
(``requests_per_second``, ``burst``): with ``--workers N`` a key may reach N times the rate in
total. Over the limit: 429 ``rate_limited`` with ``Retry-After`` (whole seconds, at least 1).
"""

from __future__ import annotations

import math
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .problems import PROBLEM_MEDIA_TYPE, ProblemError

__all__ = ["BodyLimitMiddleware", "RateLimiter", "send_problem"]


class RateLimiter:
    """Token buckets keyed by key id (or client address: ``subject`` names it in the 429);
    ``rate`` 0 disables the limit. A request takes ``cost`` tokens (at most ``burst``, so
    the largest request fits a full bucket)."""

    def __init__(self, rate: float, burst: int, *, subject: str = "this key") -> None:
        self.rate = rate
        self.burst = float(burst)
        self.subject = subject
        self._buckets: dict[str, tuple[float, float]] = {}

    def _tokens(self, key_id: str, now: float) -> float:
        tokens, last = self._buckets.get(key_id, (self.burst, now))
        return min(self.burst, tokens + (now - last) * self.rate)

    def exhausted(self, key_id: str) -> bool:
        """True when ``key_id`` could not take one token now (nothing is taken)."""
        return self.rate > 0 and self._tokens(key_id, time.monotonic()) < 1.0

    def check(self, key_id: str, cost: float = 1.0) -> None:
        """Take ``cost`` tokens for ``key_id`` or raise 429 ``rate_limited``."""
        if self.rate <= 0:
            return
        cost = min(max(cost, 1.0), self.burst)
        now = time.monotonic()
        tokens = self._tokens(key_id, now)
        if tokens < cost:
            self._buckets[key_id] = (tokens, now)
            wait = max(1, math.ceil((cost - tokens) / self.rate))
            raise ProblemError(
                429,
                "rate_limited",
                f"over {self.rate:g} requests per second for {self.subject}; retry in {wait} s",
                headers={"Retry-After": str(wait)},
            )
        self._buckets[key_id] = (tokens - cost, now)
        if len(self._buckets) > 100_000:
            self._buckets.clear()

    async def acheck(self, key_id: str, cost: float = 1.0) -> None:
        """:meth:`check` for a caller on the event loop (a shared backend may wait)."""
        self.check(key_id, cost)


async def send_problem(send: Send, problem: ProblemError, path: str) -> None:
    import json

    body = json.dumps(problem.body(path)).encode()
    headers = [
        (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
        (b"content-length", str(len(body)).encode()),
        *((k.lower().encode(), v.encode()) for k, v in problem.headers.items()),
    ]
    await send({"type": "http.response.start", "status": problem.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """413 ``payload_too_large`` for a body over ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = ProblemError(
            413, "payload_too_large", f"the request body is over {self.max_bytes} bytes"
        )
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await send_problem(send, too_large, scope.get("path", ""))
                    return
        received = 0
        exceeded = False
        replaced = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    raise too_large
            return message

        async def guarded_send(message: Message) -> None:
            # The framework may turn the error raised while reading into its own 400;
            # whatever it answers, a body over the limit is answered with the 413.
            nonlocal replaced
            if not exceeded:
                await send(message)
            elif message["type"] == "http.response.start" and not replaced:
                replaced = True
                await send_problem(send, too_large, scope.get("path", ""))

        try:
            await self.app(scope, limited_receive, guarded_send)
        except ProblemError as exc:
            if exc is not too_large or replaced:
                raise
            replaced = True
            await send_problem(send, too_large, scope.get("path", ""))
