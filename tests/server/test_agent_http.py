"""An agent's tool loop over real HTTP: observation masking as a session setting, and the
context response saying which results it cut (``elided``), masked (``masked``) or left out
(``omitted_seqs``)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from contextfold.masking import STAND_IN_PREFIX

from .conftest import assert_problem, user

RESERVATION_FLIGHTS = 12


def sid(prefix: str = "agent") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def tool_step(i: int, name: str = "get_reservation") -> list[dict[str, Any]]:
    """One step of the loop: a call and its ~350-token JSON result."""
    call = {"role": "assistant", "content": None, "id": f"a{i}", "tool_calls": [
        {"id": f"c{i}", "type": "function",
         "function": {"name": name, "arguments": json.dumps({"reservation_id": f"R{i:04d}"})}}]}
    result = {"role": "tool", "tool_call_id": f"c{i}", "id": f"t{i}", "content": json.dumps({
        "reservation_id": f"R{i:04d}", "status": "confirmed", "flights": [
            {"number": f"HX{100 + j}", "date": "2024-05-20", "seat": f"{j}A"}
            for j in range(RESERVATION_FLIGHTS)]})}
    return [call, result]


def put_settings(client: httpx.Client, session: str, **settings: Any) -> dict[str, Any]:
    r = client.put(f"/v1/sessions/{session}/settings", json=settings)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def append(client: httpx.Client, session: str, messages: list[dict[str, Any]]) -> None:
    r = client.post(f"/v1/sessions/{session}/messages", json={"messages": messages})
    assert r.status_code == 200, r.text


def context(client: httpx.Client, session: str, **params: Any) -> dict[str, Any]:
    r = client.get(f"/v1/sessions/{session}/context", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["tokens"] <= body["budget"], body
    assert_paired(body["messages"])
    return body


def assert_paired(messages: list[dict[str, Any]]) -> None:
    """OpenAI shape: each call's results follow it before anything else, and every result
    answers a call shown."""
    open_calls: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, ("a result without its call", m)
            open_calls.discard(m["tool_call_id"])
            continue
        assert not open_calls, ("calls without results", open_calls)
        open_calls = {c["id"] for c in m.get("tool_calls") or ()}
    assert not open_calls, ("calls without results", open_calls)


def stand_ins(body: dict[str, Any]) -> dict[str, str]:
    """tool_call_id → stand-in text, of the results shown as stand-ins."""
    return {m["tool_call_id"]: m["content"] for m in body["messages"]
            if m["role"] == "tool" and str(m["content"]).startswith(STAND_IN_PREFIX)}


def test_agent_preset_masks_older_results_with_stable_stand_ins(alice: httpx.Client) -> None:
    s = sid()
    settings = put_settings(alice, s, preset="agent", budget=2000, keep_last=2)
    assert settings["masking"] == {"keep": 3, "exclude_tools": [], "keep_call_args": True,
                                   "trigger_tokens": None, "fact_chars": None}
    append(alice, s, [user("Find the reservations of mia_li_3668 and rebook them.", "u0")])
    seen: dict[str, str] = {}
    for i in range(8):
        append(alice, s, tool_step(i))
        body = context(alice, s, system="You are a travel agent.")
        shown = stand_ins(body)
        assert body["masked"] == len(shown)
        # a stand-in never changes once made (a provider's prompt cache keeps hitting)
        assert all(seen[k] == v for k, v in shown.items() if k in seen)
        seen.update(shown)
    assert body["masked"] > 0 and body["elided"] == [] and not body["truncated"]
    newest = [m for m in body["messages"] if m["role"] == "tool"][-3:]
    assert all(not m["content"].startswith(STAND_IN_PREFIX) for m in newest)
    # a stand-in names the stored seq of the whole result, which the store still has
    text = next(iter(shown.values()))
    seq = int(text.split("stored as seq ")[1].split("]")[0])
    stored = alice.get(f"/v1/sessions/{s}/messages", params={"after_seq": seq - 1, "limit": 1})
    whole = stored.json()["messages"][0]
    assert whole["seq"] == seq and whole["message"]["content"].startswith('{"reservation_id"')
    # the same call again answers byte for byte the same (anthropic shape too)
    again = context(alice, s, system="You are a travel agent.")
    assert again["messages"] == body["messages"] and again["masked"] == body["masked"]
    anthropic = alice.get(f"/v1/sessions/{s}/context", params={"format": "anthropic"}).json()
    assert anthropic["masked"] == body["masked"]


def test_explicit_masking_options_over_http(alice: httpx.Client) -> None:
    s = sid()
    put_settings(alice, s, budget=4000, masking={
        "keep": 1, "trigger_tokens": 0, "exclude_tools": ["get_user"], "keep_call_args": False,
        "fact_chars": 120})
    append(alice, s, [user("Check user mia_li_3668.", "u0")])
    append(alice, s, tool_step(0, "get_user"))
    for i in range(1, 4):
        append(alice, s, tool_step(i))
    body = context(alice, s)
    shown = stand_ins(body)
    # get_user's result is never masked; the newest result is kept; the rest are masked
    assert sorted(shown) == ["c1", "c2"] and body["masked"] == 2
    assert all(len(text) < 400 and "Called as get_reservation(" in text
               for text in shown.values())
    calls = {c["id"]: c["function"]["arguments"] for m in body["messages"]
             for c in m.get("tool_calls") or ()}
    assert calls["c1"] == "{}" and calls["c0"] != "{}" and calls["c3"] != "{}"


def test_a_huge_tool_result_is_elided_never_over_budget(alice: httpx.Client) -> None:
    s = sid()
    put_settings(alice, s, preset="agent", budget=1500)
    log = "\n".join(f"line {i}: status ok value {i * 7}" for i in range(3000))
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "h1", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]}
    append(alice, s, [user("Read the build log."), call,
                      {"role": "tool", "tool_call_id": "h1", "content": log}])
    body = context(alice, s)
    assert body["elided"] == [3] and body["truncated"] and body["trimmed"]
    shown = next(m for m in body["messages"] if m["role"] == "tool")
    assert shown["content"].startswith("line 0:") and shown["content"].endswith("value 20993")
    assert "seq 3" in shown["content"] and len(shown["content"]) < len(log)
    # the store keeps it whole
    stored = alice.get(f"/v1/sessions/{s}/messages", params={"after_seq": 2, "limit": 1})
    assert stored.json()["messages"][0]["message"]["content"] == log
    for fmt in ("anthropic", "gemini"):
        other = alice.get(f"/v1/sessions/{s}/context", params={"format": fmt}).json()
        assert other["elided"] == [3] and other["tokens"] <= 1500


def test_masking_off_shows_no_stand_ins(alice: httpx.Client) -> None:
    off, conversation = sid(), sid()
    assert put_settings(alice, off, preset="agent", budget=2000, masking=False)["masking"] is None
    assert put_settings(alice, conversation, budget=2000)["masking"] is None
    for s in (off, conversation):
        append(alice, s, [user("Find the reservations of mia_li_3668.", "u0")])
        for i in range(8):
            append(alice, s, tool_step(i))
            body = context(alice, s)
            assert body["masked"] == 0 and stand_ins(body) == {}
        assert body["omitted"] > 0 or body["summary"] is not None  # it folded or trimmed


def test_settings_resolve_masking_from_the_preset_unless_set(alice: httpx.Client) -> None:
    s = sid()
    assert put_settings(alice, s, preset="agent")["masking"]["keep"] == 3
    assert put_settings(alice, s, preset="agent", masking=None)["masking"] is None
    assert put_settings(alice, s, preset="conversation")["masking"] is None
    assert put_settings(alice, s, masking=True)["masking"]["keep"] == 3
    got = put_settings(alice, s, masking={"keep": 0, "exclude_tools": ["b", "a", "b"]})
    assert got["masking"]["keep"] == 0 and got["masking"]["exclude_tools"] == ["a", "b"]
    assert alice.get(f"/v1/sessions/{s}/settings").json() == got


def test_invalid_masking_settings_are_422_and_change_nothing(alice: httpx.Client) -> None:
    s = sid()
    before = put_settings(alice, s, preset="agent", masking={"keep": 2})
    bad: list[tuple[Any, str]] = [
        ({"keep": -1}, "masking.keep"),
        ({"fact_chars": 10}, "masking.fact_chars"),
        ({"trigger_tokens": -5}, "masking.trigger_tokens"),
        ({"exclude_tools": "read_log"}, "masking.exclude_tools"),
        ({"exclude_tools": [""]}, "masking.exclude_tools.0"),
        ({"keep": "three"}, "masking.keep"),
        ({"kept": 3}, "masking.kept"),
        ("yes", "masking"),
        (3, "masking"),
    ]
    for masking, where in bad:
        r = alice.put(f"/v1/sessions/{s}/settings", json={"preset": "agent", "masking": masking})
        problem = assert_problem(r, 422, "validation_error")
        assert problem["detail"].startswith(f"{where}:"), (masking, problem["detail"])
        assert alice.get(f"/v1/sessions/{s}/settings").json() == before
    # a new session given bad settings is not created
    fresh = sid()
    r = alice.put(f"/v1/sessions/{fresh}/settings", json={"masking": {"keep": -1}})
    assert_problem(r, 422, "validation_error")
    assert_problem(alice.get(f"/v1/sessions/{fresh}/settings"), 404, "not_found")


def test_inspector_context_reports_masking(alice: httpx.Client) -> None:
    s = sid()
    put_settings(alice, s, budget=4000, masking={"keep": 1, "trigger_tokens": 0})
    append(alice, s, [user("Find the reservations.", "u0")])
    for i in range(3):
        append(alice, s, tool_step(i))
    r = alice.get(f"/v1/sessions/{s}/inspect/context")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["masked"] == 2 and body["elided"] == []
    tools = [m["message"]["content"] for m in body["messages"] if m["message"]["role"] == "tool"]
    assert [t.startswith(STAND_IN_PREFIX) for t in tools] == [True, True, False]
    # the stored messages stay whole
    stored = alice.get(f"/v1/sessions/{s}/messages").json()["messages"]
    assert not any(str(m["message"].get("content")).startswith(STAND_IN_PREFIX) for m in stored)
