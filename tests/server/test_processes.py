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
