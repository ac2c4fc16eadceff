"""Guards that run before a request's body is read: the key check (with failed attempts
limited per client address) and a deadline for receiving the body.

:class:`KeyGate` answers every ``/v1`` request without a valid key with 401 before one
byte of its body is read, so a stalled or malformed upload without a key costs nothing,
and a client address that keeps failing (no key, a wrong or revoked one) is answered 429
``rate_limited`` from then on, a second later and without a key lookup — a keyless flood
stays cheap, slows itself down, and does not touch the keyed tenants' rate or the key
cache. A request with a valid key is charged
to the key's rate here, by its declared size (:func:`request_cost`), also before its body
is read. A tenant runs at most ``limits.heavy_requests_per_tenant`` requests with a body
over ``limits.heavy_request_bytes`` at once; its next large ones wait their turn, so one
tenant's large appends cannot fill the process with work while small requests wait.

:class:`BodyDeadlineMiddleware` gives the whole body ``limits.body_timeout_seconds`` from
the end of the headers; a slower body is answered 408 and its connection closed. (The
headers' own deadline is kept by the HTTP protocol, :mod:`.protocol`.)

A rejection sent before the body was read carries ``Connection: close``: the server does
not wait for the rest of a body it will not use.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .keys import Tenant
from .limits import RateLimiter, send_problem
from .problems import ProblemError
from .tenancy import ServerState

__all__ = [
    "ADMITTED",
    "Admission",
    "BodyDeadlineMiddleware",
    "DevGuard",
    "HeavyTurns",
    "KeyGate",
    "bearer_key",
    "body_by",
    "body_too_slow",
    "charge_messages",
    "declared_length",
    "reject",
    "request_cost",
]

#: The scope key of a request :mod:`.turn_path` admitted (its tenant) before handing it to
#: the middleware chain: :class:`KeyGate` lets it through without charging it again.
ADMITTED = "contextfold.admitted"

#: Seconds before an address over its failed key checks gets its 429.
BLOCKED_PAUSE = 1.0

_UNAUTHORIZED = (
    "send a valid API key in the Authorization header as Bearer KEY "
    "(create one with: contextfold keys create --tenant NAME)"
)


def declared_length(scope: Scope) -> int:
    """The request's ``Content-Length`` (0 when absent or not a number)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return 0
    return 0


