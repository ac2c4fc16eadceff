"""Tenants share one store; a session id is scoped to its tenant.

Inside the store a tenant's session ``s`` is the session ``"<tenant>/<s>"`` (tenant names
cannot contain ``/``, so the mapping is one-to-one). Every route reaches a session only
through :meth:`ServerState.session` / :meth:`ServerState.existing_session`, which build that
scoped id from the *authenticated* tenant — a route never sees another tenant's id, and
another tenant's session answers 404 exactly like one that does not exist.

A session exists for its tenant when the store has it or it has a row in the catalog
(created by the first append or by ``PUT …/settings``). The catalog row is written after
each append (at most once a second per session and process; after the first, in the
background and only if the row is still there: a late write never brings back the row of
a deleted session), so it is a listing index, never the only copy of anything.

A process keeps the catalog rows it read for ``key_cache_seconds`` (the bound a revoked key
has too): a request of a busy session reads no catalog row. Settings changed or a session
deleted through this process apply here at once, through another process within that bound.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engine import AsyncMemory
from ..errors import ContextFoldError
from ..policy import SessionStats
from ..stores.base import Store
from .catalog import Catalog, SessionRow
from .config import ServerConfig
from .keys import KeyResolver, Tenant
from .memories import SessionMemories, open_service_store
from .problems import ProblemError
from .session_settings import SessionSettings

if TYPE_CHECKING:
    from .limits import RateLimiter
    from .metrics import Metrics

__all__ = ["SESSION_ID_PATTERN", "ScopedSession", "ServerState", "scoped_id"]

#: What a public session id may look like (it travels in URL paths).
SESSION_ID_PATTERN = r"^[A-Za-z0-9._:@~=+-]{1,200}$"
_SESSION_ID = re.compile(SESSION_ID_PATTERN)
_TOUCH_EVERY_S = 1.0
_ROW_CACHE = 100_000

log = logging.getLogger("contextfold.server")


def scoped_id(tenant: str, session_id: str) -> str:
    """The store's id of ``session_id`` of ``tenant``."""
    return f"{tenant}/{session_id}"


@dataclass(frozen=True, slots=True)
class ScopedSession:
    """A tenant's session as a route uses it: the public id, the store id, its effective
    settings and the :class:`AsyncMemory` configured with them."""

    tenant: Tenant
    session_id: str
    store_id: str
    settings: SessionSettings
    memory: AsyncMemory
    row: SessionRow | None


class ServerState:
    """Everything a request needs, built once per process by ``create_app``."""

    def __init__(
        self,
        config: ServerConfig,
        store_url: str,
        catalog: Catalog,
        limiter: RateLimiter,
        metrics: Metrics,
    ) -> None:
        self.config = config
        self.store_url = store_url
        self.store: Store = open_service_store(config, store_url)
        self.catalog = catalog
        self.memories = SessionMemories(config, self.store, catalog)
        self.keys = KeyResolver(catalog, ttl=config.key_cache_seconds)
        self.limiter = limiter
        self.metrics = metrics
        self._touched: dict[str, float] = {}
        self._rows: dict[tuple[str, str], tuple[float, SessionRow]] = {}
        self._row_ttl = config.key_cache_seconds
        self._background: set[asyncio.Task[None]] = set()

    # -- memories -------------------------------------------------------------------------

    def memory(self, settings: SessionSettings) -> AsyncMemory:
        """The AsyncMemory for these settings (see :class:`SessionMemories`)."""
        return self.memories.memory(settings)

    def settings_of(self, row: SessionRow | None) -> SessionSettings:
        return self.memories.settings_of(row)

    # -- sessions -------------------------------------------------------------------------

    @staticmethod
    def check_session_id(session_id: str) -> str:
        if not _SESSION_ID.match(session_id):
            raise ProblemError(
                422,
                "validation_error",
                "session_id must be 1-200 characters of A-Z a-z 0-9 . _ : @ ~ = + -",
            )
        return session_id

    async def session(self, tenant: Tenant, session_id: str) -> ScopedSession:
        """The tenant's session, whether or not it exists yet (for writes)."""
        self.check_session_id(session_id)
        row = await self._row(tenant.name, session_id)
        settings = self.settings_of(row)
        return ScopedSession(
            tenant,
            session_id,
            scoped_id(tenant.name, session_id),
            settings,
            self.memory(settings),
            row,
        )

    async def existing_session(self, tenant: Tenant, session_id: str) -> ScopedSession:
        """The tenant's session, or 404 ``not_found`` if it has none by that id."""
        scoped = await self.session(tenant, session_id)
        if scoped.row is None and await scoped.memory.stats(scoped.store_id) is None:
            raise not_found(session_id)
        return scoped

    async def _row(self, tenant: str, session_id: str) -> SessionRow | None:
        """The session's catalog row, from this process's cache while it is fresh."""
        key = (tenant, session_id)
        now = time.monotonic()
        hit = self._rows.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        row = await self.catalog.session(tenant, session_id)
        if row is None:
            self._rows.pop(key, None)
        elif self._row_ttl > 0:
            if len(self._rows) >= _ROW_CACHE:
                self._rows.clear()
            self._rows[key] = (now + self._row_ttl, row)
        return row

    async def touch(self, scoped: ScopedSession) -> None:
        """Record activity in the catalog (at most once a second per session here). A new
        session's row is written before the answer (so it is listed at once); later
        activity in the background (a listing index: never in a request's way)."""
        now = time.monotonic()
        last = self._touched.get(scoped.store_id)
        if scoped.row is not None and last is not None and now - last < _TOUCH_EVERY_S:
            return
        self._touched[scoped.store_id] = now
        if len(self._touched) > 100_000:
            self._touched.clear()
        tenant, session_id, when = scoped.tenant.name, scoped.session_id, time.time()
        if scoped.row is None:
            await self.catalog.touch(tenant, session_id, when)
            return
        task = asyncio.create_task(_logged(self.catalog.activity(tenant, session_id, when)))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def put_settings(self, scoped: ScopedSession, settings: str | None) -> None:
        """Store the session's own settings (JSON; None: the defaults)."""
        await self.catalog.put_settings(scoped.tenant.name, scoped.session_id, settings)
        self._rows.pop((scoped.tenant.name, scoped.session_id), None)

    async def delete(self, scoped: ScopedSession) -> bool:
        """Delete the session from the store and the catalog; True if it existed."""
        stored = await scoped.memory.delete(scoped.store_id)
        indexed = await self.catalog.forget(scoped.tenant.name, scoped.session_id)
        self._touched.pop(scoped.store_id, None)
        self._rows.pop((scoped.tenant.name, scoped.session_id), None)
        return stored or indexed

    async def stats_many(self, tenant: Tenant, ids: list[str]) -> list[SessionStats | None]:
        memory = self.memory(self.config.defaults)
        return list(await asyncio.gather(*(memory.stats(scoped_id(tenant.name, s)) for s in ids)))

    async def close(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.store.close()
        await asyncio.to_thread(self.catalog.close)


async def _logged(write: Awaitable[None]) -> None:
    try:
        await write
    except ContextFoldError as exc:  # the next append writes it again
        log.warning("could not record session activity: %s", type(exc).__name__)


def not_found(session_id: str) -> ProblemError:
    return ProblemError(404, "not_found", f"no session {session_id!r}")
