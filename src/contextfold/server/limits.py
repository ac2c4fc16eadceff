"""Request limits: body size (an ASGI middleware, before any parsing) and a per-key rate.

The body limit counts the bytes actually received, so a chunked body without
``Content-Length`` is held to it too; a declared ``Content-Length`` over the limit is refused
before the body is read. The rate limit is a token bucket per API key (``requests_per_second``,
``burst``), kept in the store's database and shared by every server process on it
(``rate_limit_scope: store``, the default; see :mod:`.shared_limits`), or per process
(``process``: with ``--workers N`` a key may then reach N times the rate in total). Over the
limit: 429 ``rate_limited`` with ``Retry-After`` (whole seconds, at least 1).
"""

from __future__ import annotations

import math

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .problems import PROBLEM_MEDIA_TYPE, ProblemError
from .shared_limits import BucketBackend, LocalBuckets

__all__ = ["BodyLimitMiddleware", "RateLimiter", "send_problem"]


class RateLimiter:
    """A rate limit per key id (``subject`` names what is limited in the 429); ``rate`` 0
    disables it. A request takes ``cost`` tokens (at least 1, at most ``burst``, so the
    largest request fits a full bucket). The buckets live in ``backend``
    (:mod:`contextfold.server.shared_limits`): this process's memory by default, or the
    store's database, shared by every server process."""

    def __init__(
        self, rate: float, burst: int, *, subject: str = "this key",
        backend: BucketBackend | None = None,
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.subject = subject
        self.backend: BucketBackend = backend or LocalBuckets(rate, self.burst)

    def exhausted(self, key_id: str) -> bool:
        """True when this process knows ``key_id`` could not take one token now (no I/O;
        with shared buckets, False may still be refused by :meth:`check`)."""
        return self.rate > 0 and isinstance(self.backend, LocalBuckets) and (
            self.backend.available(key_id) < 1.0
        )

    def _cost(self, cost: float) -> float:
        return min(max(cost, 1.0), self.burst)

    def check(self, key_id: str, cost: float = 1.0) -> None:
        """Take ``cost`` tokens for ``key_id`` or raise 429 ``rate_limited`` (shared buckets:
        may block on the database when this process's leased tokens run out — on an event
        loop use :meth:`acheck`)."""
        if self.rate > 0:
            self._answer(self.backend.take(key_id, self._cost(cost)))

    async def acheck(self, key_id: str, cost: float = 1.0) -> None:
        """:meth:`check` without blocking the event loop."""
        if self.rate > 0:
            self._answer(await self.backend.atake(key_id, self._cost(cost)))

    def _answer(self, wait: float) -> None:
        if wait <= 0:
            return
        seconds = max(1, math.ceil(wait)) if math.isfinite(wait) else 60
        raise ProblemError(
            429,
            "rate_limited",
            f"over {self.rate:g} requests per second for {self.subject}; retry in {seconds} s",
            headers={"Retry-After": str(seconds)},
        )


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
        # the problem is built only for a body over the limit (its detail is checked and
        # bounded by ProblemError: work every request paid for nothing)
        too_large: ProblemError | None = None

        def over() -> ProblemError:
            nonlocal too_large
            if too_large is None:
                too_large = ProblemError(
                    413, "payload_too_large", f"the request body is over {self.max_bytes} bytes"
                )
            return too_large

        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await send_problem(send, over(), scope.get("path", ""))
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
                    raise over()
            return message

        async def guarded_send(message: Message) -> None:
            # The framework may turn the error raised while reading into its own 400;
            # whatever it answers, a body over the limit is answered with the 413.
            nonlocal replaced
            if not exceeded:
                await send(message)
            elif message["type"] == "http.response.start" and not replaced:
                replaced = True
                await send_problem(send, over(), scope.get("path", ""))

        try:
            await self.app(scope, limited_receive, guarded_send)
        except ProblemError as exc:
            if too_large is None or exc is not too_large or replaced:
                raise
            replaced = True
            await send_problem(send, too_large, scope.get("path", ""))
