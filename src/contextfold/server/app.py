"""The app factory: ``create_app(config, store_url) -> FastAPI``.

Routers plug in here (see ``README_SEAMS.md``); error handling turns everything into
``application/problem+json`` (:mod:`contextfold.server.problems`); middleware enforces the
body limit and records metrics and the access log.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Receive, Scope, Send

from .. import __version__
from ..errors import ContextFoldError
from ..stores import default_db_path
from .catalog import Catalog, open_catalog
from .config import ServerConfig
from .guards import Admission, BodyDeadlineMiddleware, DevGuard, KeyGate
from .limits import BodyLimitMiddleware, RateLimiter
from .metrics import METHODS, Metrics, MetricsMiddleware
from .problems import (
    PROBLEM_MEDIA_TYPE,
    InternalErrorMiddleware,
    ProblemError,
    library_problem,
    problem_response,
)
from .shared_limits import BucketBackend, StoreBuckets
from .tenancy import ServerState
from .turn_path import TurnPath

__all__ = ["create_app", "resolve_store_url"]

log = logging.getLogger("contextfold.server")

API_DESCRIPTION = """\
contextfold over HTTP: bounded LLM conversation memory with a rolling summary.

Every `/v1` request needs `Authorization: Bearer KEY` (create one with
`contextfold keys create --tenant NAME`). Session ids are scoped to the key's tenant.
Errors are `application/problem+json` (RFC 9457) with a stable `code`.
"""


def resolve_store_url(db: str | Path | None) -> str:
    """A store URL from ``--db``/``--store``: URLs pass through, paths become SQLite URLs,
    None is the CLI's default SQLite file."""
    if isinstance(db, str) and "://" in db:
        return db
    path = Path(db) if db is not None else default_db_path()
    return f"sqlite:///{path.expanduser().resolve()}"


def create_app(
    config: ServerConfig | None = None, store_url: str | None = None, *, freeze_heap: bool = False
) -> FastAPI:
    """The HTTP service for ``store_url`` (default: ``config.store``, else the CLI's
    SQLite file). ``freeze_heap``: once started, move every object alive to the collector's
    permanent generation (for a process that runs nothing but this app; see
    :func:`app_from_env`)."""
    config = config or ServerConfig()
    url = resolve_store_url(store_url or config.store)
    metrics = Metrics()
    catalog = open_catalog(url)
    state = ServerState(config, url, catalog, _rate_limiter(config, catalog), metrics)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            await state.memory(config.defaults).stats("readyz/probe")
            state.catalog.setup()
        except ContextFoldError as exc:  # serve anyway: /readyz says 503 until it answers
            log.warning("store not reachable at startup: %s", type(exc).__name__)
        if freeze_heap:
            gc.collect()
            gc.freeze()
        yield
        await state.close()
        close = getattr(state.limiter.backend, "close", None)
        if close is not None:
            close()

    app = ServiceApp(
        title="contextfold",
        version=__version__,
        description=API_DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=lambda route: route.name,
        docs_url=None,  # served offline by .api_docs, not from a CDN
        redoc_url=None,
    )
    app.state.contextfold = state
    app.router.redirect_slashes = False  # see _slash_redirect
    _install_error_handlers(app)
    _include_routers(app)
    admission = Admission(state)
    _add_middleware(app, state, admission)
    if not app.state.contextfold_dev:  # dev mode: keyless requests, origin checks
        app.turn_path = TurnPath(app, partial(FastAPI.__call__, app), admission)
    _tidy_openapi(app)
    return app


class ServiceApp(FastAPI):
    """The service's app: the requests of a chat turn answered by its
    :class:`~.turn_path.TurnPath` when it takes them, everything else by FastAPI."""

    turn_path: TurnPath | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = self.turn_path
        if path is not None and scope["type"] == "http" and path.takes(scope):
            await path(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _rate_limiter(config: ServerConfig, catalog: Catalog) -> RateLimiter:
    """The keys' rate limit: buckets shared by every server process (in Redis when the
    config names one, else in the store's database), or per process."""
    limits = config.limits
    rate, burst = limits.requests_per_second, float(limits.burst)
    backend: BucketBackend | None = None
    if limits.rate_limit_scope == "store" and rate > 0:
        if config.redis:
            from .redis_buckets import RedisBuckets, check_redis

            check_redis(config.redis)
            backend = RedisBuckets(config.redis, rate, burst)
        else:
            backend = StoreBuckets(catalog, rate, burst)
    return RateLimiter(rate, limits.burst, backend=backend)


def _add_middleware(app: FastAPI, state: ServerState, admission: Admission) -> None:
    """Outermost last: metrics and the access log see every answer; the body's deadline
    runs from the end of the headers (a wait for a heavy turn counts); the key is checked
    (and the rate charged) before the body limit and before any body is read. The turn
    path (:mod:`.turn_path`) does these steps itself: a step added here needs its twin
    there."""
    limits = state.config.limits
    app.add_middleware(InternalErrorMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_bytes=limits.max_body_bytes)
    app.add_middleware(
        KeyGate, state=state, dev=bool(app.state.contextfold_dev), admission=admission
    )
    app.add_middleware(BodyDeadlineMiddleware, seconds=limits.body_timeout_seconds)
    if app.state.contextfold_dev:
        app.add_middleware(DevGuard)
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)


