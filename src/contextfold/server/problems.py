"""RFC 9457 problem details: every error the service answers is ``application/problem+json``.

Each problem has a stable ``code`` that mirrors the library's error tree
(:mod:`contextfold.errors`) where the error comes from the library, and names the HTTP-level
condition otherwise. Clients switch on ``code``, never on ``detail`` (free text).

=====================  ======  ===============================================
code                   status  when
=====================  ======  ===============================================
malformed_json         400     the body is not JSON
unauthorized           401     no ``Authorization: Bearer`` key, or an unknown/revoked one
forbidden              403     ``serve --dev`` only: a non-loopback ``Host``, or a change
                               requested from another origin
not_found              404     no such session for this tenant (or no such route)
method_not_allowed     405     the route exists, the method does not (``Allow`` lists those
                               that are)
request_timeout        408     the body did not arrive within ``limits.body_timeout_seconds``
fold_conflict          409     ``ConflictError``: the session changed under the fold, or a
                               fold of it is already running
payload_too_large      413     the body is over ``limits.max_body_bytes``
too_many_messages      413     more messages than ``limits.max_messages_per_request``
validation_error       422     ``ValidationError``: not a valid message / sequence
config_error           422     ``ConfigError``: settings or parameters that cannot work
rate_limited           429     over the key's request rate (or the client address's failed
                               key checks); ``Retry-After`` says when
storage_unavailable    503     ``StorageError``: the store failed or is unreachable
internal_error         500     a bug; the response carries no detail (logged by class)
=====================  ======  ===============================================

``detail`` never quotes message content, keys or stack traces.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Literal

from pydantic import BaseModel, Field
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ConfigError, ConflictError, ContextFoldError, StorageError, ValidationError

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "InternalErrorMiddleware",
    "Problem",
    "ProblemCode",
    "ProblemError",
    "answer_bug",
    "library_problem",
    "problem_for_library_error",
    "problem_response",
]

PROBLEM_MEDIA_TYPE = "application/problem+json"

ProblemCode = Literal[
    "malformed_json",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "request_timeout",
    "fold_conflict",
    "payload_too_large",
    "too_many_messages",
    "validation_error",
    "config_error",
    "rate_limited",
    "storage_unavailable",
    "internal_error",
]

_TITLES: dict[str, str] = {
    "malformed_json": "Malformed JSON body",
    "unauthorized": "Missing or unknown API key",
    "forbidden": "Not from this machine",
    "not_found": "Not found",
    "method_not_allowed": "Method not allowed",
    "request_timeout": "Request body too slow",
    "fold_conflict": "Fold conflict",
    "payload_too_large": "Request body too large",
    "too_many_messages": "Too many messages in one request",
    "validation_error": "Invalid input",
    "config_error": "Invalid settings or parameters",
    "rate_limited": "Rate limit exceeded",
    "storage_unavailable": "Store unavailable",
    "internal_error": "Internal server error",
}


class Problem(BaseModel):
    """An RFC 9457 problem details object with contextfold's stable ``code``."""

    type: str = Field(description="URI naming the problem type: urn:contextfold:problem:CODE")
    title: str
    status: int
    code: ProblemCode
    detail: str = ""
    instance: str | None = Field(default=None, description="The request path")
    errors: list[dict[str, Any]] | None = Field(
        default=None, description="Per-field validation errors (location and message only)"
    )


class ProblemError(Exception):
    """Raise anywhere in a route to answer with a problem; ``headers`` are added
    (``Retry-After``, ``WWW-Authenticate``)."""

    def __init__(
        self,
        status: int,
        code: ProblemCode,
        detail: str = "",
        *,
        headers: dict[str, str] | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.status = status
        self.code = code
        self.detail = _bounded(detail)
        self.headers = headers or {}
        self.errors = errors

    def body(self, instance: str | None = None) -> dict[str, Any]:
        problem = Problem(
            type=f"urn:contextfold:problem:{self.code}",
            title=_TITLES[self.code],
            status=self.status,
            code=self.code,
            detail=self.detail,
            instance=instance,
            errors=self.errors,
        )
        return problem.model_dump(exclude_none=True)


def problem_for_library_error(exc: ContextFoldError) -> ProblemError:
    """The problem a library error becomes at the HTTP boundary. ``detail`` is the
    library's message for input errors (it names the offending field, not the content) and
    a fixed sentence for store failures (driver messages may quote SQL or hosts)."""
    if isinstance(exc, ValidationError):
        return ProblemError(422, "validation_error", str(exc))
    if isinstance(exc, ConfigError):
        return ProblemError(422, "config_error", str(exc))
    if isinstance(exc, ConflictError):
        return ProblemError(409, "fold_conflict", "the session changed under the fold; retry")
    if isinstance(exc, StorageError):
        return ProblemError(
            503,
            "storage_unavailable",
            "the store failed or is unreachable; nothing was written",
            headers={"Retry-After": "1"},
        )
    return ProblemError(500, "internal_error", "")


_QUOTED = re.compile("'[^']{25,}'|\"[^\"]{25,}\"")


def _bounded(text: str, limit: int = 300) -> str:
    """One line, bounded, with long quoted literals (which may be message content the
    library quoted with ``!r``) cut out; short ones (roles, field names) stay."""
    text = _QUOTED.sub("'…'", " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


_log = logging.getLogger("contextfold.server")


class InternalErrorMiddleware:
    """A bug in a route: 500 ``internal_error``, logged as one line (method, route
    template, exception class) and swallowed. Left to the framework, the exception went on
    to the server, which logged its traceback — and a traceback quotes the values in play,
    the request's input among them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:  # the one place bugs become 500s
            await answer_bug(scope, send, exc, started=started)


async def answer_bug(scope: Scope, send: Send, exc: Exception, *, started: bool) -> None:
    """A bug's 500 ``internal_error``: one log line (method, route template, exception
    class), then the answer — unless the response had started (the client sees the broken
    body)."""
    route = getattr(scope.get("route"), "path", None) or "unmatched"
    _log.error("%s %s failed: %s", scope.get("method", ""), route, type(exc).__name__)
    if started:
        return
    body = json.dumps(ProblemError(500, "internal_error").body(scope.get("path"))).encode()
    await send({"type": "http.response.start", "status": 500, "headers": [
        (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def problem_response(problem: ProblemError, path: str) -> JSONResponse:
    """The ``application/problem+json`` answer of ``problem`` for the request at ``path``."""
    return JSONResponse(
        problem.body(path),
        status_code=problem.status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=problem.headers,
    )


def library_problem(exc: ContextFoldError, method: str, route: str) -> ProblemError:
    """:func:`problem_for_library_error`, with a store failure (5xx) logged as one line
    (method, route template, exception class)."""
    problem = problem_for_library_error(exc)
    if problem.status >= 500:
        _log.warning("%s %s: %s", method, route, type(exc).__name__)
    return problem
