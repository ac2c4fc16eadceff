"""What lets a request skip work a bare app does not do, without losing a guarantee: the
context carries its own summary and an append its own stats (no second read), a process
keeps the catalog rows it read for ``key_cache_seconds`` (changes through it apply at once,
through another process within that bound), and a late activity write never brings back
the row of a deleted session."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx

from contextfold import AsyncMemory, TokenBudget
from contextfold.server.catalog import open_catalog
from contextfold.server.config import ServerConfig
from contextfold.server.keys import Tenant
from contextfold.server.limits import RateLimiter
from contextfold.server.metrics import Metrics
from contextfold.server.tenancy import ServerState

from .conftest import assistant, user


def turns(n: int) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "id": f"m{i}",
             "content": f"turn {i}: " + "the quarterly plan and its budget " * 10}
            for i in range(n)]


def test_context_carries_the_summary_and_add_the_stats(tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncMemory(f"sqlite:///{tmp_path / 'm.db'}",
                               policy=TokenBudget(600, keep_last=2)) as memory:
            result = await memory.add("s", *turns(3))
            assert result.stats == await memory.stats("s") or result.fold is not None
            assert (await memory.context("s")).summary is None
            result = await memory.add("s", *turns(12)[3:])
            assert result.fold is not None and result.fold.status == "committed"
            assert result.stats is not None and result.stats.last_seq == 12
            context = await memory.context("s")
            assert context.summary is not None
            assert context.summary == await memory.summary("s")

    asyncio.run(main())


def state_of(url: str, ttl: float) -> ServerState:
    config = ServerConfig(key_cache_seconds=ttl)
    return ServerState(config, url, open_catalog(url), RateLimiter(0, 1), Metrics())


def test_catalog_rows_are_cached_for_the_key_cache_bound(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    here, other = state_of(url, 0.5), open_catalog(url)
    other.setup()
    tenant = Tenant("t", "k1")

    async def main() -> None:
        await other.put_settings("t", "s", json.dumps({"budget": 3000}))
        assert (await here.session(tenant, "s")).settings.budget == 3000
        # changed through another process: seen here within key_cache_seconds
        await other.put_settings("t", "s", json.dumps({"budget": 2000}))
        assert (await here.session(tenant, "s")).settings.budget == 3000
        time.sleep(0.6)
        assert (await here.session(tenant, "s")).settings.budget == 2000
        # changed through this process: at once
        await here.put_settings(await here.session(tenant, "s"), json.dumps({"budget": 1500}))
        assert (await here.session(tenant, "s")).settings.budget == 1500
        # deleted through this process: gone at once
        await here.delete(await here.session(tenant, "s"))
        assert (await here.session(tenant, "s")).row is None
        await here.close()

    asyncio.run(main())
    other.close()


def test_a_late_activity_write_never_brings_a_deleted_row_back(tmp_path: Path) -> None:
    catalog = open_catalog(f"sqlite:///{tmp_path / 'c.db'}")

    async def main() -> None:
        await catalog.touch("t", "s", 100.0)
        await catalog.activity("t", "s", 200.0)
        row = await catalog.session("t", "s")
        assert row is not None and row.last_activity == 200.0 and row.created_at == 100.0
        await catalog.activity("t", "s", 150.0)  # an older write does not move it back
        row = await catalog.session("t", "s")
        assert row is not None and row.last_activity == 200.0
        assert await catalog.forget("t", "s")
        await catalog.activity("t", "s", 300.0)
        assert await catalog.session("t", "s") is None

    asyncio.run(main())
    catalog.close()


def test_the_lean_path_answers_as_the_declared_parameters_do(alice: httpx.Client) -> None:
    """An append with ``application/json`` and a context read without a query string take
    the lean path; the same requests through FastAPI's own parameter solving (another JSON
    content type; a query string) get the same answers, errors included."""
    batch = {"messages": [user("the plan for the review", "m1"), assistant("noted", "m2")]}
    answers = []
    for content_type, query in (("application/json", ""),
                                ("application/vnd.x+json", "?format=openai")):
        session = f"lean-{content_type.split('/')[1].split('+')[0]}"
        posted = alice.post(f"/v1/sessions/{session}/messages", content=json.dumps(batch),
                            headers={"content-type": content_type})
        read = alice.get(f"/v1/sessions/{session}/context{query}")
        assert posted.status_code == 200 and read.status_code == 200, (posted.text, read.text)
        append, context = posted.json(), read.json()
        assert append.pop("session_id") == context.pop("session_id") == session
        append["stats"].pop("last_activity")
        answers.append((append, context))
    assert answers[0] == answers[1]
    for body in (b"{not json", b'{"messages": []}', b'{"messages": [{"role": "x"}]}'):
        lean = alice.post("/v1/sessions/lean-bad/messages", content=body,
                          headers={"content-type": "application/json"})
        declared = alice.post("/v1/sessions/lean-bad/messages", content=body,
                              headers={"content-type": "application/vnd.x+json"})
        assert lean.status_code in (400, 422) and lean.json() == declared.json()
    for session in ("bad%20id", "x" * 201):
        lean = alice.get(f"/v1/sessions/{session}/context")
        declared = alice.get(f"/v1/sessions/{session}/context?format=openai")
        assert lean.status_code == 422 and lean.json() == declared.json()
