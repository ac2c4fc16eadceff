"""The inspector's routes on a PostgreSQL-backed service: the session list's filter, sort
and keyset pages go through the PostgreSQL catalog, fold diffs through PostgreSQL's
summary versions."""

from __future__ import annotations

import httpx

from contextfold.server.app import create_app
from contextfold.server.catalog import open_catalog
from contextfold.server.config import ServerConfig
from contextfold.server.keys import create_key

from ..inspector.live import serve_in_thread
from ..inspector.seed import chat_turn


def test_inspector_routes_on_postgres(pg_url: str) -> None:
    catalog = open_catalog(pg_url)
    catalog.setup()
    key, _ = create_key(catalog, "demo")
    other, _ = create_key(catalog, "other")
    catalog.close()
    app = create_app(ServerConfig(fold="inline"), pg_url)  # reads folds right after appends
    with serve_in_thread(app) as base, httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {key}"}
    ) as c:
        for sid in ("chat_a", "chat-b", "Other+1"):
            assert c.put(f"/v1/sessions/{sid}/settings", json={"budget": 300}).status_code == 200
            for i in range(8):
                res = c.post(f"/v1/sessions/{sid}/messages", json={"messages": chat_turn(i)})
                assert res.status_code == 200, res.text
        seen, cursor = [], None
        while True:
            params = {"sort": "id", "limit": 1, **({"cursor": cursor} if cursor else {})}
            page = c.get("/v1/inspect/sessions", params=params).json()
            seen += [s["session_id"] for s in page["sessions"]]
            if not (cursor := page["next_cursor"]):
                break
        # every session once (the order is the database's collation)
        assert sorted(seen) == sorted(["chat_a", "chat-b", "Other+1"]) and len(seen) == 3
        filtered = c.get("/v1/inspect/sessions", params={"q": "CHAT_"}).json()
        assert [s["session_id"] for s in filtered["sessions"]] == ["chat_a"]  # _ is literal
        assert c.get("/v1/inspect/sessions", params={"q": "%"}).json()["total"] == 0
        info = c.get("/v1/sessions/chat_a/inspect").json()
        assert info["folds"] >= 2 and info["summary_history"] is True
        detail = c.get(f"/v1/sessions/chat_a/inspect/folds/{info['folds']}").json()
        previous = c.get(f"/v1/sessions/chat_a/inspect/folds/{info['folds'] - 1}").json()
        assert detail["before"] == previous["after"] and detail["diff"] is not None
        series = c.get("/v1/sessions/chat_a/inspect/series").json()
        assert series["points"][-1]["context_tokens"] == info["context_tokens"]
        stranger = c.get("/v1/sessions/chat_a/inspect",
                         headers={"Authorization": f"Bearer {other}"})
        assert stranger.status_code == 404
