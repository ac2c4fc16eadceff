"""``GET /v1/sessions/{id}/search`` against a running server: hits, the folded filter,
tenant isolation (another tenant's messages never match, their session is a 404), and bad
parameters as 422 problems naming the parameter — on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.pg_database import fresh_database

from .conftest import Served, assert_problem, assistant, start_server, user

CHAT = [
    user("I booked the ferry to Bodrum for the 14th", "m1"),
    assistant("Your Bodrum ferry on the 14th is confirmed.", "m2"),
    user("My cat is called Pamuk", "m3"),
    assistant("Pamuk is a lovely name.", "m4"),
]


def _sid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _search(client: httpx.Client, sid: str, **params: object) -> httpx.Response:
    return client.get(f"/v1/sessions/{sid}/search", params=params)  # type: ignore[arg-type]


def check_search(alice: httpx.Client, mallory: httpx.Client) -> None:
    s = _sid("trip")
    assert alice.post(f"/v1/sessions/{s}/messages", json={"messages": CHAT}).status_code == 200
    body = _search(alice, s, q="When is the ferry to Bodrum?").json()
    assert body["session_id"] == s and body["terms"] == ["ferry", "bodrum"]
    hits = body["hits"]
    assert [h["seq"] for h in hits] in ([1, 2], [2, 1])
    assert hits[0]["matched"] == 2 and hits[0]["score"] > 0
    assert set(hits[0]) == {"seq", "role", "timestamp", "snippet", "score", "folded", "matched"}
    assert "Bodrum" in hits[0]["snippet"] and hits[0]["timestamp"] is not None
    assert [h["seq"] for h in _search(alice, s, q="pamuk", limit=1).json()["hits"]] in ([3], [4])
    assert _search(alice, s, q="the").json()["terms"] == ["the"]  # only stop words: kept

    alice.put(f"/v1/sessions/{s}/settings", json={"keep_last": 2})
    assert alice.post(f"/v1/sessions/{s}/fold", json={"force": True}).status_code == 200
    alice.post(f"/v1/sessions/{s}/messages", json={"messages": [user("Pamuk in Bodrum")]})
    stored = alice.get(f"/v1/sessions/{s}/messages").json()["messages"]
    was_folded = {m["seq"] for m in stored if m["folded"]}
    assert was_folded and 5 not in was_folded
    folded = _search(alice, s, q="bodrum pamuk", folded="true").json()["hits"]
    live = _search(alice, s, q="bodrum pamuk", folded="false").json()["hits"]
    assert {h["seq"] for h in folded} == was_folded and all(h["folded"] for h in folded)
    assert {h["seq"] for h in live} == {1, 2, 3, 4, 5} - was_folded
    assert not any(h["folded"] for h in live)

    # another tenant: the same id is their own session; alice's words never match there
    theirs = mallory.get(f"/v1/sessions/{s}/search", params={"q": "bodrum"})
    assert_problem(theirs, 404, "not_found")
    assert "Bodrum" not in theirs.text
    mallory.post(f"/v1/sessions/{s}/messages", json={"messages": [user("my own note")]})
    mine = _search(mallory, s, q="bodrum ferry pamuk note").json()["hits"]
    assert [h["seq"] for h in mine] == [1] and "note" in mine[0]["snippet"]

    # bad parameters: 422 naming the parameter; NUL is a 4xx, never a 5xx
    for params, name in (({"q": ""}, "q"), ({}, "q"), ({"q": "x" * 1001}, "q"),
                         ({"q": "x", "limit": 0}, "limit"), ({"q": "x", "limit": "many"}, "limit"),
                         ({"q": "x", "limit": 101}, "limit"), ({"q": "x", "folded": "maybe"},
                                                               "folded")):
        problem = assert_problem(_search(alice, s, **params), 422, "validation_error")
        assert name in problem["detail"], (params, problem)
    problem = assert_problem(_search(alice, s, q="bod\x00rum"), 422, "validation_error")
    assert "q" in problem["detail"]
    for odd in ('"', "*", "NEAR(", "' OR 1=1 --", ":*", "!!!", "\u202e"):
        r = _search(alice, s, q=odd)
        assert r.status_code == 200 and r.json()["hits"] == [], (odd, r.text)
    assert_problem(_search(alice, _sid("nobody"), q="bodrum"), 404, "not_found")


def test_search_over_http_sqlite(alice: httpx.Client, mallory: httpx.Client) -> None:
    check_search(alice, mallory)


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with fresh_database("contextfold_search_http") as url:
        served = start_server(
            Path(tmp_path_factory.mktemp("serve-pg")), store=url,
            config={"limits": {"requests_per_second": 0}, "defaults": {"budget": 400}},
        )
        try:
            yield served
        finally:
            served.stop()


def test_search_over_http_postgres(pg_server: Served) -> None:
    with pg_server.client("alice") as alice, pg_server.client("mallory") as mallory:
        check_search(alice, mallory)
