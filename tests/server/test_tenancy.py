"""Tenant isolation on every route, idempotent retries, and concurrent appends from many
clients to one session losing nothing — all against the running server."""

from __future__ import annotations

import asyncio
import uuid

import httpx

from .conftest import Served, assistant, user


def test_another_tenant_never_reads_lists_folds_deletes_or_learns_of_a_session(
    alice: httpx.Client, mallory: httpx.Client
) -> None:
    s = f"private-{uuid.uuid4().hex[:8]}"
    secret = "alice's private note about the merger"
    before = mallory.get("/v1/usage").json()  # other tests may have folded mallory's own
    r = alice.post(f"/v1/sessions/{s}/messages",
                   json={"messages": [user(secret, "m1"), assistant("noted", "m2")] * 1})
    assert r.status_code == 200
    alice.put(f"/v1/sessions/{s}/settings", json={"keep_last": 1})
    alice.post(f"/v1/sessions/{s}/fold", json={"force": True})
    never = f"never-{uuid.uuid4().hex[:8]}"  # a session that exists for nobody

    def same_as_missing(method: str, path: str, **kw: object) -> None:
        theirs = mallory.request(method, f"/v1/sessions/{s}{path}", **kw)  # type: ignore[arg-type]
        missing = mallory.request(method, f"/v1/sessions/{never}{path}", **kw)  # type: ignore[arg-type]
        assert theirs.status_code == missing.status_code == 404, (path, theirs.text)
        assert theirs.json()["code"] == missing.json()["code"] == "not_found"
        assert theirs.json()["detail"].replace(s, never) == missing.json()["detail"]
        assert secret not in theirs.text

    for path in ("/context", "/summary", "/messages", "/ledger", "/settings"):
        same_as_missing("GET", path)
    same_as_missing("POST", "/fold", json={"force": True})
    same_as_missing("POST", "/usage", json={"input_tokens": 10})
    same_as_missing("DELETE", "")
    listed = mallory.get("/v1/sessions", params={"limit": 1000}).json()["sessions"]
    assert s not in [x["session_id"] for x in listed]
    theirs = mallory.get("/v1/usage").json()  # alice's forced fold is not counted for mallory
    assert [theirs[k] for k in ("folds", "messages_folded", "calls")] == [
        before[k] for k in ("folds", "messages_folded", "calls")]

    # the same id written by mallory is mallory's own session; alice's is untouched
    r = mallory.post(f"/v1/sessions/{s}/messages", json={"messages": [user("mine", "m1")]})
    assert r.status_code == 200 and r.json()["appended"][0]["seq"] == 1  # not a duplicate
    mallory.put(f"/v1/sessions/{s}/settings", json={"keep_last": 5})
    assert mallory.delete(f"/v1/sessions/{s}").status_code == 204
    msgs = alice.get(f"/v1/sessions/{s}/messages").json()["messages"]
    assert [m["message"]["content"] for m in msgs] == [secret, "noted"]
    assert alice.get(f"/v1/sessions/{s}/settings").json()["keep_last"] == 1
    assert alice.get(f"/v1/sessions/{s}/summary").json()["summary"] is not None
    assert s in [x["session_id"] for x in
                 alice.get("/v1/sessions", params={"limit": 1000}).json()["sessions"]]


def test_idempotent_retries_store_each_message_once(alice: httpx.Client) -> None:
    s = f"retry-{uuid.uuid4().hex[:8]}"
    batch = {"messages": [user(f"m{i}", f"id-{i}") for i in range(5)]}
    first = alice.post(f"/v1/sessions/{s}/messages", json=batch).json()
    for _ in range(3):
        again = alice.post(f"/v1/sessions/{s}/messages", json=batch).json()
        assert again["appended"] == [] and len(again["duplicates"]) == 5
        assert [d["seq"] for d in again["duplicates"]] == [a["seq"] for a in first["appended"]]
    alice.post(f"/v1/sessions/{s}/fold", json={"force": True})  # retries work after a fold too
    again = alice.post(f"/v1/sessions/{s}/messages", json=batch).json()
    assert again["appended"] == [] and again["stats"]["last_seq"] == 5
    msgs = alice.get(f"/v1/sessions/{s}/messages").json()["messages"]
    assert [m["message"]["id"] for m in msgs] == [f"id-{i}" for i in range(5)]


def test_concurrent_appends_from_many_clients_lose_nothing(server: Served) -> None:
    s = f"crowd-{uuid.uuid4().hex[:8]}"
    clients, per_client = 24, 10
    headers = {"Authorization": f"Bearer {server.key('alice')}"}

    async def one(client_no: int, http: httpx.AsyncClient) -> None:
        for i in range(per_client):
            mid = f"c{client_no}-{i}"
            body = {"messages": [user(f"client {client_no} says {i} " + "word " * 40, mid)]}
            for attempt in range(2):  # every request retried once: duplicates must not count
                r = await http.post(f"/v1/sessions/{s}/messages", json=body)
                assert r.status_code == 200, r.text
                if attempt == 0:
                    assert r.json()["appended"], r.text
                else:
                    assert r.json()["duplicates"], r.text

    async def main() -> None:
        limits = httpx.Limits(max_connections=clients)
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60,
                                     limits=limits) as http:
            await asyncio.gather(*(one(c, http) for c in range(clients)))

    asyncio.run(main())
    with server.client("alice") as c:
        ids: list[str] = []
        after = 0
        while True:
            page = c.get(f"/v1/sessions/{s}/messages",
                         params={"after_seq": after, "limit": 1000}).json()
            ids += [m["message"]["id"] for m in page["messages"]]
            if page["next_after_seq"] is None:
                break
            after = page["next_after_seq"]
        expected = {f"c{n}-{i}" for n in range(clients) for i in range(per_client)}
        assert len(ids) == len(expected) and set(ids) == expected  # each once, none lost
        stats = c.post(f"/v1/sessions/{s}/messages", json={"messages": []})
        assert stats.status_code == 422
        ledger = c.get(f"/v1/sessions/{s}/ledger").json()["entries"]
        assert any(e["outcome"] == "committed" for e in ledger)  # it folded while busy
