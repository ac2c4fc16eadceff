"""Where a rate limit's token buckets live: in this process, or in the store's database,
shared by every server process on it (``limits.rate_limit_scope``: ``process`` / ``store``).

:class:`~contextfold.server.limits.RateLimiter` decides *what* a request costs; a bucket
backend here only answers "may ``key`` take ``cost`` tokens now, and if not, how long until
it may". Both backends refill at ``rate`` tokens a second up to ``burst``.

:class:`StoreBuckets` keeps one row per key in ``cf_server_rate_buckets`` (the catalog's
database: the same SQLite file or PostgreSQL database every server process uses), so a
key's rate holds across ``--workers N`` and across machines: N processes together let at
most ``burst + rate × seconds`` requests through, not N times that. A request does not pay a
database round trip: a process *leases* tokens in chunks (a quarter of a second of the rate,
at most a quarter of the burst) in one short transaction and spends them locally; a chunk
unspent after :data:`LEASE_SECONDS` is dropped (those tokens are lost to the limit, never
added to it — a process can only under-admit). With a per-key rate of 50/s a busy key costs
each process about four small writes a second.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .catalog import Catalog

__all__ = ["LEASE_SECONDS", "BucketBackend", "LocalBuckets", "StoreBuckets"]

#: How long a process keeps tokens it leased from the store before dropping them.
LEASE_SECONDS = 1.0
_MAX_KEYS = 100_000


class BucketBackend(Protocol):
    rate: float
    burst: float

    def take(self, key: str, cost: float) -> float:
        """Take ``cost`` tokens for ``key``: 0.0 if taken, else seconds until it could be
        (nothing taken). May block on the database (use :meth:`atake` on an event loop)."""
        ...

    async def atake(self, key: str, cost: float) -> float:
        """:meth:`take` that never blocks the event loop."""
        ...

    def available(self, key: str) -> float:
        """Tokens ``key`` could take now as far as this process knows (no I/O)."""
        ...


class LocalBuckets:
    """Token buckets in this process's memory (a limit per server process)."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, tuple[float, float]] = {}

    def _tokens(self, key: str, now: float) -> float:
        tokens, last = self._buckets.get(key, (self.burst, now))
        return min(self.burst, tokens + (now - last) * self.rate)

    def available(self, key: str) -> float:
        return self._tokens(key, time.monotonic())

    def take(self, key: str, cost: float) -> float:
        now = time.monotonic()
        tokens = self._tokens(key, now)
        if tokens < cost:
            self._buckets[key] = (tokens, now)
            return (cost - tokens) / self.rate
        self._buckets[key] = (tokens - cost, now)
        if len(self._buckets) > _MAX_KEYS:
            self._buckets.clear()
        return 0.0

    async def atake(self, key: str, cost: float) -> float:
        return self.take(key, cost)


@dataclass
class _Lease:
    tokens: float
    expires: float


class StoreBuckets:
    """Token buckets in the store's database, leased to this process in chunks."""

    def __init__(self, catalog: Catalog, rate: float, burst: float) -> None:
        self.catalog = catalog
        self.rate = rate
        self.burst = burst
        self.chunk = max(1.0, min(burst / 4, rate / 4))
        self._leases: dict[str, _Lease] = {}
        self._lock = threading.Lock()

    def available(self, key: str) -> float:
        lease = self._leases.get(key)
        return lease.tokens if lease is not None and lease.expires > time.monotonic() else 0.0

    def _spend(self, key: str, cost: float) -> bool:
        with self._lock:
            lease = self._leases.get(key)
            if lease is None or lease.expires <= time.monotonic() or lease.tokens < cost:
                return False
            lease.tokens -= cost
            return True

    def _lease(self, key: str, cost: float) -> float:
        """Lease more tokens from the store (blocking). 0.0 once ``cost`` is spent from
        them, else seconds until the shared bucket could pay it."""
        want = max(self.chunk, cost)
        granted, left = self.catalog.lease_tokens(
            key, want=want, least=cost, rate=self.rate, burst=self.burst, now=time.time()
        )
        with self._lock:
            if granted < cost:
                return (cost - left) / self.rate if self.rate > 0 else math.inf
            lease = self._leases.get(key)
            now = time.monotonic()
            carried = lease.tokens if lease is not None and lease.expires > now else 0.0
            self._leases[key] = _Lease(carried + granted - cost, now + LEASE_SECONDS)
            if len(self._leases) > _MAX_KEYS:
                self._leases = {key: self._leases[key]}
        return 0.0

    def take(self, key: str, cost: float) -> float:
        return 0.0 if self._spend(key, cost) else self._lease(key, cost)

    async def atake(self, key: str, cost: float) -> float:
        if self._spend(key, cost):
            return 0.0
        return await asyncio.to_thread(self._lease, key, cost)
