"""Several server processes on one PostgreSQL store: keys, sessions and metrics are shared,
and concurrent appends through both processes lose nothing."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

import httpx
import pytest

from .conftest import start_server, user


@pytest.mark.postgres
def test_two_processes_share_keys_sessions_and_metrics(tmp_path: Path) -> None:
    from tests.server.tcp_proxy import fresh_pg_database

    with fresh_pg_database() as (url, _, _):
        served = start_server(tmp_path, store=url, workers=2,
                              config={"limits": {"requests_per_second": 0}})
        try:
            key = served.key("shared")  # made after both processes started
            s = f"pg-{uuid.uuid4().hex[:8]}"
            headers = {"Authorization": f"Bearer {key}"}

            async def client(n: int) -> None:
                # one connection per client: uvicorn spreads connections over the processes
                async with httpx.AsyncClient(base_url=served.url, headers=headers,
                                             timeout=60) as http:
                    for i in range(5):
                        r = await http.post(f"/v1/sessions/{s}/messages",
                                            json={"messages": [user(f"{n}/{i} " * 30,
                                                                    f"c{n}-{i}")]})
                        assert r.status_code == 200, r.text

            async def main() -> None:
                await asyncio.gather(*(client(n) for n in range(12)))

            asyncio.run(main())
            with served.client("shared") as c:
                msgs = c.get(f"/v1/sessions/{s}/messages", params={"limit": 1000}).json()
                ids = [m["message"]["id"] for m in msgs["messages"]]
                assert sorted(ids) == sorted(f"c{n}-{i}" for n in range(12) for i in range(5))
                listed = [x["session_id"] for x in c.get("/v1/sessions").json()["sessions"]]
                assert listed == [s]
            text = httpx.get(f"{served.url}/metrics").text
            total = sum(
                float(v) for v in re.findall(
                    r'contextfold_http_requests_total\{method="POST",'
                    r'route="/v1/sessions/\{session_id\}/messages",status="200"\} (\S+)', text)
            )
            assert total == 60  # both processes' requests, whichever answered /metrics
        finally:
            served.stop()


def test_deferred_folds_are_left_to_contextfold_worker(tmp_path: Path) -> None:
    from .conftest import cli

    served = start_server(tmp_path, config={"fold": "deferred",
                                            "defaults": {"budget": 2000, "keep_last": 2}})
    try:
        with served.client("deferred") as c:
            s = "long-chat"
            batch = [user(f"turn {i}: " + "words and more words " * 50, f"m{i}")
                     for i in range(12)]
            r = c.post(f"/v1/sessions/{s}/messages", json={"messages": batch})
            assert r.status_code == 200 and r.json()["fold"] is None  # only marked due
            assert c.get(f"/v1/sessions/{s}/summary").json()["summary"] is None
            view = c.get(f"/v1/sessions/{s}/context").json()
            assert view["tokens"] <= 2000 and view["trimmed"]  # over budget: trimmed view
            done = cli("worker", "--store", served.store, "--once", "--max-tokens", "2000",
                       env=served.env)
            assert done.returncode == 0, done.stderr
            summary = c.get(f"/v1/sessions/{s}/summary").json()["summary"]
            assert summary is not None and summary["through_seq"] >= 1
            ledger = c.get(f"/v1/sessions/{s}/ledger").json()["entries"]
            assert ledger[0]["outcome"] == "committed"
    finally:
        served.stop()


def test_worker_with_the_server_config_folds_each_session_with_its_own_settings(
    tmp_path: Path,
) -> None:
    """A session that PUT its own policy is marked due by the server under that policy; a
    worker given the server's --config folds it under that policy too (a worker with its
    own policy would find nothing to fold and leave it due forever)."""
    from .conftest import cli

    served = start_server(tmp_path, config={"fold": "deferred",
                                            "defaults": {"budget": 2000, "keep_last": 2}})
    try:
        with served.client("deferred") as c:
            own, default = "own-settings", "default-settings"
            r = c.put(f"/v1/sessions/{own}/settings", json={
                "policy": "message_count", "max_messages": 4, "fold_messages": 3,
                "keep_last": 1})
            assert r.status_code == 200, r.text
            for s in (own, default):
                r = c.post(f"/v1/sessions/{s}/messages",
                           json={"messages": [user(f"short note {i}") for i in range(10)]})
                assert r.status_code == 200 and r.json()["fold"] is None  # only marked due
            done = cli("worker", "--config", str(tmp_path / "server.json"), "--store",
                       served.store, "--once", "--json", env=served.env)
            assert done.returncode == 0, done.stderr
            # message_count(4, fold 3): folded three at a time until at most 4 are live
            summary = c.get(f"/v1/sessions/{own}/summary").json()["summary"]
            assert summary is not None and summary["through_seq"] == 6
            live = c.get(f"/v1/sessions/{own}/messages",
                         params={"include_folded": "false"}).json()["messages"]
            assert [m["seq"] for m in live] == [7, 8, 9, 10]
            folds = [e for e in c.get(f"/v1/sessions/{own}/ledger").json()["entries"]
                     if e["outcome"] == "committed"]
            assert [e["messages_folded"] for e in folds] == [3, 3]
            # the other session is far under the default 2,000-token budget: not folded
            assert c.get(f"/v1/sessions/{default}/summary").json()["summary"] is None
            assert c.get(f"/v1/sessions/{default}/ledger").json()["entries"] == []
    finally:
        served.stop()


def test_retention_delete_in_the_server_config_removes_folded_messages(
    tmp_path: Path,
) -> None:
    served = start_server(tmp_path, config={
        "retention": "delete",
        "defaults": {"policy": "message_count", "max_messages": 4, "fold_messages": 3,
                     "keep_last": 1}})
    try:
        with served.client("private") as c:
            r = c.post("/v1/sessions/chat/messages",
                       json={"messages": [user(f"note {i}") for i in range(5)]})
            assert r.status_code == 200 and r.json()["fold"]["status"] == "committed"
            stored = c.get("/v1/sessions/chat/messages").json()["messages"]
            assert [m["seq"] for m in stored] == [4, 5]  # 1..3 folded and gone
            assert c.get("/v1/sessions/chat/summary").json()["summary"]["through_seq"] == 3
    finally:
        served.stop()
    archived = start_server(tmp_path / "archive", config={
        "defaults": {"policy": "message_count", "max_messages": 4, "fold_messages": 3,
                     "keep_last": 1}})
    try:
        with archived.client("keeper") as c:
            c.post("/v1/sessions/chat/messages",
                   json={"messages": [user(f"note {i}") for i in range(5)]})
            stored = c.get("/v1/sessions/chat/messages").json()["messages"]
            assert [(m["seq"], m["folded"]) for m in stored] == [
                (1, True), (2, True), (3, True), (4, False), (5, False)]
    finally:
        archived.stop()
