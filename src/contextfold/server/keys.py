"""API keys: how they look, how they are stored, and who they belong to.

A key is ``cfk_<key_id>_<secret>``: ``key_id`` (8 hex chars) is public and names the key in
``contextfold keys list``/``revoke``; ``secret`` is 256 bits from :mod:`secrets`. The
database keeps only SHA-256 of the whole key. Because the key is high-entropy random, a
fast hash is as strong as a slow one here (nothing to brute-force) and costs ~1 µs per
request. The key is printed once by ``keys create`` and never logged.

:class:`KeyResolver` answers "which tenant is this key?" with a short in-process cache
(``ttl`` seconds, default 2), so a revoked key stops working everywhere within ``ttl``
seconds while a busy client costs no database read per request.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass

from ..errors import ConfigError
from .catalog import Catalog, KeyRecord

__all__ = ["KeyResolver", "Tenant", "check_tenant_name", "create_key", "hash_key"]

_TENANT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_KEY = re.compile(r"^cfk_[0-9a-f]{8}_[A-Za-z0-9_-]{43}$")


@dataclass(frozen=True, slots=True)
class Tenant:
    """Who a request acts for: the tenant's name and the id of the key it used."""

    name: str
    key_id: str


def check_tenant_name(name: str) -> str:
    if not isinstance(name, str) or not _TENANT.match(name):
        raise ConfigError(
            f"tenant name {name!r} is not valid: use 1-63 lowercase letters, digits, '-' or '_'"
            ", starting with a letter or digit"
        )
    return name


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_key(catalog: Catalog, tenant: str) -> tuple[str, KeyRecord]:
    """Make a key for ``tenant`` (created on first use); returns (key, its record)."""
    check_tenant_name(tenant)
    key_id = secrets.token_hex(4)
    key = f"cfk_{key_id}_{secrets.token_urlsafe(32)}"
    return key, catalog.add_key(key_id, tenant, hash_key(key))


class KeyResolver:
    """Key → tenant, with a bounded in-process cache of ``ttl`` seconds."""

    def __init__(self, catalog: Catalog, *, ttl: float = 2.0, max_entries: int = 10_000) -> None:
        self.catalog = catalog
        self.ttl = ttl
        self.max_entries = max_entries
        self._cache: dict[str, tuple[float, Tenant | None]] = {}
        self._known: set[str] = set()  # digests that resolved to a tenant

    async def resolve(self, key: str, *, known_only: bool = False) -> Tenant | None:
        """The tenant of an unrevoked key, else None (malformed keys never reach the DB).
        ``known_only``: None without a lookup unless the key was valid before in this
        process (a client address over its failed attempts still gets its real keys
        checked — revocation included — but cannot make lookups of made-up ones)."""
        if not _KEY.match(key):
            return None
        digest = hash_key(key)
        if known_only and digest not in self._known:
            return None
        now = time.monotonic()
        hit = self._cache.get(digest)
        if hit is not None and hit[0] > now:
            return hit[1]
        found = await self.catalog.tenant_for(digest)
        tenant = Tenant(found[0], found[1]) if found else None
        if len(self._cache) >= self.max_entries:
            self._cache.clear()
        self._cache[digest] = (now + self.ttl, tenant)
        if tenant is not None:
            if len(self._known) >= self.max_entries:
                self._known.clear()
            self._known.add(digest)
        return tenant
