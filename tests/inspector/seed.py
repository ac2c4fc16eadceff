"""Seed a SQLite file the way a running service would have filled it: tenants with keys,
catalog rows, and sessions folded by the library with the server's own per-session
settings — a long chat with several folds, a session whose folds failed, a tool-using
agent, and another tenant's session. Used by the inspector's API and browser tests and by
``benchmarks/bench_inspector.py``."""

from __future__ import annotations

import asyncio
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextfold.engine import AsyncMemory
from contextfold.errors import SummarizationError
from contextfold.server.catalog import Catalog, open_catalog
from contextfold.server.keys import create_key
from contextfold.server.session_settings import SessionSettings, SettingsPatch
from contextfold.server.tenancy import scoped_id
from contextfold.stores.sqlite import SQLiteStore
from contextfold.summarizers.base import SummaryRequest, SummaryResult
from contextfold.testing import FunctionSummarizer

CHAT_SETTINGS = {"policy": "token_budget", "budget": 700, "keep_last": 4}
AGENT_SETTINGS = {"policy": "token_budget", "budget": 900, "keep_last": 2, "preset": "agent",
                  "task_context": "Rebook the customer's cancelled flight"}

PEOPLE = ["Alice Moreau", "Bruno Keller", "Chen Wei", "Dana Okafor", "Emil Novak"]
CITIES = ["Lisbon", "Oslo", "Kyoto", "Denver", "Tallinn"]


@dataclass
class Seeded:
    db: Path
    url: str
    key: str
    other_key: str
    tenant: str = "demo"


def chat_turn(i: int) -> list[dict[str, Any]]:
    who, city = PEOPLE[i % len(PEOPLE)], CITIES[i % len(CITIES)]
    return [
        {"role": "user", "id": f"u{i}", "content": f"Turn {i}: please plan a meeting with "
         f"{who} in {city} on 2026-0{1 + i % 9}-1{i % 10} at {9 + i % 8}:30, budget "
         f"{1200 + 37 * i} EUR, order PO-{4400 + i}. Keep the agenda short."},
        {"role": "assistant", "id": f"a{i}", "content": f"Noted: {who}, {city}, "
         f"{1200 + 37 * i} EUR under PO-{4400 + i}. I will send the invite and book a room "
         "near the station; tell me if the time changes."},
    ]


def agent_turn(i: int) -> list[dict[str, Any]]:
    call = f"call_{i}"
    return [
        {"role": "user", "id": f"t{i}-u", "content": f"Step {i}: check flight LX{310 + i}."},
        {"role": "assistant", "id": f"t{i}-a", "content": None, "tool_calls": [
            {"id": call, "type": "function", "function": {
                "name": "get_flight", "arguments": json.dumps({"flight": f"LX{310 + i}"})}}]},
        {"role": "tool", "id": f"t{i}-r", "tool_call_id": call, "content": json.dumps(
            {"flight": f"LX{310 + i}", "status": "cancelled" if i % 3 == 0 else "on time",
             "seats": 12 - i % 7, "fare_usd": 420 + 15 * i, "notes": "gate B" + str(i % 9)})},
        {"role": "assistant", "id": f"t{i}-b", "content": f"Flight LX{310 + i} checked; "
         f"{'rebooking needed' if i % 3 == 0 else 'no action'}."},
    ]


_FACTS = re.compile(r"with (.+?) in (\w+) on ([\d-]+) .*?budget (\d+) EUR, order (\S+?)\.")


def rolling_summary(request: SummaryRequest) -> SummaryResult:
    """An LLM stand-in that writes a rolling summary: one line per planned meeting, newest
    six kept — so older names, amounts and dates drop out and the fact check notices."""
    lines = [ln for ln in request.previous.splitlines() if ln.startswith("- ")]
    for m in request.messages:
        if m.message.role == "user":
            found = _FACTS.search(m.text)
            if found:
                who, city, day, amount, order = found.groups()
                lines.append(f"- Meeting with {who} in {city} on {day}, {amount} EUR ({order}).")
    text = "The user is planning meetings; the assistant books rooms and sends invites.\n" + \
        "\n".join(lines[-6:])
    spent = sum(m.tokens for m in request.messages) + request.counter.count(request.previous)
    return SummaryResult(text, input_tokens=spent + 120, output_tokens=request.counter.count(text),
                         model="fake-llm-1", calls=1)


def _settings(raw: dict[str, Any]) -> SessionSettings:
    return SessionSettings().overlay(SettingsPatch.model_validate(raw))


async def _add(
    memory: AsyncMemory, catalog: Catalog, tenant: str, sid: str, turns: list[dict[str, Any]],
    settings: dict[str, Any] | None, when: float,
) -> None:
    await memory.add(scoped_id(tenant, sid), *turns)
    if settings is not None:
        await catalog.put_settings(tenant, sid, json.dumps(settings))
    await catalog.touch(tenant, sid, when)


async def _seed(db: Path, catalog: Catalog, tenant: str, chat_turns: int) -> None:
    store = SQLiteStore(db)
    now = time.time()
    try:
        llm = FunctionSummarizer(rolling_summary, name="fake-llm-1")
        chat = AsyncMemory(store, summarizer=llm, **_settings(CHAT_SETTINGS).memory_options(None))
        for i in range(chat_turns):
            await _add(chat, catalog, tenant, "long-chat", chat_turn(i), CHAT_SETTINGS, now - 30)

        def refuse(request: SummaryRequest) -> str:
            raise SummarizationError(
                "provider returned 503 for dana.okafor@example.com; retry later"
            )

        flaky = AsyncMemory(store, summarizer=FunctionSummarizer(refuse, name="flaky-model"),
                            **_settings(CHAT_SETTINGS).memory_options(None))
        for i in range(14):
            await _add(flaky, catalog, tenant, "flaky-fold", chat_turn(i), CHAT_SETTINGS, now - 20)

        agent = AsyncMemory(store, **_settings(AGENT_SETTINGS).memory_options(None))
        for i in range(12):
            await _add(agent, catalog, tenant, "agent-run", agent_turn(i), AGENT_SETTINGS,
                       now - 10)

        plain = AsyncMemory(store, **SessionSettings().memory_options(None))
        for i in range(3):
            await _add(plain, catalog, tenant, f"short-{i}", chat_turn(i), None, now - 40 - i)
        await _add(plain, catalog, "other", "secret-chat", chat_turn(1), None, now)
    finally:
        await store.close()


def seed(db: Path, *, chat_turns: int = 40) -> Seeded:
    """Fill ``db`` (a new SQLite file) and return the keys to read it with."""
    url = f"sqlite:///{db}"
    catalog = open_catalog(url)
    catalog.setup()
    try:
        key, _ = create_key(catalog, "demo")
        other_key, _ = create_key(catalog, "other")
        # in a thread of its own: the caller may be inside an event loop (Playwright's)
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, _seed(db, catalog, "demo", chat_turns)).result()
    finally:
        catalog.close()
    return Seeded(db=db, url=url, key=key, other_key=other_key)
