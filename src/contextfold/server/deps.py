"""FastAPI dependencies every router uses: the server state, the authenticated tenant, and
the tenant's session (``tenant_session``: must exist; ``writable_session``: may be new).

A route that needs a session declares ``scoped: ScopedSession = Depends(tenant_session)``
and works only through ``scoped.memory`` with ``scoped.store_id``; nothing else reaches
the store, so no route can address another tenant's data.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Request

from .keys import Tenant
from .problems import PROBLEM_MEDIA_TYPE, Problem, ProblemError
from .tenancy import SESSION_ID_PATTERN, ScopedSession, ServerState

__all__ = [
    "DEV_TENANT",
    "PROBLEM_RESPONSES",
    "SessionId",
    "current_tenant",
    "get_state",
    "tenant_session",
    "writable_session",
]

SessionId = Annotated[
    str, Path(pattern=SESSION_ID_PATTERN, description="The session's id (scoped to your tenant)")
]

#: The tenant a request without a key acts as under ``contextfold serve --dev`` (loopback
#: only; the app's ``state.contextfold_dev`` is set by :func:`.ui.install`).
DEV_TENANT = "dev"


def _problem(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "model": Problem,
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


#: The problem responses every authenticated route can give (OpenAPI documentation).
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _problem("Malformed JSON body (malformed_json)"),
    401: _problem("Missing, unknown or revoked API key (unauthorized)"),
    404: _problem("No such session for this tenant (not_found)"),
    413: _problem("Body or batch over the limit (payload_too_large, too_many_messages)"),
    422: _problem("Invalid message, parameter or settings (validation_error, config_error)"),
    429: _problem("Over the key's request rate; see Retry-After (rate_limited)"),
    503: _problem("The store failed or is unreachable (storage_unavailable)"),
}


async def get_state(request: Request) -> ServerState:  # async: no thread hop per request
    state: ServerState = request.app.state.contextfold
    return state


async def current_tenant(
    request: Request, state: Annotated[ServerState, Depends(get_state)]
) -> Tenant:
    """The tenant of the request's ``Authorization: Bearer KEY`` (checked, and the key's
    rate charged, by :class:`~contextfold.server.guards.KeyGate` before the body was read);
    401 ``unauthorized`` without a valid key."""
    gated: Tenant | None = request.scope.get("state", {}).get("tenant")
    if gated is not None:
        return gated
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    tenant = None
    if scheme.lower() == "bearer" and key.strip():
        tenant = await state.keys.resolve(key.strip())
    elif not header and getattr(request.app.state, "contextfold_dev", False):
        # dev mode, decided here: the session dependencies may call this function directly
        tenant = Tenant(name=DEV_TENANT, key_id=DEV_TENANT)
    if tenant is None:
        raise ProblemError(
            401,
            "unauthorized",
            "send a valid API key in the Authorization header as Bearer KEY "
            "(create one with: contextfold keys create --tenant NAME)",
            headers={"WWW-Authenticate": 'Bearer realm="contextfold"'},
        )
    request.state.tenant = tenant
    await state.limiter.acheck(tenant.key_id)
    return tenant


# The two below call current_tenant directly rather than through Depends: FastAPI solves
# each dependency of each request anew, and the sub-dependencies were most of what a
# context read cost the server beyond the store.


async def tenant_session(request: Request, session_id: SessionId) -> ScopedSession:
    """The tenant's existing session ``session_id`` (404 ``not_found`` otherwise)."""
    state: ServerState = request.app.state.contextfold
    return await state.existing_session(await current_tenant(request, state), session_id)


async def writable_session(request: Request, session_id: SessionId) -> ScopedSession:
    """The tenant's session ``session_id``, created by the write if it is new."""
    state: ServerState = request.app.state.contextfold
    return await state.session(await current_tenant(request, state), session_id)
