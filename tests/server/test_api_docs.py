"""/docs is served offline: Swagger UI's files come from the fastapi-offline package and this
server, under the strict CSP; without that package the page says how to get it. (The page
drawn in a browser with every other host blocked: tests/inspector/test_inspector_browser.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from contextfold.server import api_docs


def _app() -> FastAPI:
    app = FastAPI(docs_url=None, redoc_url=None)
    api_docs.install(app)
    return app


def test_docs_page_and_its_assets_come_from_this_server() -> None:
    assert api_docs.swagger_ui_dir() is not None  # the server extra installs it
    with TestClient(_app()) as client:
        page = client.get("/docs")
        assert page.status_code == 200
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert "http://" not in page.text and "https://" not in page.text
        for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
            assert client.get(f"{api_docs.ASSETS_URL}/{asset}").status_code == 200


def test_without_the_package_docs_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_docs, "swagger_ui_dir", lambda: None)
    with TestClient(_app()) as client:
        page = client.get("/docs")
        assert page.status_code == 200
        assert 'pip install "contextfold[server]"' in page.text.replace("&quot;", '"')
        assert "/openapi.json" in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]


def test_the_service_has_no_cdn_docs(tmp_path: Path) -> None:
    from contextfold.server.app import create_app

    app = create_app(store_url=f"sqlite:///{tmp_path / 'service.db'}")
    assert app.docs_url is None and app.redoc_url is None  # FastAPI's own CDN pages are off
    with TestClient(app) as client:
        page = client.get("/docs")
        assert page.status_code == 200 and "cdn" not in page.text.lower()
        assert "/docs/assets/swagger-ui-bundle.js" in page.text
        assert client.get("/redoc").status_code == 404
