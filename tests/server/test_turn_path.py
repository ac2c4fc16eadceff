"""The turn requests (append, context read) answered without the middleware chain keep
what the chain gave them: a request is charged and counted once whichever way it takes,
an address's failed key checks are counted across both ways, and an app with middleware
of its own added sends every request through it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx

from contextfold.server.app import create_app
from contextfold.server.catalog import open_catalog
from contextfold.server.config import ServerConfig
from contextfold.server.keys import create_key

from .conftest import assert_problem, start_server, user

APPEND = "/v1/sessions/{session_id}/messages"


def _count(metrics: str, route: str, status: int) -> float:
    pattern = (r'contextfold_http_requests_total\{method="(?:GET|POST)",route="'
               + re.escape(route) + rf'",status="{status}"\}} ([0-9.]+)')
    found = re.search(pattern, metrics)
    return float(found[1]) if found else 0.0


def test_a_request_handed_on_is_charged_and_counted_once(tmp_path: Path) -> None:
    served = start_server(tmp_path, config={"limits": {
        "requests_per_second": 0.01, "burst": 6}})
    try:
        with served.client("t") as client:
            invalid = {"messages": [{"role": "wizard", "content": "x"}]}  # the app's 422
            for _ in range(3):
                assert_problem(client.post("/v1/sessions/s/messages", json=invalid), 422,
                               "validation_error")
            for i in range(3):
                answer = client.post("/v1/sessions/s/messages",
                                     json={"messages": [user(f"turn {i}")]})
                assert answer.status_code == 200, answer.text
            assert_problem(client.get("/v1/sessions/s/context"), 429, "rate_limited")
        metrics = httpx.get(f"{served.url}/metrics").text
        assert _count(metrics, APPEND, 422) == 3
        assert _count(metrics, APPEND, 200) == 3
        assert _count(metrics, "/v1/sessions/{session_id}/context", 429) == 1
    finally:
        served.stop()


def test_failed_key_checks_count_across_both_ways(tmp_path: Path) -> None:
    served = start_server(tmp_path, config={"limits": {
        "failed_auth_per_second": 0.2, "failed_auth_burst": 4}})
    try:
        bad = {"Authorization": "Bearer nope"}
        codes = [httpx.get(f"{served.url}{path}", headers=bad).status_code
                 for path in ["/v1/sessions/s/context", "/v1/sessions"] * 3]
        assert codes == [401] * 4 + [429] * 2
    finally:
        served.stop()


def keyed_store(tmp_path: Path) -> tuple[str, str]:
    """A SQLite store URL with a catalog holding one key (of tenant "t"), and the key."""
    store = f"sqlite:///{tmp_path / 'm.db'}"
    catalog = open_catalog(store)
    catalog.setup()
    key = create_key(catalog, "t")[0]
    catalog.close()
    return store, key


def test_middleware_added_to_the_app_sees_turn_requests(tmp_path: Path) -> None:
    store, key = keyed_store(tmp_path)
    app = create_app(ServerConfig(), store)
    seen: list[str] = []

    class Seen:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        async def __call__(self, scope: dict[str, Any], receive: object, send: object) -> None:
            if scope["type"] == "http":
                seen.append(scope["path"])
            await self.inner(scope, receive, send)  # type: ignore[operator]

    app.add_middleware(Seen)

    async def main() -> None:
        async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t",
            headers={"Authorization": f"Bearer {key}"},
        ) as client:
            added = await client.post("/v1/sessions/s/messages",
                                      json={"messages": [user("hello")]})
            assert added.status_code == 200, added.text
            assert (await client.get("/v1/sessions/s/context")).status_code == 200

    asyncio.run(main())
    assert seen == ["/v1/sessions/s/messages", "/v1/sessions/s/context"]


def test_a_context_read_with_a_body_over_the_limit_is_refused(tmp_path: Path) -> None:
    store, key = keyed_store(tmp_path)
    app = create_app(ServerConfig.model_validate({"limits": {"max_body_bytes": 1024}}), store)

    async def main() -> None:
        async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t",
            headers={"Authorization": f"Bearer {key}"},
        ) as client:
            assert (await client.post("/v1/sessions/s/messages",
                                      json={"messages": [user("hello")]})).status_code == 200
            read = await client.request("GET", "/v1/sessions/s/context", content=b"x" * 2048)
            assert_problem(read, 413, "payload_too_large")
            assert (await client.get("/v1/sessions/s/context")).status_code == 200

    asyncio.run(main())
