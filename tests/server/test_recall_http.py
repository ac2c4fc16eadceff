"""Recall over real HTTP: ``query`` on GET/POST …/context, ``recalled`` in the answer,
recall as a session setting, the block inside the user turn for Anthropic/Gemini, and
another tenant's messages never recalled."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from contextfold.recall import RECALL_HEADER
from tests.server.conftest import assert_problem, assistant, user

ROOMS = 24


def code(room: int, base: int = 7000) -> str:
    return str(base + room * 13)


def session() -> str:
    return f"recall-{uuid.uuid4().hex[:10]}"


def fill(client: httpx.Client, sid: str, base: int = 7000) -> None:
    """Planted facts (a locker code for each of 24 rooms), then enough chat to fold them
    away (the shared server's budget is 400 tokens), then a forced fold of what is left:
    the summary cannot quote all 24, so some are only in the archive."""
    msgs = []
    for room in range(10, 10 + ROOMS):  # two-digit rooms: one-digit terms are not searched
        msgs.append(user(f"The locker code for room {room} is {code(room, base)}."))
        msgs.append(assistant(f"Noted the code of room {room}."))
    for i in range(14):
        msgs.append(user(f"Today I watered the tomatoes and read chapter {i + 3} of the "
                         f"Dune book with Priya {i}."))
        msgs.append(assistant(f"Lovely, which chapter was it this time? ({i})"))
    for lo in range(0, len(msgs), 20):
        r = client.post(f"/v1/sessions/{sid}/messages", json={"messages": msgs[lo:lo + 20]})
        assert r.status_code == 200, r.text
    r = client.post(f"/v1/sessions/{sid}/fold", json={"force": True})
    assert r.status_code == 200, r.text


def lost_room(client: httpx.Client, sid: str) -> int:
    """A room whose code the summary does not quote (recall has to bring it back)."""
    summary = client.get(f"/v1/sessions/{sid}/summary").json()["summary"]["text"]
    lost = [room for room in range(10, 10 + ROOMS) if code(room) not in summary]
    assert lost, "the summary quoted every planted code"
    return lost[len(lost) // 2]


def context(client: httpx.Client, sid: str, **params: Any) -> dict[str, Any]:
    r = client.get(f"/v1/sessions/{sid}/context", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["tokens"] <= body["budget"]
    return body


def block_text(body: dict[str, Any]) -> str:
    """The recalled block's text (OpenAI shape)."""
    found = [str(m["content"]) for m in body["messages"]
             if str(m["content"]).startswith(RECALL_HEADER)]
    assert len(found) <= 1
    return found[0] if found else ""


def texts(body: dict[str, Any]) -> str:
    out = [body.get("system") or ""]
    for m in body["messages"]:
        content = m.get("content", m.get("parts"))
        if isinstance(content, str):
            out.append(content)
        else:
            out.extend(str(p.get("text", "")) for p in content or ())
    return "\n".join(out)


def test_query_recalls_a_folded_fact(alice: httpx.Client) -> None:
    sid = session()
    fill(alice, sid)
    room = lost_room(alice, sid)
    plain = context(alice, sid)
    assert plain["recalled"] == []
    body = context(alice, sid, query=f"what is the locker code for room {room}")
    assert body["recalled"] and f"room {room} is {code(room)}" in block_text(body)
    block = [m for m in body["messages"] if str(m["content"]).startswith(RECALL_HEADER)]
    assert len(block) == 1 and block[0]["role"] == "user"
    # the block is the only difference from the plain context
    assert [m for m in body["messages"] if m not in block] == plain["messages"]
    post = alice.post(f"/v1/sessions/{sid}/context",
                      json={"query": f"locker code room {room}", "max_tokens": 1000})
    assert post.status_code == 200 and post.json()["recalled"]
    assert post.json()["tokens"] <= 1000


def test_no_match_gives_the_plain_context(alice: httpx.Client) -> None:
    sid = session()
    fill(alice, sid)
    assert context(alice, sid, query="volcano submarine") == context(alice, sid)


def test_anthropic_and_gemini_carry_the_block_inside_the_user_turn(
        alice: httpx.Client) -> None:
    sid = session()
    fill(alice, sid)
    room = lost_room(alice, sid)
    r = alice.post(f"/v1/sessions/{sid}/messages", json={"messages": [
        user("Remind me of the combination please.")]})
    assert r.status_code == 200, r.text
    for fmt, key in (("anthropic", "content"), ("gemini", "parts")):
        body = context(alice, sid, format=fmt, query=f"locker code for room {room}")
        assert body["recalled"] and RECALL_HEADER not in (body["system"] or "")
        turns = body["messages"]
        last_user = [t for t in turns if t["role"] == "user"][-1]
        parts = [p.get("text", "") for p in last_user[key]]
        assert parts[0].startswith(RECALL_HEADER) and code(room) in parts[0]
        assert parts[-1] == "Remind me of the combination please."  # the same turn


def test_recall_as_a_session_setting(alice: httpx.Client) -> None:
    sid = session()
    r = alice.put(f"/v1/sessions/{sid}/settings", json={"recall": True})
    assert r.status_code == 200 and r.json()["recall"] is True
    fill(alice, sid)
    room = lost_room(alice, sid)
    r = alice.post(f"/v1/sessions/{sid}/messages", json={"messages": [
        user(f"Did I tell you the locker code for room {room}?")]})
    assert r.status_code == 200, r.text
    body = context(alice, sid)  # the newest user message is the query
    assert body["recalled"] and code(room) in block_text(body)
    r = alice.post(f"/v1/sessions/{sid}/messages", json={"messages": [
        assistant("Yes."), user("Great, thanks! Off to water the tomatoes now.")]})
    assert context(alice, sid)["recalled"] == []  # an ordinary turn: the gate stays shut
    assert_problem(alice.put(f"/v1/sessions/{sid}/settings", json={"recall": "often"}),
                   422, "validation_error")


def test_another_tenants_messages_never_match(alice: httpx.Client,
                                              mallory: httpx.Client) -> None:
    sid = session()
    fill(alice, sid)
    fill(mallory, sid, base=3000)  # same session id, own tenant, other codes
    room = lost_room(alice, sid)
    body = context(mallory, sid, query=f"locker code for room {room}")
    assert code(room) not in texts(body)  # alice's code; mallory's own may be recalled
    assert all(code(r) not in texts(body) for r in range(10, 10 + ROOMS))
    assert_problem(mallory.get(f"/v1/sessions/{session()}/context",
                               params={"query": "locker"}), 404, "not_found")


def test_bad_query_is_422(alice: httpx.Client) -> None:
    sid = session()
    fill(alice, sid)
    assert_problem(alice.get(f"/v1/sessions/{sid}/context", params={"query": ""}),
                   422, "validation_error")
    assert_problem(alice.post(f"/v1/sessions/{sid}/context", json={"query": "x" * 5000}),
                   422, "validation_error")
