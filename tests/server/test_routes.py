"""Every route of the running service, through real HTTP."""

from __future__ import annotations

import uuid

import httpx

from .conftest import Served, assistant, user


def sid() -> str:
    return f"s-{uuid.uuid4().hex[:12]}"


def chat(client: httpx.Client, session: str, turns: int, words: int = 30) -> None:
    batch = []
    for i in range(turns):
        batch.append(user(f"question {i}: " + "lorem ipsum dolor " * words, f"u{i}"))
        batch.append(assistant(f"answer {i}: " + "sit amet consectetur " * words, f"a{i}"))
    r = client.post(f"/v1/sessions/{session}/messages", json={"messages": batch})
    assert r.status_code == 200, r.text


def test_append_reports_appended_duplicates_and_stats(alice: httpx.Client) -> None:
    s = sid()
    r = alice.post(f"/v1/sessions/{s}/messages",
                   json={"messages": [user("hi", "m1"), assistant("hello", "m2")]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [a["seq"] for a in body["appended"]] == [1, 2]
    assert body["duplicates"] == [] and body["fold"] is None
    assert body["stats"]["last_seq"] == 2 and body["stats"]["live_count"] == 2
    # a retry of the same batch plus one new message: only the new one is written
    r = alice.post(f"/v1/sessions/{s}/messages",
                   json={"messages": [user("hi", "m1"), assistant("hello", "m2"),
                                      user("again", "m3")]})
    body = r.json()
    assert [(a["index"], a["seq"]) for a in body["appended"]] == [(2, 3)]
    assert [(d["index"], d["seq"], d["id"]) for d in body["duplicates"]] == [
        (0, 1, "m1"), (1, 2, "m2")]
    assert body["stats"]["last_seq"] == 3


def test_append_folds_inline_when_the_policy_fires(alice: httpx.Client) -> None:
    s = sid()
    chat(alice, s, 1)
    r = alice.post(f"/v1/sessions/{s}/messages",
                   json={"messages": [user("more " + "words " * 200, "x1"),
                                      assistant("ok " + "words " * 200, "x2")]})
    fold = r.json()["fold"]
    assert fold is not None and fold["status"] == "committed", fold
    assert fold["messages_folded"] >= 1 and fold["summary"]["text"]
    assert fold["folded_ids"][0] == "u0"


def test_context_in_three_formats_never_over_budget(alice: httpx.Client) -> None:
    s = sid()
    chat(alice, s, 6)
    calls = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": 1}'}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": '{"status": "ok"}'}
    alice.post(f"/v1/sessions/{s}/messages", json={"messages": [user("look it up"), calls, result]})
    for fmt in ("openai", "anthropic", "gemini"):
        r = alice.get(f"/v1/sessions/{s}/context", params={"format": fmt, "system": "Be brief."})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["format"] == fmt and body["tokens"] <= body["budget"] == 400
        if fmt == "openai":
            assert body["system"] is None and body["messages"][0]["role"] == "system"
            assert body["messages"][0]["content"].startswith("Be brief.")
        else:
            assert body["system"].startswith("Be brief.")
            assert all(m["role"] != "system" for m in body["messages"])
    long_prompt = "You are a careful assistant. " * 200  # too long for a URL: POST it
    posted = alice.post(f"/v1/sessions/{s}/context",
                        json={"system": long_prompt, "format": "gemini", "max_tokens": 2000})
    assert posted.status_code == 200, posted.text
    assert posted.json()["system"].startswith(long_prompt.strip()[:50])
    assert posted.json()["tokens"] <= 2000 and posted.json()["budget"] == 2000
    anthropic = alice.get(f"/v1/sessions/{s}/context", params={"format": "anthropic"}).json()
    blocks = [b["type"] for m in anthropic["messages"] for b in m["content"]]
    assert "tool_use" in blocks and "tool_result" in blocks
    gemini = alice.get(f"/v1/sessions/{s}/context", params={"format": "gemini"}).json()
    parts = [k for m in gemini["messages"] for p in m["parts"] for k in p]
    assert "functionCall" in parts and "functionResponse" in parts
    assert {m["role"] for m in gemini["messages"]} <= {"user", "model"}


def test_context_reports_a_trimmed_view_and_a_summary(alice: httpx.Client) -> None:
    s = sid()
    chat(alice, s, 8)  # one batch: folds once, the rest may not fit the view
    body = alice.get(f"/v1/sessions/{s}/context", params={"max_tokens": 200}).json()
    assert body["tokens"] <= 200 and body["trimmed"] is (body["omitted"] > 0 or body["truncated"])
    summary = alice.get(f"/v1/sessions/{s}/summary").json()
    assert summary["session_id"] == s
    assert (summary["summary"] is None) == (body["summary"] is None)


def test_messages_paginate_and_filter_folded(alice: httpx.Client) -> None:
    s = sid()
    chat(alice, s, 10)
    alice.post(f"/v1/sessions/{s}/fold", json={"force": True})
    seqs, after = [], 0
    while True:
        page = alice.get(f"/v1/sessions/{s}/messages",
                         params={"after_seq": after, "limit": 7}).json()
        seqs += [m["seq"] for m in page["messages"]]
        if page["next_after_seq"] is None:
            break
        after = page["next_after_seq"]
    assert seqs == list(range(1, 21))
    live = alice.get(f"/v1/sessions/{s}/messages", params={"include_folded": "false"}).json()
    assert all(not m["folded"] for m in live["messages"])
    assert len(live["messages"]) < 20
    first = alice.get(f"/v1/sessions/{s}/messages", params={"limit": 1}).json()["messages"][0]
    assert first["message"]["id"] == "u0" and first["folded"] is True and first["tokens"] > 0


def test_fold_ledger_and_usage(alice: httpx.Client) -> None:
    s = sid()
    chat(alice, s, 3, words=3)
    r = alice.post(f"/v1/sessions/{s}/fold")
    assert r.status_code == 200 and r.json()["status"] == "skipped"
    r = alice.post(f"/v1/sessions/{s}/fold", json={"force": True})
    assert r.status_code == 200, r.text
    fold = r.json()
    assert fold["status"] == "committed" and fold["lo"] == 1
    ledger = alice.get(f"/v1/sessions/{s}/ledger").json()["entries"]
    assert ledger[0]["outcome"] == "committed" and ledger[0]["hi"] == fold["hi"]
    usage = alice.get("/v1/usage").json()
    assert usage["folds"] >= 1 and usage["messages_folded"] >= fold["messages_folded"]


def test_tenant_usage_adds_up_exactly_that_tenants_ledgers(server: Served) -> None:
    """GET /v1/usage (a database aggregate over the tenant's session ids) equals the sum of
    the tenant's own per-session ledgers, and another tenant's folds never show in it."""
    tenant = f"usage-{uuid.uuid4().hex[:6]}"
    neighbour = f"{tenant}-x"  # sorts right beside it: its rows must not leak in
    with server.client(tenant) as mine, server.client(neighbour) as theirs:
        sessions = [sid() for _ in range(3)]
        for s in sessions:
            chat(mine, s, 3, words=3)
            assert mine.post(f"/v1/sessions/{s}/fold", json={"force": True}).json()[
                "status"] == "committed"
        chat(theirs, "other", 3, words=3)
        assert theirs.post("/v1/sessions/other/fold", json={"force": True}).status_code == 200
        rows = [e for s in sessions
                for e in mine.get(f"/v1/sessions/{s}/ledger").json()["entries"]]
        done = [e for e in rows if e["outcome"] == "committed"]
        usage = mine.get("/v1/usage").json()
        assert usage["folds"] == len(done) == 3 and usage["failed"] == len(rows) - len(done)
        for key in ("calls", "input_tokens", "output_tokens"):
            assert usage[key] == sum(e[key] for e in rows), key
        for key in ("messages_folded", "tokens_folded"):
            assert usage[key] == sum(e[key] for e in done), key
        assert sum(usage["by_model"].values()) == usage["input_tokens"] + usage["output_tokens"]
        assert theirs.get("/v1/usage").json()["folds"] == 1


def test_reported_usage_folds_with_the_setting(alice: httpx.Client) -> None:
    s = sid()
    r = alice.put(f"/v1/sessions/{s}/settings",
                  json={"budget": 100_000, "context_limit_tokens": 1000, "preset": "agent",
                        "task_context": "book a flight"})
    assert r.status_code == 200, r.text
    assert r.json()["context_limit_tokens"] == 1000 and r.json()["preset"] == "agent"
    chat(alice, s, 4, words=5)
    r = alice.post(f"/v1/sessions/{s}/usage", json={"input_tokens": 500})
    assert r.status_code == 200 and r.json()["fold"] is None
    r = alice.post(f"/v1/sessions/{s}/usage", json={"input_tokens": 5000})
    assert r.json()["fold"]["status"] == "committed", r.text


def test_settings_rolling_summary_recipe(alice: httpx.Client) -> None:
    """Fold when more than 30 messages and the oldest 20 exceed 15,000 tokens; keep 10."""
    recipe = {"policy": "message_count", "max_messages": 30, "fold_messages": 20,
              "min_tokens": 15_000, "keep_last": 10, "budget": 100_000}
    small, big = sid(), sid()
    for s in (small, big):
        r = alice.put(f"/v1/sessions/{s}/settings", json=recipe)
        assert r.status_code == 200, r.text
        assert alice.get(f"/v1/sessions/{s}/settings").json()["max_messages"] == 30
    chat(alice, small, 16, words=2)  # 32 messages, but the oldest 20 are tiny
    fold = alice.post(f"/v1/sessions/{small}/messages",
                      json={"messages": [user("x")]}).json()["fold"]
    assert fold is None or fold["status"] == "skipped"
    chat(alice, big, 10, words=300)  # 20 messages of ~900 tokens: 18,000 > 15,000
    r = alice.post(f"/v1/sessions/{big}/messages",
                   json={"messages": [user(f"tail {i}", f"t{i}") for i in range(11)]})
    fold = r.json()["fold"]
    assert fold is not None and fold["status"] == "committed", r.text
    assert fold["messages_folded"] == 20 and fold["lo"] == 1 and fold["hi"] == 20
    live = alice.get(f"/v1/sessions/{big}/messages", params={"include_folded": "false"}).json()
    assert len(live["messages"]) == 11


def test_delete_and_list_sessions_paginated(alice: httpx.Client, server: Served) -> None:
    with server.client(f"lister-{uuid.uuid4().hex[:6]}") as c:
        made = [f"p{i:02d}" for i in range(25)]
        for s in made:
            assert c.post(f"/v1/sessions/{s}/messages",
                          json={"messages": [user("hi")]}).status_code == 200
        seen, cursor = [], None
        while True:
            params: dict[str, object] = {"limit": 10}
            if cursor:
                params["cursor"] = cursor
            page = c.get("/v1/sessions", params=params).json()
            seen += [x["session_id"] for x in page["sessions"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert sorted(seen) == made and len(seen) == len(set(seen))
        assert c.delete("/v1/sessions/p03").status_code == 204
        assert c.get("/v1/sessions/p03/context").status_code == 404
        assert c.delete("/v1/sessions/p03").status_code == 404
        ids = [x["session_id"] for x in c.get("/v1/sessions", params={"limit": 100}).json()[
            "sessions"]]
        assert "p03" not in ids and len(ids) == 24


def test_health_ready_metrics_openapi(server: Served, alice: httpx.Client) -> None:
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{server.url}/readyz").json() == {"status": "ready"}
    alice.post(f"/v1/sessions/{sid()}/messages", json={"messages": [user("hi")]})
    text = httpx.get(f"{server.url}/metrics").text
    route = 'route="/v1/sessions/{session_id}/messages"'
    assert f'contextfold_http_requests_total{{method="POST",{route}' in text
    assert "contextfold_http_request_duration_seconds_bucket" in text
    assert "contextfold_messages_appended_total" in text
    doc = httpx.get(f"{server.url}/openapi.json").json()
    assert "/v1/sessions/{session_id}/context" in doc["paths"]
    assert httpx.get(f"{server.url}/docs").status_code == 200


def test_a_forced_fold_keeps_the_sessions_keep_last(alice: httpx.Client) -> None:
    s = sid()
    r = alice.put(f"/v1/sessions/{s}/settings", json={"policy": "message_count",
                                                      "max_messages": 100, "keep_last": 4,
                                                      "budget": 100_000})
    assert r.status_code == 200, r.text
    chat(alice, s, 5)  # 10 messages, no fold due
    fold = alice.post(f"/v1/sessions/{s}/fold", json={"force": True}).json()
    assert fold["status"] == "committed", fold
    assert (fold["lo"], fold["hi"]) == (1, 6)
    live = alice.get(f"/v1/sessions/{s}/messages", params={"include_folded": "false"}).json()
    assert [m["seq"] for m in live["messages"]] == [7, 8, 9, 10]
