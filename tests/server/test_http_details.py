"""HTTP details a security review asked for: the inspector's static copy of its page has
the page's headers, redirects never echo the client's Host, 405s say what is allowed, the
SQLite database is private to its owner, and the OpenAPI schema refuses what the server
refuses. Over real HTTP to ``contextfold serve``."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx

from .conftest import Served, assert_problem

ROOT = Path(__file__).resolve().parents[2]


def test_static_page_has_the_page_headers(server: Served) -> None:
    page = httpx.get(f"{server.url}/ui/")
    static = httpx.get(f"{server.url}/ui/static/index.html")
    assert static.status_code == 200 and static.text == page.text
    for name in ("content-security-policy", "x-frame-options", "x-content-type-options"):
        assert static.headers.get(name) == page.headers.get(name) and page.headers.get(name)
    assert "frame-ancestors 'none'" in static.headers["content-security-policy"]


def test_slash_redirects_do_not_echo_the_host(server: Served, alice: httpx.Client) -> None:
    r = alice.get("/v1/sessions/", params={"limit": 2}, headers={"Host": "evil.example"})
    assert r.status_code == 307 and r.headers["location"] == "/v1/sessions?limit=2"
    r = httpx.get(f"{server.url}/healthz/", headers={"Host": "evil.example"})
    assert r.status_code == 307 and r.headers["location"] == "/healthz"
    assert_problem(httpx.get(f"{server.url}/no/such/"), 404, "not_found")


def test_405_carries_allow(server: Served, alice: httpx.Client) -> None:
    r = alice.patch("/v1/sessions/s1/messages", json={})
    assert_problem(r, 405, "method_not_allowed")
    assert {"GET", "POST"} <= {m.strip() for m in r.headers["allow"].split(",")}
    r = httpx.delete(f"{server.url}/healthz")
    assert_problem(r, 405, "method_not_allowed")
    assert "GET" in r.headers["allow"]


def test_sqlite_database_is_private(server: Served) -> None:
    db = server.home / "contextfold.db"
    assert db.exists()
    for path in [db, *db.parent.glob("contextfold.db-*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, (path, oct(path.stat().st_mode))


def test_schema_refuses_what_the_server_refuses(server: Served, alice: httpx.Client) -> None:
    schema = json.loads((ROOT / "openapi.json").read_text())
    append = schema["components"]["schemas"]["AppendRequest"]["properties"]["messages"]
    assert append["minItems"] == 1
    assert_problem(alice.post("/v1/sessions/s/messages", json={"messages": []}), 422,
                   "validation_error")
    for path in ("/v1/sessions", "/v1/inspect/sessions"):
        params = {p["name"]: p for p in schema["paths"][path]["get"]["parameters"]}
        cursor = params["cursor"]["schema"]["anyOf"][0]
        assert cursor["pattern"] == "^[A-Za-z0-9_-]{1,600}$"
        assert_problem(alice.get(path, params={"cursor": "a b"}), 422, "validation_error")
