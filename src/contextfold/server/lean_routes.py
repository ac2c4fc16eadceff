"""Routes whose common request skips the framework's parameter solving.

FastAPI answers a request by solving every declared parameter anew (path, query, body,
each through its own validator and bookkeeping), then the route's function. For the two
calls of every chat turn — append, read the context — that solving cost more of a
request's CPU than the route's own work. A :class:`LeanRoute` whose endpoint has a *lean
twin* (:func:`lean_twin`) lets the twin answer first: it reads the request the way the
declared parameters would (the same model, the same patterns) and calls the endpoint
itself, or returns None for anything it does not take on — a query string it does not
read, another content type, a body that does not validate, a session id off the pattern —
and FastAPI's own handler answers that request as before. So every error is the one the
declared parameters give, and the OpenAPI document comes from the declarations alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi.routing import APIRoute

__all__ = ["LeanRoute", "Twin", "lean_twin", "twin_of"]

#: An endpoint's lean twin: its answer to ``request``, or None to leave it to FastAPI.
Twin = Callable[[Request], Awaitable[Response | None]]

F = TypeVar("F", bound=Callable[..., Any])

_TWINS: dict[Callable[..., Any], Twin] = {}


def lean_twin(endpoint: Callable[..., Any]) -> Callable[[F], F]:
    """Register the decorated function as ``endpoint``'s lean twin. The twin must answer
    exactly as the endpoint called with its declared parameters would, for every request
    it does not return None for."""

    def register(twin: F) -> F:
        _TWINS[endpoint] = twin
        return twin

    return register


def twin_of(endpoint: Callable[..., Any]) -> Twin | None:
    """``endpoint``'s lean twin, if it has one."""
    return _TWINS.get(endpoint)


class LeanRoute(APIRoute):
    """An ``APIRoute`` that lets its endpoint's lean twin answer first (see the module)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        standard = super().get_route_handler()
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            twin = _TWINS.get(endpoint)  # (registered after the route: looked up here)
            if twin is not None:
                response = await twin(request)
                if response is not None:
                    return response
            return await standard(request)

        return handler
