"""The :class:`~contextfold.engine.AsyncMemory` that folds a session the way the service
does: the server's config (model, fold mode, retention, defaults) overlaid with the
session's own settings (``PUT /v1/sessions/{id}/settings``, kept in the catalog).

One :class:`SessionMemories` serves the HTTP routes (through
:class:`~contextfold.server.tenancy.ServerState`) and the deferred fold workers
(``contextfold worker --config server.yaml``), so a worker folds each session with the
very policy and summarizer the server used when it marked the session due.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any

from ..bounded import LRU
from ..engine import AsyncMemory, FoldMode
from ..stores import open_store
from ..stores.base import Store
from ..stores.rows import LedgerTotals
from ..summarizers.base import SummaryRequest, SummaryResult
from ..summarizers.extractive import ExtractiveSummarizer
from .catalog import Catalog, SessionRow
from .config import ServerConfig
from .session_settings import SessionSettings, SettingsPatch

__all__ = [
    "SessionMemories",
    "ThreadedExtractiveSummarizer",
    "ledger_totals",
    "open_service_store",
]

_MEMORY_CACHE = 256


def open_service_store(config: ServerConfig, store_url: str) -> Store:
    """The store at ``store_url`` with the config's retention (``archive`` keeps folded
    messages, marked as folded; ``delete`` removes them in the fold's commit)."""
    store = open_store(store_url)
    store.retention = config.retention  # the store reads it at every commit
    return store


async def ledger_totals(
    store: Store, *, session_id: str | None = None, prefix: str | None = None
) -> list[LedgerTotals]:
    """Per (model, outcome) sums of one session's ledger, or of every session whose id
    starts with ``prefix``: added up by the database where the store can (SQLite,
    PostgreSQL: an index range, so the cost does not grow with other sessions' rows), else
    here from the store's ledger."""
    own = getattr(store, "ledger_totals", None)
    if own is not None:
        totals: list[LedgerTotals] = await own(session_id=session_id, prefix=prefix)
        return totals
    rows = await store.ledger(session_id, limit=None)
    if prefix is not None:
        rows = [r for r in rows if r.session_id.startswith(prefix)]
    return [LedgerTotals.of(r) for r in rows]


class ThreadedExtractiveSummarizer(ExtractiveSummarizer):
    """The offline extractive summarizer, run in a worker thread. Its fold of a large
    append (1,000 messages: about a second of CPU) ran on the event loop and every other
    tenant's request waited for it; in a thread the loop keeps answering between the
    interpreter's switches. Same summaries: it is the same code."""

    runs_inline = False

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        return await asyncio.to_thread(_complete, super().summarize(request))


def _complete(step: Coroutine[Any, Any, SummaryResult]) -> SummaryResult:
    """The result of a coroutine that never suspends (the extractive summarizer's)."""
    try:
        step.send(None)
    except StopIteration as done:
        result: SummaryResult = done.value
        return result
    step.close()
    raise RuntimeError("the extractive summarizer suspended")


class SessionMemories:
    """AsyncMemory objects by effective settings, all sharing one store."""

    def __init__(self, config: ServerConfig, store: Store, catalog: Catalog) -> None:
        self.config = config
        self.store = store
        self.catalog = catalog
        self._memories: LRU[SessionSettings, AsyncMemory] = LRU(_MEMORY_CACHE)

    def memory(self, settings: SessionSettings) -> AsyncMemory:
        """The AsyncMemory for these settings (one per distinct settings; least recently
        used ones are dropped, never closed — the store is shared)."""
        memory = self._memories.get(settings)
        if memory is not None:
            return memory
        # background and deferred: appends mark sessions due, fold workers fold them
        fold: FoldMode = "inline" if self.config.fold == "inline" else "deferred"
        options = settings.memory_options(self.config.model)
        options.setdefault("summarizer", ThreadedExtractiveSummarizer())
        memory = AsyncMemory(self.store, fold=fold, **options)
        self._memories.put(settings, memory)
        return memory

    def settings_of(self, row: SessionRow | None) -> SessionSettings:
        """A session's effective settings: the defaults, overlaid with its own."""
        if row is None or row.settings is None:
            return self.config.defaults
        return self.config.defaults.overlay(SettingsPatch.model_validate(json.loads(row.settings)))

    async def for_store_id(self, store_id: str) -> AsyncMemory:
        """The memory for the store's session ``store_id`` (``tenant/session``, see
        :func:`~contextfold.server.tenancy.scoped_id`); a session the service does not
        index folds with the defaults."""
        tenant, sep, session_id = store_id.partition("/")
        row = await self.catalog.session(tenant, session_id) if sep else None
        return self.memory(self.settings_of(row))
