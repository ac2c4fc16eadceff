"""Rate limits in Redis (``redis:`` in the server config), against the real local Redis:
processes share a key's limit; an unreachable Redis at start is a clear error; a Redis
that goes away mid-run leaves each process limiting on its own (fail open to the
per-process limit) until it is back."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from contextfold.errors import ConfigError
from contextfold.server import shared_limits
from contextfold.server.app import create_app
from contextfold.server.config import ServerConfig
from contextfold.server.limits import RateLimiter
from contextfold.server.problems import ProblemError
from contextfold.server.redis_buckets import RedisBuckets, check_redis

from .conftest import start_server
from .limits_flood import assert_one_limit
from .tcp_proxy import TcpProxy

pytestmark = pytest.mark.redis

REDIS = "redis://127.0.0.1:6379/0"
START_HINT = "redis-server --daemonize yes"
RATE, BURST = 20.0, 40


@pytest.fixture(scope="module", autouse=True)
def redis_up() -> None:
    try:
        check_redis(REDIS)
    except ConfigError as exc:  # a missing Redis fails the test with how to start it
        pytest.fail(f"Redis is not running on 127.0.0.1:6379 ({exc}); start it: {START_HINT}")


@contextmanager
def limiters(url: str, processes: int) -> Iterator[list[RateLimiter]]:
    """One limiter per would-be server process, each with its own Redis client."""
    backends = [RedisBuckets(url, RATE, float(BURST)) for _ in range(processes)]
    try:
        yield [RateLimiter(RATE, BURST, backend=b) for b in backends]
    finally:
        for backend in backends:
            backend.close()


def hammer(limiters: list[RateLimiter], key: str, seconds: float) -> tuple[int, float]:
    """Requests of ``key`` spread over the limiters for ``seconds``: (admitted, elapsed)."""
    admitted, n = 0, 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            limiters[n % len(limiters)].check(key)
            admitted += 1
        except ProblemError as exc:
            assert exc.status == 429 and int(exc.headers["Retry-After"]) >= 1
        n += 1
        time.sleep(0.001)
    return admitted, time.monotonic() - started


def fresh_key() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


def test_processes_share_a_keys_limit_in_redis() -> None:
    with limiters(REDIS, 3) as three:
        admitted, elapsed = hammer(three, fresh_key(), 1.0)
    assert BURST <= admitted <= BURST + RATE * elapsed


def test_event_loop_takes_share_the_limit_too() -> None:
    """``acheck`` (the server's path, with chunks leased ahead) holds the same bound."""

    async def run(limiters: list[RateLimiter], key: str) -> tuple[int, float]:
        admitted, n = 0, 0
        started = time.monotonic()
        while time.monotonic() - started < 1.0:
            try:
                await limiters[n % len(limiters)].acheck(key)
                admitted += 1
            except ProblemError:
                pass
            n += 1
            await asyncio.sleep(0.001)
        return admitted, time.monotonic() - started

    with limiters(REDIS, 2) as two:
        admitted, elapsed = asyncio.run(run(two, fresh_key()))
    assert BURST <= admitted <= BURST + RATE * elapsed


def test_unreachable_redis_at_start_is_a_clear_error(tmp_path: Path) -> None:
    config = ServerConfig(redis="redis://127.0.0.1:1/0")
    with pytest.raises(ConfigError, match=r"cannot reach Redis at redis://127\.0\.0\.1:1/0"):
        create_app(config, f"sqlite:///{tmp_path / 'x.db'}")
    path = tmp_path / "server.json"
    path.write_text(json.dumps({"redis": "redis://:secret@127.0.0.1:1/0"}))
    done = subprocess.run(
        [sys.executable, "-m", "contextfold.cli", "serve", "--port", "0", "--config",
         str(path), "--db", str(tmp_path / "x.db")],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    assert "cannot reach Redis" in done.stderr
    assert "secret" not in done.stderr + done.stdout  # the password is never printed


def test_redis_gone_mid_run_fails_open_to_the_process_limit(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(shared_limits, "FALLBACK_SECONDS", 0.5)
    key = fresh_key()
    with TcpProxy("127.0.0.1", 6379) as proxy, limiters(
        f"redis://127.0.0.1:{proxy.port}/0", 1
    ) as (limiter,):
        limiter.check(key)  # leased from Redis
        proxy.cut()
        with caplog.at_level(logging.WARNING, "contextfold.server.limits"):
            admitted, elapsed = hammer([limiter], key, 0.4)
        # open, but still limited: this process's own bucket (burst + rate × seconds),
        # after what it had leased from Redis before the cut
        chunk = limiter.backend.chunk  # type: ignore[attr-defined]
        assert BURST <= admitted <= BURST + RATE * elapsed + chunk
        assert "limits on its own" in caplog.text
        with pytest.raises(ProblemError) as over:
            limiter.check(key)
        assert over.value.status == 429
        proxy.restore()
        time.sleep(0.6)  # past the fallback: Redis is asked again
        other = fresh_key()
        limiter.check(other)
    assert float(_redis_tokens(other)) < BURST  # the take reached Redis again


def _redis_tokens(key: str) -> str:
    import redis

    client = redis.Redis.from_url(REDIS)
    try:
        value = client.hget(f"contextfold:rate:{key}", "tokens")
    finally:
        client.close()
    assert value is not None
    return value.decode()


def test_two_server_processes_hold_one_limit_in_redis(tmp_path: Path) -> None:
    served = start_server(tmp_path, workers=2, config={
        "redis": REDIS, "limits": {"requests_per_second": 5, "burst": 10}})
    try:
        assert_one_limit(served)
    finally:
        served.stop()
