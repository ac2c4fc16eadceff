"""The inspector's /v1 read routes, against a real ``contextfold serve`` process over a
seeded SQLite file: content, pagination, tenant isolation, errors, and the /ui/ page's
files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextfold.server.app import create_app
from contextfold.server.catalog import open_catalog
from contextfold.server.config import ServerConfig
from contextfold.server.keys import create_key
from contextfold.server.ui import STATIC_DIR

from .live import Served, serve_in_thread, start_server, stop
from .seed import chat_turn

DEMO_SESSIONS = {"long-chat", "flaky-fold", "agent-run", "short-0", "short-1", "short-2"}


def _get(client: httpx.Client, path: str, **params: Any) -> Any:
    res = client.get(path, params=params)
    assert res.status_code == 200, res.text
    return res.json()


def test_sessions_list_filter_sort_and_pages(served: Served) -> None:
    with served.client() as c:
        page = _get(c, "/v1/inspect/sessions")
        assert {s["session_id"] for s in page["sessions"]} == DEMO_SESSIONS
        assert page["total"] == 6 and page["next_cursor"] is None
        flaky = next(s for s in page["sessions"] if s["session_id"] == "flaky-fold")
        assert flaky["folds"] == 0 and flaky["failed_folds"] > 0
        # its folds fail: what is stored is over the budget, what the model receives is not
        assert flaky["context_tokens"] <= flaky["budget"] == 700 < flaky["stored_tokens"]
        assert 0 < flaky["waiting_messages"] < flaky["live"]
        for row in page["sessions"]:
            assert row["budget"] is None or row["context_tokens"] <= row["budget"], row
            assert row["context_tokens"] <= row["stored_tokens"] or row["waiting_messages"] == 0
        chat = next(s for s in page["sessions"] if s["session_id"] == "long-chat")
        assert chat["folds"] >= 5 and chat["summarizer_tokens"] > 0
        assert chat["messages"] == chat["live"] + chat["folded"] == 80
        for sort in ("activity", "id"):
            seen: list[str] = []
            cursor = None
            while True:
                params: dict[str, Any] = {"limit": 2, "sort": sort}
                if cursor:
                    params["cursor"] = cursor
                page = _get(c, "/v1/inspect/sessions", **params)
                seen += [s["session_id"] for s in page["sessions"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert sorted(seen) == sorted(DEMO_SESSIONS) and len(seen) == 6
            if sort == "id":
                assert seen == sorted(seen)
        assert [s["session_id"] for s in _get(c, "/v1/inspect/sessions", q="CHAT")["sessions"]] \
            == ["long-chat"]
        short = _get(c, "/v1/inspect/sessions", q="short", sort="id", limit=2)
        assert short["total"] == 3 and [s["session_id"] for s in short["sessions"]] == [
            "short-0", "short-1"]
        assert _get(c, "/v1/inspect/sessions", q="%")["total"] == 0  # a literal, not a wildcard
        bad = c.get("/v1/inspect/sessions", params={"cursor": "nonsense", "sort": "id"})
        assert bad.status_code == 422
        assert bad.headers["content-type"].startswith("application/problem+json")
        assert bad.json()["code"] == "validation_error"


def test_every_route_needs_the_tenants_key(served: Served) -> None:
    routes = ["/v1/inspect/sessions"] + [
        f"/v1/sessions/long-chat/inspect{tail}"
        for tail in ("", "/series", "/timeline", "/folds", "/folds/1", "/context")
    ]
    with served.client(None) as anonymous, served.client("other") as other:
        for route in routes:
            res = anonymous.get(route)
            assert res.status_code == 401 and res.json()["code"] == "unauthorized", route
        for route in routes[1:]:  # another tenant: exactly like a session that does not exist
            res = other.get(route)
            assert res.status_code == 404 and res.json()["code"] == "not_found", route
            assert res.json() == other.get(route.replace("long-chat", "no-such")).json() | {
                "detail": res.json()["detail"], "instance": res.json()["instance"]}
        listed = _get(other, "/v1/inspect/sessions")
        assert [s["session_id"] for s in listed["sessions"]] == ["secret-chat"]
        assert _get(other, "/v1/inspect/sessions", q="chat")["total"] == 1


def test_series_matches_the_stored_totals_and_pages_back(served: Served) -> None:
    with served.client() as c:
        info = _get(c, "/v1/sessions/long-chat/inspect")
        assert info["retention"] == "archive" and info["summary_history"] is True
        latest = _get(c, "/v1/sessions/long-chat/inspect/series", limit=30)
        assert latest["budget"] == 700 and latest["last_seq"] == 80
        assert latest["points"][-1]["stored_tokens"] == info["stored_tokens"]
        assert info["context_tokens"] <= 700
        assert [p["seq"] for p in latest["points"]] == list(range(51, 81))
        seqs, folds, points = [], [], []
        before = None
        while True:
            page = _get(c, "/v1/sessions/long-chat/inspect/series", limit=25,
                        **({"before_seq": before} if before else {}))
            seqs = [p["seq"] for p in page["points"]] + seqs
            points = page["points"] + points
            folds = page["folds"] + folds
            before = page["next_before_seq"]
            if before is None:
                break
        assert seqs == list(range(1, 81))
        assert all(p["context_tokens"] <= 700 for p in points)
        assert [f["version"] for f in folds] == list(range(1, info["folds"] + 1))
        for f in folds:
            assert f["before_tokens"] > 700 >= f["after_tokens"]  # each fold brought it under
            assert f["lo"] <= f["through_seq"] <= f["at_seq"]


def test_numbers_say_what_the_model_received_apart_from_what_waits(served: Served) -> None:
    """A session whose folds fail stores more than its budget; the inspector's numbers for
    "the context" are what ``context()`` gives (never over the budget), and what is stored
    live and waiting to fold is reported apart."""
    with served.client() as c:
        info = _get(c, "/v1/sessions/flaky-fold/inspect")
        ctx = _get(c, "/v1/sessions/flaky-fold/inspect/context")
        assert info["context_tokens"] == ctx["tokens"] <= info["budget"] == 700
        assert info["waiting_messages"] == ctx["omitted"] > 0
        assert info["stored_tokens"] > 700
        series = _get(c, "/v1/sessions/flaky-fold/inspect/series")
        assert max(p["stored_tokens"] for p in series["points"]) > 700
        assert all(p["context_tokens"] <= 700 for p in series["points"])
        assert series["points"][-1]["stored_tokens"] == info["stored_tokens"]


def test_timeline_marks_folded_messages_with_their_fold(served: Served) -> None:
    with served.client() as c:
        folds = {f["version"]: f for f in _get(
            c, "/v1/sessions/long-chat/inspect/series", limit=5000)["folds"]}
        seen, after = [], 0
        while True:
            page = _get(c, "/v1/sessions/long-chat/inspect/timeline", after_seq=after, limit=30)
            for m in page["messages"]:
                seen.append(m["seq"])
                if m["folded"]:
                    fold = folds[m["fold_version"]]
                    assert fold["lo"] <= m["seq"] <= fold["through_seq"]
                else:
                    assert m["fold_version"] is None
            if page["next_after_seq"] is None:
                break
            after = page["next_after_seq"]
        assert seen == list(range(1, 81))
        agent = _get(c, "/v1/sessions/agent-run/inspect/timeline", limit=4)["messages"]
        assert agent[1]["message"]["tool_calls"][0]["id"] == agent[2]["message"]["tool_call_id"]


def test_fold_diffs_chain_and_carry_the_fact_check(served: Served) -> None:
    with served.client() as c:
        n = _get(c, "/v1/sessions/long-chat/inspect")["folds"]
        previous_after = ""
        lost_any = False
        for version in range(1, n + 1):
            d = _get(c, f"/v1/sessions/long-chat/inspect/folds/{version}")
            assert d["before"] == previous_after
            ops = d["diff"]
            assert "".join(o["text"] for o in ops if o["op"] != "insert") == d["before"]
            assert "".join(o["text"] for o in ops if o["op"] != "delete") == d["after"]
            assert d["ledger"]["outcome"] == "committed" and d["ledger"]["model"] == "fake-llm-1"
            assert d["ledger"]["hi"] == d["through_seq"] and d["ledger"]["input_tokens"] > 0
            lost_any = lost_any or bool(d["lost_facts"])
            for fact in d["lost_facts"]:
                assert fact in d["before"] and fact not in d["after"]
            previous_after = d["after"]
        assert lost_any
        current = _get(c, "/v1/sessions/long-chat/summary")["summary"]
        assert current["text"] == previous_after
        missing = c.get(f"/v1/sessions/long-chat/inspect/folds/{n + 1}")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"


def test_failed_folds_show_a_redacted_error(served: Served) -> None:
    with served.client() as c:
        page = _get(c, "/v1/sessions/flaky-fold/inspect/folds", limit=3)
        assert page["next_before_id"] is not None
        rest = _get(c, "/v1/sessions/flaky-fold/inspect/folds",
                    before_id=page["next_before_id"], limit=100)
        rows = page["folds"] + rest["folds"]
        assert len({r["id"] for r in rows}) == len(rows) > 3
        for row in rows:
            assert row["outcome"] == "failed" and row["version"] is None
            assert row["error_class"] == "SummarizationError" and row["model"] == "flaky-model"
            assert "503" in row["error"] and "dana.okafor@example.com" not in row["error"]


def test_context_now_has_per_message_tokens(served: Served) -> None:
    with served.client() as c:
        info = _get(c, "/v1/sessions/agent-run/inspect")
        ctx = _get(c, "/v1/sessions/agent-run/inspect/context")
        kinds = [m["kind"] for m in ctx["messages"]]
        assert kinds[0] == "summary" and kinds.count("summary") == 1
        assert len(ctx["messages"]) == info["live"] + 1 + kinds.count("bridge")
        assert all(m["tokens"] > 0 for m in ctx["messages"])
        assert sum(m["tokens"] for m in ctx["messages"]) <= ctx["tokens"] <= ctx["budget"]
        with_system = _get(c, "/v1/sessions/agent-run/inspect/context", system="Be brief.")
        assert with_system["messages"][0]["kind"] == "system"


def test_ui_is_served_from_the_package_with_no_network(served: Served) -> None:
    with served.client(None) as c:
        page = c.get("/ui/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert "http://" not in page.text and "https://" not in page.text
        for name in ("inspector.js", "inspector-chart.js", "inspector.css"):
            res = c.get(f"/ui/static/{name}")
            assert res.status_code == 200 and res.text == (STATIC_DIR / name).read_text()
            text = res.text.replace("http://www.w3.org/2000/svg", "")  # a namespace, not a URL
            assert "https://" not in text and "http://" not in text
        assert c.get("/ui", follow_redirects=False).status_code == 308
        assert c.get("/ui/config.json").json() == {"dev": False, "dev_tenant": None}
        schema = c.get("/openapi.json").json()
        assert "/v1/inspect/sessions" in schema["paths"]
        assert not any(p.startswith("/ui") for p in schema["paths"])


def test_dev_mode_skips_keys_on_loopback_only(served: Served) -> None:
    base, proc = start_server(served.seeded.db, dev=True)
    try:
        with httpx.Client(base_url=base) as c:
            assert c.get("/ui/config.json").json() == {"dev": True, "dev_tenant": "dev"}
            assert c.get("/v1/inspect/sessions").json()["sessions"] == []  # tenant "dev"
            keyed = c.get("/v1/inspect/sessions",
                          headers={"Authorization": f"Bearer {served.seeded.key}"})
            assert keyed.json()["total"] == 6  # a key still means its tenant
            bad = c.get("/v1/inspect/sessions", headers={"Authorization": "Bearer nope"})
            assert bad.status_code == 401
            # every session route too, writes included (the TypeScript quick start's path)
            put = c.put("/v1/sessions/dev-chat/settings", json={"budget": 600})
            assert put.status_code == 200, put.text
            added = c.post("/v1/sessions/dev-chat/messages",
                           json={"messages": [{"role": "user", "content": "hi", "id": "m1"}]})
            assert added.status_code == 200, added.text
            assert c.get("/v1/sessions/dev-chat/context").status_code == 200
            assert c.get("/v1/sessions/dev-chat/inspect").json()["messages"] == 1
            assert c.post("/v1/sessions/dev-chat/fold", json={"force": True}).status_code == 200
            assert [s["session_id"] for s in c.get("/v1/sessions").json()["sessions"]] == [
                "dev-chat"]
            other = c.get("/v1/sessions/dev-chat/context",
                          headers={"Authorization": f"Bearer {served.seeded.key}"})
            assert other.status_code == 404  # the dev tenant's session, not the key's
    finally:
        stop(proc)
    refused = subprocess.run(
        [sys.executable, "-m", "contextfold.cli", "serve", "--dev", "--host", "0.0.0.0",
         "--db", str(served.seeded.db)], capture_output=True, text=True, timeout=60,
    )
    assert refused.returncode != 0 and "127.0.0.1 only" in refused.stderr + refused.stdout


@pytest.mark.parametrize("name", ["index.html", "inspector.js", "inspector-chart.js",
                                  "inspector.css", "docs.html", "docs.js"])
def test_static_files_are_package_data(name: str) -> None:
    assert (STATIC_DIR / name).is_file()


def test_delete_retention_shows_numbers_not_deleted_text(tmp_path: Path) -> None:
    """A store with ``delete`` retention keeps no folded message and no older summary: the
    API says so (retention, summary_history), the timeline starts after the deleted ones,
    past context sizes are unknown (null), and fold detail has no before/diff/fact check."""
    url = f"sqlite:///{tmp_path / 'private.db'}"
    catalog = open_catalog(url)
    catalog.setup()
    key, _ = create_key(catalog, "demo")
    catalog.close()
    app = create_app(ServerConfig(fold="inline"), url)  # reads folds right after appends
    app.state.contextfold.store.retention = "delete"  # the privacy mode; no server flag yet
    with serve_in_thread(app) as base, httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {key}"}
    ) as c:
        assert c.put("/v1/sessions/p/settings", json={"budget": 300, "keep_last": 2}
                     ).status_code == 200
        for i in range(12):
            res = c.post("/v1/sessions/p/messages", json={"messages": chat_turn(i)})
            assert res.status_code == 200, res.text
        info = _get(c, "/v1/sessions/p/inspect")
        assert info["retention"] == "delete" and info["summary_history"] is False
        assert info["folds"] >= 2
        through = info["folded"]
        timeline = _get(c, "/v1/sessions/p/inspect/timeline", limit=500)
        assert timeline["deleted_before"] == through
        assert [m["seq"] for m in timeline["messages"]] == list(
            range(through + 1, info["messages"] + 1))
        series = _get(c, "/v1/sessions/p/inspect/series")
        points = {p["seq"]: p["stored_tokens"] for p in series["points"]}
        assert points[1] is None and points[info["messages"]] == info["stored_tokens"]
        assert all(f["before_tokens"] is None or f["at_seq"] > through
                   for f in series["folds"])
        latest = _get(c, f"/v1/sessions/p/inspect/folds/{info['folds']}")
        current = _get(c, "/v1/sessions/p/summary")["summary"]["text"]
        assert latest["after"] == current and latest["before"] is None
        assert latest["diff"] is None and latest["lost_facts"] is None
        assert latest["history_kept"] is False
        older = _get(c, "/v1/sessions/p/inspect/folds/1")
        assert older["after"] is None and older["ledger"]["outcome"] == "committed"
