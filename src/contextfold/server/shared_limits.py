"""Where a rate limit's token buckets live: in this process, in the store's database, or in
Redis — the last two shared by every server process on them (``limits.rate_limit_scope``:
``process`` / ``store``; ``redis:`` in the config puts the shared buckets in Redis).

:class:`~contextfold.server.limits.RateLimiter` decides *what* a request costs; a bucket
backend here only answers "may ``key`` take ``cost`` tokens now, and if not, how long until
it may". Every backend refills at ``rate`` tokens a second up to ``burst``.

:class:`LeasedBuckets` keeps the buckets in a shared :class:`LeaseSource`: the store's
database (:class:`StoreBuckets`: one row per key in ``cf_server_rate_buckets`` of the same
SQLite file or PostgreSQL database every server process uses) or Redis
(:mod:`.redis_buckets`). A key's rate then holds across ``--workers N`` and across
machines: N processes together let at most ``burst + rate × seconds`` requests through, not
N times that. A request does not pay a round trip: a process *leases* tokens in chunks (a
quarter of a second of the rate, at most a quarter of the burst) in one short transaction
and spends them locally; a chunk unspent after :data:`LEASE_SECONDS` is dropped (those
tokens are lost to the limit, never added to it — a process can only under-admit).

A request does not wait for a lease either, while its key is within its rate: when a key's
leased tokens fall below half a chunk, the next chunk is leased *in the background*, so
the request that finds the lease empty is rare (a burst, or the first request of a key).
On SQLite that matters: a lease is a write, and a write waits its turn behind the appends
and fold commits of every process on the file (measured under 32 clients: up to 240 ms
per leasing request without the refill ahead, ~0 with it). A refusal is remembered until
the bucket could have refilled, so a key over its rate is answered 429 without a write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .catalog import Catalog

__all__ = [
    "LEASE_SECONDS",
    "BucketBackend",
    "LeaseSource",
    "LeasedBuckets",
    "LocalBuckets",
    "SourceDown",
    "StoreBuckets",
]

log = logging.getLogger("contextfold.server.limits")

#: How long a process keeps tokens it leased from the shared buckets before dropping them
#: (long enough that a key making a few requests a second spends a chunk before it
#: expires: an expired chunk made the next request wait for a lease).
LEASE_SECONDS = 5.0
#: With a fail-open source (Redis) that is down: how long this process limits on its own
#: before it asks the source again.
FALLBACK_SECONDS = 5.0
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


class LeaseSource(Protocol):
    """Shared token buckets a process leases tokens from (blocking; run off the loop)."""

    def lease_tokens(
        self, bucket: str, *, want: float, least: float, rate: float, burst: float, now: float
    ) -> tuple[float, float]:
        """Refill ``bucket`` (``rate``/s up to ``burst``, as of ``now``, epoch seconds) and
        take ``want`` tokens from it, or as many as it has if that is at least ``least``,
        else none: (tokens taken, tokens it had)."""
        ...


class SourceDown(Exception):
    """A fail-open lease source (Redis) cannot be reached right now."""


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


class LeasedBuckets:
    """Token buckets in a shared :class:`LeaseSource`, leased to this process in chunks
    and refilled ahead in the background.

    ``fail_open``: when the source raises :class:`SourceDown`, this process limits each key
    on its own (:class:`LocalBuckets`, the per-process limit) for :data:`FALLBACK_SECONDS`,
    then asks the source again; without it the source's error reaches the request.
    """

    def __init__(
        self, source: LeaseSource, rate: float, burst: float, *, fail_open: bool = False,
        name: str = "shared",
    ) -> None:
        self.source = source
        self.rate = rate
        self.burst = burst
        self.chunk = max(1.0, min(burst / 4, rate / 4))
        self.low = self.chunk / 2
        self.fail_open = fail_open
        self.name = name
        self._leases: dict[str, _Lease] = {}
        self._refused: dict[str, tuple[float, float]] = {}  # key -> (cost, monotonic until)
        self._refills: dict[str, asyncio.Future[None]] = {}
        self._lock = threading.Lock()
        self._local = LocalBuckets(rate, burst)
        self._down_until = 0.0

    # -- local state ------------------------------------------------------------------

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

    def _refusal(self, key: str, cost: float) -> float:
        """Seconds a recent refusal of ``key`` still stands for ``cost`` (0: ask)."""
        refused = self._refused.get(key)
        if refused is None or cost < refused[0]:
            return 0.0
        left = refused[1] - time.monotonic()
        if left <= 0:
            self._refused.pop(key, None)
            return 0.0
        return left

    def _add(self, key: str, granted: float, cost: float = 0.0) -> bool:
        """Add ``granted`` tokens to the key's lease (what is left of it carried over) and
        spend ``cost`` from it; False (nothing spent) if it then holds less than that."""
        now = time.monotonic()
        with self._lock:
            lease = self._leases.get(key)
            carried = lease.tokens if lease is not None and lease.expires > now else 0.0
            tokens = carried + granted
            spent = tokens >= cost
            self._leases[key] = _Lease(tokens - cost if spent else tokens, now + LEASE_SECONDS)
            if len(self._leases) > _MAX_KEYS:
                self._leases = {key: self._leases[key]}
        return spent

    # -- the source -------------------------------------------------------------------

    def _source_is_down(self) -> bool:
        return self.fail_open and time.monotonic() < self._down_until

    def _ask(self, key: str, want: float, least: float) -> tuple[float, float] | None:
        """Lease from the source (blocking): (taken, it had), or None when a fail-open
        source is down (this process limits on its own until it is asked again)."""
        if self._source_is_down():
            return None
        try:
            return self.source.lease_tokens(
                key, want=want, least=least, rate=self.rate, burst=self.burst, now=time.time()
            )
        except SourceDown as exc:
            if not self.fail_open:
                raise
            if time.monotonic() >= self._down_until:
                log.warning("%s rate limits unreachable (%s); each server process limits on "
                            "its own for %g s", self.name, exc, FALLBACK_SECONDS)
            self._down_until = time.monotonic() + FALLBACK_SECONDS
            return None

    def _lease(self, key: str, cost: float) -> float:
        """Lease more tokens (blocking): what ``cost`` lacks beyond the tokens this process
        holds for ``key``, at least a chunk. 0.0 once ``cost`` is spent, else seconds until
        the shared bucket could pay it."""
        for _ in range(3):  # another request of the key may spend the tokens meanwhile
            if self._spend(key, cost):
                return 0.0
            need = cost - self.available(key)
            got = self._ask(key, max(self.chunk, need), need)
            if got is None:
                return self._local.take(key, cost)
            granted, had = got
            if granted < need:
                wait = (need - had) / self.rate if self.rate > 0 else math.inf
                with self._lock:
                    self._refused[key] = (cost, time.monotonic() + wait)
                    if len(self._refused) > _MAX_KEYS:
                        self._refused.clear()
                return wait
            if self._add(key, granted, cost):
                return 0.0
        return 1.0 / self.rate if self.rate > 0 else math.inf

    def _top_up(self, key: str) -> None:
        """Lease the key's next chunk ahead of need (blocking; a background refill)."""
        got = self._ask(key, self.chunk, 1.0)
        if got is not None and got[0] > 0:
            self._add(key, got[0])

    def _refill_ahead(self, key: str) -> None:
        """Start leasing the key's next chunk in the background when its lease runs low."""
        if key in self._refills or self.available(key) >= self.low or self._source_is_down():
            return
        task = asyncio.get_running_loop().create_task(asyncio.to_thread(self._top_up, key))
        self._refills[key] = task

        def done(finished: asyncio.Future[None]) -> None:
            self._refills.pop(key, None)
            if not finished.cancelled() and finished.exception() is not None:
                log.warning("could not lease rate-limit tokens ahead: %s",
                            type(finished.exception()).__name__)

        task.add_done_callback(done)

    # -- the backend ------------------------------------------------------------------

    def take(self, key: str, cost: float) -> float:
        if self._spend(key, cost):
            return 0.0
        if self._source_is_down():
            return self._local.take(key, cost)
        return self._refusal(key, cost) or self._lease(key, cost)

    async def atake(self, key: str, cost: float) -> float:
        if self._spend(key, cost):
            self._refill_ahead(key)
            return 0.0
        if self._source_is_down():
            return self._local.take(key, cost)
        refused = self._refusal(key, cost)
        if refused:
            return refused
        pending = self._refills.get(key)
        if pending is not None:  # the next chunk is on its way: wait for it, not for another
            with contextlib.suppress(Exception):
                await asyncio.shield(pending)
            if self._spend(key, cost):
                self._refill_ahead(key)
                return 0.0
        wait = await asyncio.to_thread(self._lease, key, cost)
        if not wait:
            self._refill_ahead(key)
        return wait


class StoreBuckets(LeasedBuckets):
    """Token buckets in the store's database (the catalog's ``cf_server_rate_buckets``)."""

    def __init__(self, catalog: Catalog, rate: float, burst: float) -> None:
        super().__init__(catalog, rate, burst, name="store")
        self.catalog = catalog