def _include_routers(app: FastAPI) -> None:
    """Every router of the service. Another front door (e.g. the inspector's ``/ui``) adds
    its ``app.include_router(...)`` line here."""
    from . import ui
    from .routes import ops, search, sessions

    app.include_router(sessions.router)
    app.include_router(search.router)
    app.include_router(ops.router)
    ui.install(app)  # the inspector: /ui/ and its /v1 read routes
    from . import api_docs

    api_docs.install(app)  # /docs with Swagger UI's files served from here


def _problem_response(problem: ProblemError, request: Request) -> JSONResponse:
    return problem_response(problem, request.url.path)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ProblemError)
    async def on_problem(request: Request, exc: ProblemError) -> JSONResponse:
        return _problem_response(exc, request)

    @app.exception_handler(ContextFoldError)
    async def on_library_error(request: Request, exc: ContextFoldError) -> JSONResponse:
        return _problem_response(library_problem(exc, request.method, _route(request)), request)

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        content_type = request.headers.get("content-type", "")
        not_json = bool(content_type) and "json" not in content_type.lower()
        if any(e.get("type") == "json_invalid" for e in errors):
            problem = ProblemError(400, "malformed_json", "the request body is not valid JSON")
        elif not_json and any(tuple(e.get("loc", ())) == ("body",) for e in errors):
            problem = ProblemError(
                400, "malformed_json", "send the body as JSON with Content-Type application/json"
            )
        else:
            problem = ProblemError(
                422,
                "validation_error",
                "; ".join(_field_error(e) for e in errors[:5]),
                errors=[
                    {"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in errors[:50]
                ],
            )
        return _problem_response(problem, request)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 405:
            problem = ProblemError(
                405, "method_not_allowed", f"{request.method} is not allowed here",
                headers={"Allow": _allowed(request)},
            )
        elif exc.status_code == 404:
            moved = _slash_redirect(request)
            if moved is not None:
                return moved  # type: ignore[return-value]
            problem = ProblemError(404, "not_found", "no such route")
        elif exc.status_code == 400:
            problem = ProblemError(400, "malformed_json", "the request body could not be read")
        else:
            problem = ProblemError(500, "internal_error")
            problem.status = exc.status_code
        return _problem_response(problem, request)


def _allowed(request: Request) -> str:
    """Every method some route of this path answers (Starlette's own ``Allow`` named only
    the first route's: GET and POST of one path are two routes)."""
    from starlette.routing import Match

    routes = request.app.router.routes
    return ", ".join(
        method
        for method in sorted(METHODS)
        if any(r.matches({**request.scope, "method": method})[0] is Match.FULL for r in routes)
    )


def _slash_redirect(request: Request) -> RedirectResponse | None:
    """The route this path names with or without its trailing slash, as a 307 whose
    ``Location`` is a path (Starlette's own redirect built it from the client's ``Host``
    header, so a forged Host sent the client elsewhere)."""
    from starlette.routing import Match

    path = request.url.path
    if path == "/":
        return None
    other = path.rstrip("/") if path.endswith("/") else path + "/"
    scope = {**request.scope, "path": other}
    if not any(route.matches(scope)[0] is not Match.NONE for route in request.app.router.routes):
        return None
    query = request.url.query
    return RedirectResponse(other + (f"?{query}" if query else ""), status_code=307)


def _field_error(error: Any) -> str:
    loc = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
    return f"{loc}: {error.get('msg', 'invalid')}" if loc else str(error.get("msg", "invalid"))


def _route(request: Request) -> str:
    return getattr(request.scope.get("route"), "path", None) or "unmatched"


def _tidy_openapi(app: FastAPI) -> None:
    """Problem responses are documented as ``application/problem+json`` only, and the
    bearer scheme is declared for ``/v1``."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for path, item in schema.get("paths", {}).items():
            for operation in item.values():
                for status, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    if status[:1] in "45" and PROBLEM_MEDIA_TYPE in content:
                        content.pop("application/json", None)
                if path.startswith("/v1"):
                    operation["security"] = [{"bearer": []}]
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "contextfold keys create",
        }
        for name in ("HTTPValidationError", "ValidationError"):
            components.get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def app_from_env() -> FastAPI:
    """The app ``contextfold serve`` runs in each worker process: store and config from
    ``CONTEXTFOLD_SERVER_STORE`` / ``CONTEXTFOLD_SERVER_CONFIG``."""
    import os
    import sys

    from .config import load_config

    # A fold running in a worker thread holds the interpreter lock for up to the switch
    # interval each time the event loop wants it back (after every socket read or write):
    # at the default 5 ms a small request took ~30 ms next to a large append's fold.
    sys.setswitchinterval(0.0005)
    config = load_config(os.environ.get("CONTEXTFOLD_SERVER_CONFIG"))
    # The modules, the tokenizer's tables and the app are ~70k objects the cyclic garbage
    # collector walked again at every full collection: 20-180 ms with the event loop
    # stopped, every request in flight waiting (the context reads' p99). Frozen once
    # started, a full collection walks only what the requests left alive.
    return create_app(config, os.environ.get("CONTEXTFOLD_SERVER_STORE"), freeze_heap=True)
