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
