"""``contextfold serve``: the library over HTTP (extra ``server``).

``create_app(config, store_url)`` builds the FastAPI app; ``contextfold serve`` runs it with
uvicorn. See ``README_SEAMS.md`` for how another router plugs in, and the README's "HTTP
service" section for the API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

    from .config import ServerConfig

__all__ = ["create_app"]


def create_app(config: ServerConfig | None = None, store_url: str | None = None) -> FastAPI:
    """See :func:`contextfold.server.app.create_app` (imported lazily: needs the extra)."""
    app: FastAPI = _app_module().create_app(config, store_url)
    return app


def _app_module() -> Any:
    try:
        from . import app
    except ImportError as exc:
        raise ImportError(
            'the HTTP service needs its extra: pip install "contextfold[server]"'
        ) from exc
    return app
