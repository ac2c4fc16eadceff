"""Rate limits charge by cost, failed key checks are limited per client address, and one
tenant's large requests take turns. Over real HTTP to ``contextfold serve``."""

from __future__ import annotations

import concurrent.futures
import time
from pathlib import Path

import httpx

from .conftest import assert_problem, start_server, user
from .slow_clients import stalled, upload_head


def test_appends_are_charged_by_messages_and_bytes(tmp_path: Path) -> None:
    served = start_server(tmp_path, config={"limits": {
        "requests_per_second": 0.5, "burst": 40, "cost_messages_per_token": 10,
        "cost_bytes_per_token": 4096}})
    try:
        with served.client("big") as big:
            batch = {"messages": [user(f"m{i}") for i in range(100)]}  # 1 + 10 tokens
            assert [big.post(f"/v1/sessions/s{i}/messages", json=batch).status_code
                    for i in range(3)] == [200, 200, 200]
            over = big.post("/v1/sessions/s4/messages", json=batch)
            body = assert_problem(over, 429, "rate_limited")
            assert int(over.headers["retry-after"]) >= 1 and "this key" in body["detail"]
        with served.client("bytes") as by_size:  # 40 KB declared: 1 + 9 tokens each
            text = {"messages": [user("x" * 40_000)]}
            codes = [by_size.post(f"/v1/sessions/b{i}/messages", json=text).status_code
                     for i in range(5)]
            assert codes == [200, 200, 200, 200, 429]
        with served.client("small") as small:  # one token each: another key is unaffected
            assert all(small.get("/v1/sessions").status_code == 200 for _ in range(20))
    finally:
        served.stop()


def test_failed_key_checks_are_limited_per_address(tmp_path: Path) -> None:
    served = start_server(tmp_path, config={"limits": {
        "failed_auth_per_second": 0.2, "failed_auth_burst": 5}})
    try:
        with served.client("tenant") as tenant:
            assert tenant.get("/v1/sessions").status_code == 200  # a key known good
            codes = [httpx.get(f"{served.url}/v1/sessions", headers=h).status_code
                     for h in [{}, {"Authorization": "Bearer nope"}] * 3]
            assert codes == [401] * 5 + [429]
            fake = "cfk_0123abcd_" + "A" * 43
            blocked = httpx.get(f"{served.url}/v1/sessions",
                                headers={"Authorization": f"Bearer {fake}"})
            assert_problem(blocked, 429, "rate_limited")
            assert "this address" in blocked.json()["detail"]
            assert blocked.headers["connection"] == "close"
            # the known key from the same address still works, at its own rate
            assert tenant.get("/v1/sessions").status_code == 200
            # a valid key this process has not seen is not looked up while blocked
            newcomer = served.key("newcomer")
            r = httpx.get(f"{served.url}/v1/sessions",
                          headers={"Authorization": f"Bearer {newcomer}"})
            assert r.status_code == 429
            assert httpx.get(f"{served.url}/healthz").status_code == 200  # not /v1: free
    finally:
        served.stop()


def test_a_tenants_large_requests_take_turns(tmp_path: Path) -> None:
    served = start_server(tmp_path, config={"limits": {
        "requests_per_second": 0, "heavy_request_bytes": 4096}})
    key_a, key_b = served.key("a"), served.key("b")
    body = {"messages": [user("y" * 8000)]}
    try:
        holder = stalled(served.url, upload_head("/v1/sessions/h/messages", 50_000, key_a),
                         b'{"messages": [')
        time.sleep(0.3)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            waiting = pool.submit(httpx.post, f"{served.url}/v1/sessions/a2/messages",
                                  json=body, headers={"Authorization": f"Bearer {key_a}"},
                                  timeout=30)
            other = httpx.post(f"{served.url}/v1/sessions/b1/messages", json=body,
                               headers={"Authorization": f"Bearer {key_b}"}, timeout=30)
            assert other.status_code == 200  # another tenant's large request goes ahead
            time.sleep(1.0)
            assert not waiting.done()  # a's second large request waits for a's first
            holder.close()
            assert waiting.result(timeout=15).status_code == 200
        small = httpx.get(f"{served.url}/v1/sessions",
                          headers={"Authorization": f"Bearer {key_a}"})
        assert small.status_code == 200
    finally:
        served.stop()
