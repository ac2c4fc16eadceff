"""The interactive API docs at ``/docs``, offline.

FastAPI's own ``/docs`` page loads Swagger UI from a CDN, so it is blank on a machine
without internet — where a local service is often run. This page loads the Swagger UI
files that the ``fastapi-offline`` package ships (a dependency of the ``server`` extra),
from this server, under the same Content-Security-Policy as the inspector: no inline
script, nothing from another origin. Without that package the page still answers, with a
link to ``/openapi.json`` and the install line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from .ui import SECURITY_HEADERS, STATIC_DIR

__all__ = ["install", "swagger_ui_dir"]

ASSETS_URL = "/docs/assets"


def swagger_ui_dir() -> Path | None:
    """The folder of Swagger UI's files shipped by ``fastapi-offline`` (None: not installed)."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).with_name("static")
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


_MISSING = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>contextfold API</title></head>
<body><h1>contextfold API</h1>
<p>The interactive docs need Swagger UI's files: <code>pip install "contextfold[server]"</code>
(it installs <code>fastapi-offline</code>, which ships them).</p>
<p>The API's contract: <a href="/openapi.json">/openapi.json</a>.</p></body></html>
"""


def install(app: FastAPI) -> None:
    """Serve ``/docs`` (the app must be made with ``docs_url=None``)."""
    router = APIRouter(include_in_schema=False)
    assets = swagger_ui_dir()

    @router.get("/docs", response_model=None)
    async def docs() -> FileResponse | HTMLResponse:
        if assets is None:
            return HTMLResponse(_MISSING, headers=SECURITY_HEADERS)
        return FileResponse(STATIC_DIR / "docs.html", media_type="text/html",
                            headers=SECURITY_HEADERS)

    app.include_router(router)
    if assets is not None:
        app.mount(ASSETS_URL, StaticFiles(directory=assets), name="docs-assets")
