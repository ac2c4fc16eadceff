"""A flood of one key's appends against a running server with several processes, and the
check that they held one shared rate limit (shared by the store- and Redis-backed tests)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx

from .conftest import user


def assert_one_limit(served: Any, rate: float = 5, burst: int = 10) -> None:
    """12 clients × 6 appends with one key: only 429s beyond the burst plus the rate over
    the elapsed time, whichever process answered (``served``: a ``start_server`` result
    configured with ``rate`` and ``burst``)."""
    key = served.key("limited")
    statuses: list[int] = []

    async def client(n: int) -> None:
        async with httpx.AsyncClient(
            base_url=served.url, headers={"Authorization": f"Bearer {key}"},
            timeout=30, limits=httpx.Limits(max_connections=1),
        ) as http:
            for i in range(6):
                r = await http.post(f"/v1/sessions/s-{uuid.uuid4().hex[:6]}/messages",
                                    json={"messages": [user(f"{n}/{i}")]})
                statuses.append(r.status_code)

    async def main() -> None:
        await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(12))), 60)

    started = time.monotonic()
    asyncio.run(main())
    elapsed = time.monotonic() - started
    assert set(statuses) <= {200, 429}
    assert statuses.count(200) <= burst + rate * elapsed
    assert statuses.count(429) > 0