def request_cost(body_bytes: int, bytes_per_unit: int) -> float:
    """What a request takes from its key's bucket before its body is read: 1, plus 1 per
    started ``bytes_per_unit`` of declared body beyond the first."""
    if body_bytes <= bytes_per_unit:
        return 1.0
    return float(1 + -(-(body_bytes - bytes_per_unit) // bytes_per_unit))


async def charge_messages(state: ServerState, key_id: str, messages: int) -> None:
    """Charge an append's messages to its key (1 token per ``cost_messages_per_token``
    started beyond the first ones; the request itself was charged by :class:`KeyGate`)."""
    extra = messages // state.config.limits.cost_messages_per_token
    if extra:
        await state.limiter.acheck(key_id, cost=float(extra))


class HeavyTurns:
    """Per-tenant turns for large requests: at most ``per_tenant`` at once each."""

    def __init__(self, per_tenant: int) -> None:
        self.per_tenant = per_tenant
        self._running: dict[str, tuple[asyncio.Semaphore, int]] = {}

    @contextlib.asynccontextmanager
    async def turn(self, tenant: str) -> AsyncIterator[None]:
        semaphore, users = self._running.get(tenant, (asyncio.Semaphore(self.per_tenant), 0))
        self._running[tenant] = (semaphore, users + 1)
        try:
            async with semaphore:
                yield
        finally:
            semaphore, users = self._running[tenant]
            if users <= 1:
                del self._running[tenant]
            else:
                self._running[tenant] = (semaphore, users - 1)


def _client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "-"


async def reject(send: Send, scope: Scope, problem: ProblemError) -> None:
    """Answer ``problem`` before the body was read (with ``Connection: close``)."""
    problem.headers.setdefault("Connection", "close")
    await send_problem(send, problem, scope.get("path", ""))


class Admission:
    """The key check of a ``/v1`` request: the tenant of a valid key with the request
    charged to the key's rate, else the problem to answer (401; 429 for a key over its
    rate, or for a client address over its failed attempts). One per app: the failed
    attempts of an address are counted once, whichever path its requests take."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        limits = state.config.limits
        self.failures = RateLimiter(
            limits.failed_auth_per_second, limits.failed_auth_burst, subject="this address"
        )

    async def admit(self, scope: Scope, key: str | None) -> Tenant | ProblemError:
        """The tenant of ``key`` (the request's bearer key, None without one) with the
        request charged to its rate by its declared size, or the problem to reject the
        request with (sent with ``Connection: close``; an address over its failed
        attempts gets its 429 after :data:`BLOCKED_PAUSE`)."""
        address = _client_address(scope)
        if self.failures.exhausted(address):
            # over its failed attempts: only keys valid before are looked up
            tenant = await self.state.keys.resolve(key, known_only=True) if key else None
            if tenant is None:
                try:
                    self.failures.check(address)
                except ProblemError as over:
                    # answered after a pause: a client that floods one request after
                    # another slows itself down, not the server (no work while it waits)
                    await asyncio.sleep(BLOCKED_PAUSE)
                    return over
        else:
            tenant = await self.state.keys.resolve(key) if key else None
        if tenant is None:
            try:
                self.failures.check(address)
            except ProblemError as over:
                return over
            return ProblemError(
                401, "unauthorized", _UNAUTHORIZED,
                headers={"WWW-Authenticate": 'Bearer realm="contextfold"'},
            )
        limits = self.state.config.limits
        cost = request_cost(declared_length(scope), limits.cost_bytes_per_token)
        try:
            await self.state.limiter.acheck(tenant.key_id, cost=cost)
        except ProblemError as over:
            return over
        return tenant


class KeyGate:
    """401 for a ``/v1`` request without a valid key, 429 for an address over its failed
    attempts, the key's rate charged (:class:`Admission`) — all before the body is read. In
    dev mode (``dev=True``) a request without ``Authorization`` passes (it acts as the dev
    tenant)."""

    def __init__(
        self, app: ASGIApp, state: ServerState, *, dev: bool = False,
        admission: Admission | None = None,
    ) -> None:
        self.app = app
        self.state = state
        self.dev = dev
        self.admission = admission or Admission(state)
        self.heavy = HeavyTurns(state.config.limits.heavy_requests_per_tenant)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == "/v1" or path.startswith("/v1/")):
            await self.app(scope, receive, send)
            return
        if scope.get(ADMITTED) is not None:  # :mod:`.turn_path` admitted it already
            await self.app(scope, receive, send)
            return
        key = bearer_key(scope)
        if key is None and self.dev:
            await self.app(scope, receive, send)
            return
        admitted = await self.admission.admit(scope, key)
        if isinstance(admitted, ProblemError):
            await reject(send, scope, admitted)
            return
        scope.setdefault("state", {})["tenant"] = admitted
        if declared_length(scope) <= self.state.config.limits.heavy_request_bytes:
            await self.app(scope, receive, send)
            return
        async with self.heavy.turn(admitted.name):
            await self.app(scope, receive, send)


def bearer_key(scope: Scope) -> str | None:
    """The ``Authorization: Bearer`` key ("" for another scheme or none given; None
    without the header)."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, key = bytes(value).decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and key.strip():
                return key.strip()
            return ""
    return None


if sys.version_info >= (3, 11):

    async def body_by(deadline: float, receive: Receive) -> Message:
        """The next message if it comes before ``deadline`` (event loop time), else
        ``TimeoutError`` — without the task ``wait_for`` makes per call."""
        if deadline <= asyncio.get_running_loop().time():
            raise asyncio.TimeoutError  # (as wait_for: an expired deadline never waits)
        async with asyncio.timeout_at(deadline):
            return await receive()

else:  # pragma: no cover - Python 3.10

    async def body_by(deadline: float, receive: Receive) -> Message:
        return await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())


def body_too_slow(seconds: float) -> ProblemError:
    """The 408 of a body that did not arrive within ``seconds`` of the headers."""
    return ProblemError(
        408, "request_timeout", f"the request body did not arrive within {seconds:g} s"
    )


class BodyDeadlineMiddleware:
    """408 ``request_timeout`` (connection closed) when the body has not fully arrived
    ``seconds`` after the headers."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.seconds
        done = False
        timed_out = False
        started = False

        async def timed_receive() -> Message:
            nonlocal done, timed_out
            if done:
                return await receive()
            try:
                message = await body_by(deadline, receive)
            except asyncio.TimeoutError:  # (builtin TimeoutError only from 3.11)
                timed_out = True
                raise body_too_slow(self.seconds) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                done = True
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if timed_out and not started:
                return  # the framework's own answer to the failed read; ours follows
            started = True
            await send(message)

        try:
            await self.app(scope, timed_receive, tracking_send)
        except ProblemError as exc:
            if not timed_out or started:
                raise
            await reject(send, scope, exc)
            return
        if timed_out and not started:
            await reject(send, scope, body_too_slow(self.seconds))


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _host_name(netloc: str) -> str:
    """``netloc`` without its port (``[::1]:8765`` -> ``[::1]``)."""
    if netloc.startswith("["):
        return netloc.split("]", 1)[0] + "]"
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


class DevGuard:
    """``serve --dev`` answers without keys, so only this machine's own pages may use it:
    403 ``forbidden`` when the ``Host`` is not a loopback name (a DNS-rebinding page
    reaches 127.0.0.1 under its own host name), and for a request that changes something
    (not GET/HEAD/OPTIONS) from another origin: an ``Origin`` other than the server's own,
    or ``Sec-Fetch-Site`` other than same-origin/none."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            bytes(k).decode("latin-1"): bytes(v).decode("latin-1")
            for k, v in scope.get("headers", ())
        }
        host = headers.get("host", "")
        reason = None
        if _host_name(host.lower()) not in _LOOPBACK:
            reason = "dev mode answers only requests addressed to 127.0.0.1 or localhost"
        elif scope.get("method") not in _SAFE_METHODS:
            origin = headers.get("origin")
            site = headers.get("sec-fetch-site")
            if (origin is not None and origin.lower() not in (f"http://{host.lower()}",)) or (
                site is not None and site not in ("same-origin", "none")
            ):
                reason = "dev mode refuses changes requested by a page from another origin"
        if reason is None:
            await self.app(scope, receive, send)
            return
        await send_problem(send, ProblemError(403, "forbidden", reason), scope.get("path", ""))
