"""A key's rate limit holds across server processes: the buckets live in the store's
database and processes lease tokens from them in chunks, so N processes together let at
most ``burst + rate × seconds`` requests through (per-process buckets let N times that)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from contextfold.server.catalog import open_catalog
from contextfold.server.limits import RateLimiter
from contextfold.server.problems import ProblemError
from contextfold.server.shared_limits import StoreBuckets

from .conftest import start_server
from .limits_flood import assert_one_limit

RATE, BURST = 20.0, 40


@contextmanager
def limiters(url: str, processes: int, scope: str) -> Iterator[list[RateLimiter]]:
    """One limiter per would-be server process, each with its own catalog connection."""
    catalogs = [open_catalog(url) for _ in range(processes)]
    for catalog in catalogs:
        catalog.setup()
    try:
        yield [RateLimiter(RATE, BURST, backend=StoreBuckets(c, RATE, float(BURST))
                           if scope == "store" else None) for c in catalogs]
    finally:
        for catalog in catalogs:
            catalog.close()


def hammer(limiters: list[RateLimiter], key: str, seconds: float) -> tuple[int, float]:
    """Requests of ``key`` spread over the limiters for ``seconds``: (admitted, elapsed)."""
    admitted = 0
    started = time.monotonic()
    n = 0
    while time.monotonic() - started < seconds:
        try:
            limiters[n % len(limiters)].check(key)
            admitted += 1
        except ProblemError as exc:
            assert exc.status == 429 and int(exc.headers["Retry-After"]) >= 1
        n += 1
        time.sleep(0.001)
    return admitted, time.monotonic() - started


def ceiling(elapsed: float) -> float:
    return BURST + RATE * elapsed


def test_processes_on_one_sqlite_file_share_a_keys_limit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'limits.db'}"
    with limiters(url, 3, "store") as three:
        admitted, elapsed = hammer(three, "k1", 1.0)
    assert admitted <= ceiling(elapsed)
    assert admitted >= BURST  # the burst is there at the start, whichever process asks
    with limiters(url, 3, "process") as apart:  # each process its own: three times over
        admitted, elapsed = hammer(apart, "k2", 1.0)
    assert admitted > ceiling(elapsed)


def test_keys_are_limited_apart(tmp_path: Path) -> None:
    with limiters(f"sqlite:///{tmp_path / 'limits.db'}", 2, "store") as two:
        first, _ = hammer(two, "a", 0.3)
        second, _ = hammer(two, "b", 0.3)
    assert first >= BURST and second >= BURST


@pytest.mark.postgres
def test_processes_on_one_postgresql_share_a_keys_limit() -> None:
    from tests.pg_database import fresh_database

    with fresh_database("contextfold_limits") as url, limiters(url, 2, "store") as two:
        admitted, elapsed = hammer(two, "k1", 1.0)
    assert BURST <= admitted <= ceiling(elapsed)


@pytest.mark.postgres
def test_two_server_processes_hold_one_limit(tmp_path: Path) -> None:
    from tests.server.tcp_proxy import fresh_pg_database

    with fresh_pg_database() as (url, _, _):
        served = start_server(tmp_path, store=url, workers=2, config={
            "limits": {"requests_per_second": 5, "burst": 10}})
        try:
            assert_one_limit(served)
        finally:
            served.stop()


class SlowSource:
    """A lease source that takes ``delay`` seconds per lease and counts them."""

    def __init__(self, delay: float, tokens: float = 1e9) -> None:
        self.delay = delay
        self.tokens = tokens
        self.calls = 0

    def lease_tokens(self, bucket: str, *, want: float, least: float, rate: float,
                     burst: float, now: float) -> tuple[float, float]:
        self.calls += 1
        time.sleep(self.delay)
        had = self.tokens
        taken = want if had >= want else had if had >= least else 0.0
        self.tokens -= taken
        return taken, had


def test_a_key_within_its_rate_does_not_wait_for_leases() -> None:
    """The next chunk is leased in the background while the last one is spent: after the
    first request, requests of a key within its rate never wait for the shared store."""
    from contextfold.server.shared_limits import LeasedBuckets

    source = SlowSource(delay=0.05)
    buckets = LeasedBuckets(source, rate=100.0, burst=200.0)

    async def run() -> list[float]:
        waits = []
        for _ in range(200):
            started = time.perf_counter()
            assert await buckets.atake("k", 1.0) == 0.0
            waits.append(time.perf_counter() - started)
            await asyncio.sleep(0.012)  # ~80 requests a second: within the rate
        return waits

    waits = asyncio.run(run())
    assert waits[0] >= 0.05  # the first lease is waited for
    assert max(waits[1:]) < 0.05  # then every chunk was there before it was needed
    assert source.calls >= 200 / buckets.chunk  # and each one came from the source


def test_a_refused_key_is_refused_without_asking_again() -> None:
    from contextfold.server.shared_limits import LeasedBuckets

    source = SlowSource(delay=0.0, tokens=3.0)
    buckets = LeasedBuckets(source, rate=1.0, burst=4.0)
    assert buckets.take("k", 1.0) == 0.0  # leased the 3 tokens there were (chunk 1 + ...)
    taken = 1 + sum(buckets.take("k", 1.0) == 0.0 for _ in range(2))
    assert taken == 3
    wait = buckets.take("k", 1.0)
    assert wait > 0
    calls = source.calls
    assert all(buckets.take("k", 1.0) > 0 for _ in range(50))
    assert source.calls == calls  # the refusal stood until the bucket could refill


@pytest.mark.postgres
def test_a_postgresql_lease_takes_what_the_sqlite_one_takes(tmp_path: Path) -> None:
    """PostgreSQL leases from a bucket's row in one statement (SQLite: a transaction of
    two): the same calls take and report the same tokens, the refill capped at the burst,
    a clock going back never adding any."""
    from tests.pg_database import fresh_database

    calls = [  # (want, least, now)
        (10.0, 10.0, 100.0), (30.0, 30.0, 100.0), (5.0, 1.0, 100.1), (5.0, 5.0, 100.2),
        (5.0, 1.0, 99.0), (40.0, 40.0, 200.0), (12.5, 12.5, 200.5), (12.5, 0.5, 200.5),
        (3.0, 3.0, 200.6),
    ]
    sqlite = open_catalog(f"sqlite:///{tmp_path / 'limits.db'}")
    with fresh_database("contextfold_limits") as url:
        pg = open_catalog(url)
        try:
            for want, least, now in calls:
                expected = sqlite.lease_tokens("b", want=want, least=least, rate=RATE,
                                               burst=float(BURST), now=now)
                got = pg.lease_tokens("b", want=want, least=least, rate=RATE,
                                      burst=float(BURST), now=now)
                assert got == pytest.approx(expected), (want, least, now)
        finally:
            pg.close()
            sqlite.close()
