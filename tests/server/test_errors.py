"""Every error code of the service, as problem+json from the running server; nothing
secret or private in any response or log line."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import Served, assert_problem, cli, start_server, user


def sid() -> str:
    return f"e-{uuid.uuid4().hex[:12]}"


def test_400_malformed_json(alice: httpx.Client) -> None:
    s = sid()
    r = alice.post(f"/v1/sessions/{s}/messages", content=b'{"messages": [',
                   headers={"content-type": "application/json"})
    assert_problem(r, 400, "malformed_json")
    r = alice.post(f"/v1/sessions/{s}/messages", content=b'\xff\xfe garbage',
                   headers={"content-type": "application/json"})
    assert_problem(r, 400, "malformed_json")
    r = alice.post(f"/v1/sessions/{s}/messages", content=b"messages=1",
                   headers={"content-type": "application/x-www-form-urlencoded"})
    assert_problem(r, 400, "malformed_json")
    assert alice.get(f"/v1/sessions/{s}/context").status_code == 404  # nothing was stored


def test_401_missing_unknown_malformed_and_revoked_keys(server: Served) -> None:
    url = f"{server.url}/v1/sessions"
    r = httpx.get(url)
    assert_problem(r, 401, "unauthorized")
    assert r.headers["www-authenticate"].startswith("Bearer")
    for header in ("Bearer", "Bearer nope", "Basic abc", "Bearer cfk_00000000_" + "A" * 43):
        assert_problem(httpx.get(url, headers={"Authorization": header}), 401, "unauthorized")
    done = cli("keys", "create", "--tenant", "revoked", "--db", server.store, "--json",
               env=server.env)
    key = json.loads(done.stdout)
    headers = {"Authorization": f"Bearer {key['key']}"}
    assert httpx.get(url, headers=headers).status_code == 200
    assert cli("keys", "revoke", key["key_id"], "--db", server.store,
               env=server.env).returncode == 0
    deadline = time.monotonic() + 10  # the key cache holds for key_cache_seconds (2)
    while httpx.get(url, headers=headers).status_code == 200:
        assert time.monotonic() < deadline, "a revoked key kept working"
        time.sleep(0.2)
    assert_problem(httpx.get(url, headers=headers), 401, "unauthorized")
    listed = cli("keys", "list", "--json", "--db", server.store, env=server.env)
    rows = {r["key_id"]: r for r in json.loads(listed.stdout)}
    assert rows[key["key_id"]]["revoked_at"] is not None
    assert key["key"] not in listed.stdout and key["key"] not in server.log()


def test_404_unknown_session_and_route(alice: httpx.Client) -> None:
    s = sid()
    for method, path in (("GET", "context"), ("GET", "summary"), ("GET", "messages"),
                         ("GET", "ledger"), ("POST", "fold"), ("GET", "settings")):
        assert_problem(alice.request(method, f"/v1/sessions/{s}/{path}"), 404, "not_found")
    assert_problem(alice.post(f"/v1/sessions/{s}/usage", json={"input_tokens": 1}), 404,
                   "not_found")
    assert_problem(alice.delete(f"/v1/sessions/{s}"), 404, "not_found")
    assert_problem(alice.get("/v1/nothing-here"), 404, "not_found")
    assert_problem(alice.patch(f"/v1/sessions/{s}/messages"), 405, "method_not_allowed")


def test_413_body_and_batch_limits(alice: httpx.Client) -> None:
    s = sid()
    big = {"messages": [user("x" * 250_000)]}
    assert_problem(alice.post(f"/v1/sessions/{s}/messages", json=big), 413, "payload_too_large")

    def chunks():  # no Content-Length: the limit counts received bytes
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(30):
            yield b"y" * 10_000
        yield b'"}]}'

    r = alice.post(f"/v1/sessions/{s}/messages", content=chunks(),
                   headers={"content-type": "application/json"})
    assert_problem(r, 413, "payload_too_large")
    many = {"messages": [user(f"m{i}") for i in range(101)]}
    body = assert_problem(alice.post(f"/v1/sessions/{s}/messages", json=many), 413,
                          "too_many_messages")
    assert "100" in body["detail"]
    assert alice.get(f"/v1/sessions/{s}/context").status_code == 404  # nothing stored


def test_422_invalid_messages_are_rejected_whole(alice: httpx.Client) -> None:
    s = sid()
    secret = "my card is 4111 1111 1111 1111 and this content is private"
    bad_batches = [
        [user("ok"), {"role": "wizard", "content": secret}],
        [user("ok"), {"role": "user", "content": secret, "unknown_field": 1}],
        [user("ok"), {"role": "tool", "content": secret}],  # no tool_call_id
        [user("ok"), {"role": "user", "content": secret + "\u0000"}],
        [user("ok"), {"role": "user", "content": secret, "timestamp": "yesterday-ish"}],
        [{"role": "tool", "tool_call_id": "nope", "content": secret}],  # result without call
        [],
    ]
    for batch in bad_batches:
        r = alice.post(f"/v1/sessions/{s}/messages", json={"messages": batch})
        body = assert_problem(r, 422, "validation_error")
        assert secret[:20] not in r.text, body
    assert alice.get(f"/v1/sessions/{s}/messages").status_code == 404  # all or nothing
    r = alice.post(f"/v1/sessions/{s}/messages",
                   json={"messages": [user("ok"), {"role": "user", "content": 5}]})
    assert assert_problem(r, 422, "validation_error")["errors"]


def test_422_invalid_settings_and_parameters(alice: httpx.Client) -> None:
    s = sid()
    assert_problem(alice.put(f"/v1/sessions/{s}/settings", json={"budget": 10}), 422,
                   "validation_error")
    assert_problem(alice.put(f"/v1/sessions/{s}/settings", json={"preset": "pirate"}), 422,
                   "validation_error")
    assert_problem(alice.put(f"/v1/sessions/{s}/settings", json={"nope": 1}), 422,
                   "validation_error")
    # each number valid, together impossible: target above the budget
    body = assert_problem(
        alice.put(f"/v1/sessions/{s}/settings", json={"budget": 1000, "target": 2000}), 422,
        "config_error")
    assert "target" in body["detail"]
    assert alice.get(f"/v1/sessions/{s}/settings").status_code == 404  # nothing stored
    assert_problem(alice.get(f"/v1/sessions/{'x' * 201}/context"), 422, "validation_error")
    alice.post(f"/v1/sessions/{s}/messages", json={"messages": [user("hi")]})
    assert_problem(alice.get(f"/v1/sessions/{s}/context", params={"format": "xml"}), 422,
                   "validation_error")
    assert_problem(alice.get("/v1/sessions", params={"cursor": "not-a-cursor"}), 422,
                   "validation_error")


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Any]]:
    """A server whose summarizer is a (scriptable, fake) OpenAI-compatible model, with a
    tight per-key rate limit: 1 request per second, bursts of 3."""
    from contextfold.testing.provider_servers import OpenAIServer

    with OpenAIServer() as fake:
        served = start_server(tmp_path_factory.mktemp("slow"), config={
            "model": f"openai-compatible:fake@{fake.url}",
            "limits": {"requests_per_second": 1, "burst": 3}})
        yield served, fake
        served.stop()


def test_409_fold_conflict_while_a_fold_runs(slow_server: tuple[Served, Any]) -> None:
    from contextfold.testing.provider_servers import ServerReply

    served, fake = slow_server
    fake.script(ServerReply.hang(2.0))
    with served.client("folder") as c:  # three requests: within the burst
        s = sid()
        c.post(f"/v1/sessions/{s}/messages",
               json={"messages": [user("q " * 50), {"role": "assistant",
                                                     "content": "a " * 50}] * 3})
        first: list[httpx.Response] = []
        t = threading.Thread(target=lambda: first.append(
            c.post(f"/v1/sessions/{s}/fold", json={"force": True})))
        t.start()
        time.sleep(0.8)
        second = c.post(f"/v1/sessions/{s}/fold", json={"force": True})
        t.join()
        assert_problem(second, 409, "fold_conflict")
        assert first[0].status_code == 200 and first[0].json()["status"] == "committed"


def test_429_rate_limit_with_retry_after(slow_server: tuple[Served, Any]) -> None:
    served, _ = slow_server
    with served.client("hasty") as c, served.client("other") as other:
        codes = [c.get("/v1/sessions").status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and 429 in codes[3:]
        r = c.get("/v1/sessions")
        assert_problem(r, 429, "rate_limited")
        assert int(r.headers["retry-after"]) >= 1
        assert other.get("/v1/sessions").status_code == 200  # per key
        time.sleep(1.1)
        assert c.get("/v1/sessions").status_code == 200


@pytest.mark.postgres
def test_503_when_the_store_is_unreachable(tmp_path: Path) -> None:
    from tests.server.tcp_proxy import TcpProxy, fresh_pg_database

    with fresh_pg_database() as (url, host, port), TcpProxy(host, port) as proxy:
        via_proxy = url.replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}")
        served = start_server(tmp_path, store=via_proxy)
        try:
            with served.client("pg") as c:
                s = sid()
                assert c.post(f"/v1/sessions/{s}/messages",
                              json={"messages": [user("hi", "m1")]}).status_code == 200
                proxy.cut()
                r = c.post(f"/v1/sessions/{s}/messages", json={"messages": [user("lost?", "m2")]})
                assert_problem(r, 503, "storage_unavailable")
                assert "postgres" not in r.text.lower() and "Retry-After" in r.headers
                assert_problem(httpx.get(f"{served.url}/readyz", timeout=30), 503,
                               "storage_unavailable")
                proxy.restore()
                deadline = time.monotonic() + 30
                while httpx.get(f"{served.url}/readyz", timeout=30).status_code != 200:
                    assert time.monotonic() < deadline
                    time.sleep(0.5)
                r = c.post(f"/v1/sessions/{s}/messages", json={"messages": [user("lost?", "m2")]})
                assert r.status_code == 200, r.text
                seqs = [m["seq"] for m in c.get(f"/v1/sessions/{s}/messages").json()["messages"]]
                assert seqs == [1, 2]
        finally:
            served.stop()
    assert "Traceback" not in served.log()


def test_no_key_or_content_in_the_log(server: Served, alice: httpx.Client) -> None:
    s = sid()
    secret = "the launch code is swordfish-7731"
    alice.post(f"/v1/sessions/{s}/messages", json={"messages": [user(secret)]})
    alice.get(f"/v1/sessions/{s}/context", params={"system": "system prompt: " + secret})
    alice.post(f"/v1/sessions/{s}/messages", json={"messages": [{"role": "x", "content": secret}]})
    log = server.log()
    assert "swordfish" not in log and server.key("alice") not in log and "Traceback" not in log
    assert "GET /v1/sessions/{session_id}/context 200" in log


def test_serve_without_the_extra_names_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['fastapi'] = None; sys.modules['uvicorn'] = None\n"
        "import contextfold\n"
        "from contextfold.cli import main\n"
        "sys.argv = ['contextfold', 'serve']\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**__import__("os").environ,
                                           "CONTEXTFOLD_HOME": str(tmp_path)})
    assert done.returncode == 2
    assert 'pip install "contextfold[server]"' in done.stderr and "Traceback" not in done.stderr
