"""The two requests of every chat turn, answered without the middleware chain.

Appending a turn and reading the context are most of what a service answers. Through the
app, each passed ten ASGI layers (the framework's error, telemetry and body-limit layers,
ours for metrics, the body's deadline, the key, the body's size and bugs, then the
framework's exception handlers, its exit stack and its router), each wrapping the
request's ``receive``/``send`` again: more of a turn's CPU than the routes' own work.
:class:`TurnPath` does the same steps in one function for the common request — the same
code where there is code to share (:meth:`.guards.Admission.admit`, the routes' lean twins,
:meth:`.metrics.Metrics.record`, the problem answers of :mod:`.problems`) — and hands
everything else to the app untouched:

- it takes only ``POST /v1/sessions/{id}/messages`` with a JSON body of a declared length
  within the body limit and the heavy-request size, and ``GET /v1/sessions/{id}/context``
  without a body, neither with a query string, and only from an app whose middleware is
  the service's own (``create_app``'s; not in dev mode; not while the framework's
  OpenTelemetry is on, as of :data:`TELEMETRY_CHECK_SECONDS` ago at most);
- the key is checked and the rate charged by the :class:`~.guards.Admission` that
  :class:`~.guards.KeyGate` uses; the body must arrive within
  ``limits.body_timeout_seconds`` (408, as :class:`~.guards.BodyDeadlineMiddleware`);
- a request the lean twin does not take on (e.g. a body that does not validate), or whose
  body read ends otherwise than with the whole body, goes on through the app with what was
  read replayed and its admission kept (scope key :data:`~.guards.ADMITTED`: not charged
  twice), so its answer is the app's own;
- errors are answered as the app's exception handlers answer them, a bug as
  :class:`~.problems.InternalErrorMiddleware` does; every answer is counted and logged as
  :class:`~.metrics.MetricsMiddleware` does.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator, Sequence

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ContextFoldError
from .guards import ADMITTED, Admission, bearer_key, body_by, body_too_slow, reject
from .lean_routes import Twin, twin_of
from .problems import ProblemError, answer_bug, library_problem, problem_response
from .tenancy import ServerState

__all__ = ["TurnPath"]

#: How long the turn path goes by its last look at the framework's OpenTelemetry switch.
TELEMETRY_CHECK_SECONDS = 1.0

_TURN = re.compile(r"/v1/sessions/([A-Za-z0-9._:@~=+-]{1,200})/(messages|context)")


class TurnPath:
    """Answers the turn requests of ``app`` (see the module); ``full`` is the app itself
    (its middleware chain and router), for every other request."""

    def __init__(self, app: FastAPI, full: ASGIApp, admission: Admission) -> None:
        self.app = app
        self.full = full
        self.admission = admission
        self.state: ServerState = app.state.contextfold
        self.middleware = len(app.user_middleware)
        limits = self.state.config.limits
        self.max_length = min(limits.max_body_bytes, limits.heavy_request_bytes)
        self.body_seconds = limits.body_timeout_seconds
        self.telemetry = getattr(app, "_native_telemetry", None)
        self._telemetry_on = False
        self._telemetry_until = 0.0
        self.routes: dict[str, tuple[APIRoute, Twin]] = {}

    def takes(self, scope: Scope) -> bool:
        """Whether this request is one :meth:`__call__` answers (no side effect)."""
        method = scope["method"]
        match = _TURN.fullmatch(scope["path"])
        if match is None or scope.get("root_path") or scope.get("query_string"):
            return False
        if method != ("POST" if match[2] == "messages" else "GET"):
            return False
        if not self._body_within_limits(scope, method == "POST"):
            return False
        if len(self.app.user_middleware) != self.middleware:  # middleware added since
            return False
        return not self._telemetry()

    def _telemetry(self) -> bool:
        """Whether the framework's OpenTelemetry is on (asked at most once a second: the
        question reads the environment several times, a twentieth of a turn's CPU)."""
        now = time.monotonic()
        if now >= self._telemetry_until:
            self._telemetry_until = now + TELEMETRY_CHECK_SECONDS
            self._telemetry_on = self.telemetry is not None and bool(self.telemetry.enabled())
        return self._telemetry_on

    def _body_within_limits(self, scope: Scope, append: bool) -> bool:
        """An append: a JSON body of a declared length within the limits; a context read:
        no body (a declared one goes to the app, whose body limit may refuse it)."""
        length = -1
        json = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                length = int(value) if value.isdigit() else -1
            elif name == b"content-type":
                json = value.partition(b";")[0].strip().lower() == b"application/json"
            elif name == b"transfer-encoding":
                return False
        if not append:
            return length in (-1, 0)
        return json and 0 <= length <= self.max_length

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _TURN.fullmatch(scope["path"])
        assert match is not None  # (takes() said so)
        started = time.perf_counter()
        original = dict(scope)
        route, twin = self._route(match[2])
        scope["app"] = self.app
        scope["router"] = self.app.router
        scope["route"] = route
        scope["endpoint"] = route.endpoint
        scope["path_params"] = {"session_id": match[1]}
        status = 500
        answered = True
        responding = False
        try:
            admitted = await self.admission.admit(scope, bearer_key(scope))
            if isinstance(admitted, ProblemError):
                status = admitted.status
                await reject(send, scope, admitted)
                return
            scope.setdefault("state", {})["tenant"] = admitted
            read: list[Message] = []
            if scope["method"] == "POST":
                deadline = asyncio.get_running_loop().time() + self.body_seconds
                try:
                    whole = await _read_body(deadline, receive, read)
                except asyncio.TimeoutError:
                    status = 408
                    await reject(send, scope, body_too_slow(self.body_seconds))
                    return
                if not whole:
                    answered = False
            response = None
            if answered:
                response = await twin(Request(scope, _replay(read, receive)))
            if response is None:
                answered = False
                again = {**original, "state": scope.get("state", {}), ADMITTED: admitted}
                await self.full(again, _replay(read, receive), send)
                return
            status = response.status_code
            responding = True
            await response(scope, receive, send)
        except ProblemError as exc:
            status = exc.status
            await problem_response(exc, scope["path"])(scope, receive, send)
        except ContextFoldError as exc:
            problem = library_problem(exc, scope["method"], route.path)
            status = problem.status
            await problem_response(problem, scope["path"])(scope, receive, send)
        except Exception as exc:  # a bug: as InternalErrorMiddleware answers it
            status = 500
            await answer_bug(scope, send, exc, started=responding)
        finally:
            if answered:
                self.state.metrics.record(scope, status, time.perf_counter() - started)

    def _route(self, kind: str) -> tuple[APIRoute, Twin]:
        """The route of ``kind`` ("messages", "context") and its lean twin: the route the
        router matches for it (its template labels the metrics)."""
        hit = self.routes.get(kind)
        if hit is None:
            scope = {"type": "http", "path": f"/v1/sessions/-/{kind}", "root_path": "",
                     "method": "POST" if kind == "messages" else "GET"}
            route = next(
                r for r in _routes(self.app.router.routes)
                if isinstance(r, APIRoute) and r.matches(scope)[0] is Match.FULL
            )
            twin = twin_of(route.endpoint)
            assert twin is not None, f"{route.path} has no lean twin"
            hit = self.routes[kind] = (route, twin)
        return hit


def _routes(routes: Sequence[BaseRoute]) -> Iterator[BaseRoute]:
    """``routes`` and those of the routers included in them, in order."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included.routes)
        else:
            yield route


async def _read_body(deadline: float, receive: Receive, read: list[Message]) -> bool:
    """Receive the body into ``read`` by ``deadline`` (else ``TimeoutError``): True once
    it is whole, False if the read ended otherwise (the client went away)."""
    while True:
        message = await body_by(deadline, receive)
        read.append(message)
        if message["type"] != "http.request":
            return False
        if not message.get("more_body", False):
            return True


def _replay(read: list[Message], receive: Receive) -> Receive:
    """``receive`` that first gives back the messages already ``read``."""
    pending: Iterator[Message] = iter(list(read))

    async def replayed() -> Message:
        for message in pending:
            return message
        return await receive()

    return replayed
