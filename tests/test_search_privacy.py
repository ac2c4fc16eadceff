"""Search never bypasses privacy: a redacting session's index holds only the redacted text,
a digests-only session has only its digests (raw turns never match, evicted digests are
gone), and deleted sessions are unsearchable — on every store kind that runs in-process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from contextfold import AsyncMemory
from contextfold.digests import DigestMemory
from contextfold.stores import MemoryStore
from contextfold.stores.base import Store
from contextfold.stores.sqlite import SQLiteStore


def _stores(tmp_path: Path) -> list[Store]:
    return [MemoryStore(), SQLiteStore(tmp_path / "s.db")]


@pytest.mark.parametrize("kind", [0, 1])
def test_redacting_session_indexes_only_redacted_text(tmp_path: Path, kind: int) -> None:
    async def main() -> None:
        store = _stores(tmp_path)[kind]
        mem = AsyncMemory(store, redact_messages=True)
        await mem.add("s", {"role": "user", "content": "mail me at ada.lovelace@example.com"},
                      {"role": "user", "content": "card 4111 1111 1111 1111 please"})
        for terms in (["lovelace"], ["example"], ["4111"], ["ada", "lovelace", "1111"]):
            assert await store.search("s", terms) == [], terms
        hits = await store.search("s", ["mail"])
        assert [h.seq for h in hits] == [1] and "example.com" not in hits[0].snippet
        await mem.close()

    asyncio.run(main())


@pytest.mark.parametrize("kind", [0, 1])
def test_digests_only_session_has_only_digests_and_evicts_them(
    tmp_path: Path, kind: int
) -> None:
    async def main() -> None:
        store: Store = (MemoryStore(retention="delete") if kind == 0
                        else SQLiteStore(tmp_path / "d.db", retention="delete"))
        digests = DigestMemory(store, max_tokens=120)
        inner = digests.memory.store
        await digests.record("s", "My email is grace@example.org, book a table",
                             "Booked a table for two at Zafferano at 8pm tonight.")
        assert await inner.search("s", ["grace", "example"]) == []
        for i in range(30):
            await digests.record("s", f"question number {i} about ostriches", "answered")
        stored = {m.seq for m in await inner.messages("s")}
        hits = await inner.search("s", ["ostriches", "question", "table", "booked"], limit=100)
        assert hits and {h.seq for h in hits} <= stored  # evicted digests are gone
        assert 1 not in stored and all(h.seq != 1 for h in hits)
        assert await digests.forget("s")
        assert await inner.search("s", ["ostriches"]) == []
        await digests.memory.close()

    asyncio.run(main())
