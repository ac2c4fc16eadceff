"""``serve --dev`` (no keys) answers only this machine's pages: a request addressed to
another host name (DNS rebinding) and a change requested from another origin are 403.
Over real HTTP to ``contextfold serve --dev``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import Served, assert_problem, start_server, user


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = start_server(tmp_path_factory.mktemp("dev"), extra_args=("--dev",))
    yield served
    served.stop()


def test_host_must_be_loopback(dev: Served) -> None:
    port = dev.url.rsplit(":", 1)[1]
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}"):
        for path in ("/v1/sessions", "/ui/", "/ui/config.json"):
            assert_problem(httpx.get(f"{dev.url}{path}", headers={"Host": host}), 403,
                           "forbidden")
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        assert httpx.get(f"{dev.url}/v1/sessions", headers={"Host": host}).status_code == 200


def test_changes_from_another_origin_are_refused(dev: Served) -> None:
    port = dev.url.rsplit(":", 1)[1]
    batch = {"messages": [user("hello", "m1")]}
    with httpx.Client(base_url=dev.url, timeout=30) as c:
        same = c.post("/v1/sessions/d1/messages", json=batch,
                      headers={"Origin": f"http://127.0.0.1:{port}",
                               "Sec-Fetch-Site": "same-origin"})
        assert same.status_code == 200
        for headers in ({"Origin": "http://evil.example"},
                        {"Origin": f"http://127.0.0.1:{int(port) + 1}"},
                        {"Sec-Fetch-Site": "cross-site"},
                        {"Sec-Fetch-Site": "same-site"}):
            assert_problem(c.post("/v1/sessions/d1/fold", json={"force": True},
                                  headers=headers), 403, "forbidden")
            assert_problem(c.post("/v1/sessions/d2/messages", json=batch, headers=headers),
                           403, "forbidden")
        assert c.get("/v1/sessions/d1/ledger").json()["entries"] == []  # no fold ran
        assert c.get("/v1/sessions/d2/summary").status_code == 404  # nothing written
        # reading from another origin is the browser's to block; a plain GET passes
        assert c.get("/v1/sessions", headers={"Origin": "http://evil.example"}
                     ).status_code == 200


def test_without_dev_the_host_is_not_checked(server: Served, alice: httpx.Client) -> None:
    assert alice.get("/v1/sessions", headers={"Host": "api.example"}).status_code == 200
    assert Path(server.home).exists()
