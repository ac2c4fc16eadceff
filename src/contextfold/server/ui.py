"""The inspector page at ``/ui/``: static files shipped in the package (no CDN, no build
step), plus the inspector's ``/v1`` read routes (:mod:`.inspector_routes`).

The page reads only the ``/v1`` API, with the key the user enters (kept in the browser's
``sessionStorage``). ``contextfold serve --dev`` (loopback only) sets
``CONTEXTFOLD_SERVER_DEV=1``: a ``/v1`` request without a key then acts for the tenant
``dev``, and the page says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response

from .deps import DEV_TENANT

__all__ = ["DEV_ENV", "DEV_TENANT", "SECURITY_HEADERS", "STATIC_DIR", "install"]

STATIC_DIR = Path(__file__).with_name("static")
DEV_ENV = "CONTEXTFOLD_SERVER_DEV"

router = APIRouter(include_in_schema=False)

SECURITY_HEADERS = {
    # everything the page needs is served from here: no CDN, no network
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class _InspectorFiles(StaticFiles):
    """The page's files with the page's headers: ``/ui/static/index.html`` is the page
    too, and must not be framed or run anything from elsewhere either."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(SECURITY_HEADERS)
        return response


def dev_mode() -> bool:
    return os.environ.get(DEV_ENV) == "1"


@router.get("/ui")
async def ui_redirect() -> RedirectResponse:
    return RedirectResponse("/ui/", status_code=308)


@router.get("/ui/")
async def ui_index() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html",
                        headers=SECURITY_HEADERS)


@router.get("/ui/config.json")
async def ui_config(request: Request) -> JSONResponse:
    dev = bool(getattr(request.app.state, "contextfold_dev", False))
    return JSONResponse({"dev": dev, "dev_tenant": DEV_TENANT if dev else None})


def install(app: FastAPI, *, dev: bool | None = None) -> None:
    """Add the inspector's routes and page to the service's app."""
    from .inspector_routes import router as inspector_router

    app.include_router(inspector_router)
    app.include_router(router)
    app.mount("/ui/static", _InspectorFiles(directory=STATIC_DIR), name="ui-static")
    dev = dev_mode() if dev is None else dev
    app.state.contextfold_dev = dev  # deps.current_tenant: no key -> the dev tenant
