"""Tenants share one store; a session id is scoped to its tenant.

Inside the store a tenant's session ``s`` is the session ``"<tenant>/<s>"`` (tenant names
cannot contain ``/``, so the mapping is one-to-one). Every route reaches a session only
through :meth:`ServerState.session` / :meth:`ServerState.existing_session`, which build that
scoped id from the *authenticated* tenant — a route never sees another tenant's id, and
another tenant's session answers 404 exactly like one that does not exist.

A session exists for its tenant when the store has it or it has a row in the catalog
(created by the first append or by ``PUT …/settings``). The catalog row is written after
each append (at most once a second per session and process), so it is a listing index,
never the only copy of anything.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engine import AsyncMemory
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
        row = await self.catalog.session(tenant.name, session_id)
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

    async def touch(self, scoped: ScopedSession) -> None:
        """Record activity in the catalog (at most once a second per session here)."""
        now = time.monotonic()
        last = self._touched.get(scoped.store_id)
        if scoped.row is not None and last is not None and now - last < _TOUCH_EVERY_S:
            return
        self._touched[scoped.store_id] = now
        if len(self._touched) > 100_000:
            self._touched.clear()
        await self.catalog.touch(scoped.tenant.name, scoped.session_id, time.time())

    async def delete(self, scoped: ScopedSession) -> bool:
        """Delete the session from the store and the catalog; True if it existed."""
        stored = await scoped.memory.delete(scoped.store_id)
        indexed = await self.catalog.forget(scoped.tenant.name, scoped.session_id)
        self._touched.pop(scoped.store_id, None)
        return stored or indexed

    async def stats_many(self, tenant: Tenant, ids: list[str]) -> list[SessionStats | None]:
        memory = self.memory(self.config.defaults)
        return list(await asyncio.gather(*(memory.stats(scoped_id(tenant.name, s)) for s in ids)))

    async def close(self) -> None:
        await self.store.close()
        await asyncio.to_thread(self.catalog.close)


def not_found(session_id: str) -> ProblemError:
    return ProblemError(404, "not_found", f"no session {session_id!r}")
