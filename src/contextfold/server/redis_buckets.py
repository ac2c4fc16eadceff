"""Rate-limit buckets in Redis: ``redis: redis://host:6379/0`` in the server config.

Every server process leases its keys' tokens from the same Redis (see
:class:`~contextfold.server.shared_limits.LeasedBuckets`: chunks leased ahead, spent
locally), so a key's limit holds across processes and machines, without the store's
database taking a write per lease. One lease is one Lua script run (atomic in Redis),
with Redis's own clock, so the servers' clocks need not agree. A bucket's hash expires
once it would be full again (an idle key leaves nothing behind).

Redis must answer when the server starts (:func:`check_redis`: a clear ``ConfigError``
otherwise). If it goes away while the server runs, the limits **fail open to each
process's own limit**: each server process limits each key by itself (the ``process``
scope: N processes let up to N times the rate through) and asks Redis again every
:data:`~contextfold.server.shared_limits.FALLBACK_SECONDS`, logging a warning when it
starts doing so. Why open rather than closed: the limit protects the service from a
client that sends too much, not the data; refusing every request because the limiter's
helper is down would turn a Redis outage into a full outage of the memory every chat turn
waits on, while a per-process limit still stops a flood.

Needs the ``redis`` extra: ``pip install "contextfold[redis]"``.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .shared_limits import LeasedBuckets, SourceDown

__all__ = ["RedisBuckets", "RedisLeases", "check_redis"]

#: Redis keys of the buckets: ``<prefix><key id>`` (a hash of ``tokens`` and ``ts``).
PREFIX = "contextfold:rate:"
_TIMEOUT_S = 0.5

# KEYS[1]: the bucket; ARGV: want, least, rate, burst. Returns {taken, had} as strings
# (Lua numbers would be truncated to integers on the way back).
_LEASE = """
local want, least = tonumber(ARGV[1]), tonumber(ARGV[2])
local rate, burst = tonumber(ARGV[3]), tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(b[1]), tonumber(b[2])
if tokens == nil or ts == nil then tokens, ts = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
local had = tokens
local taken = 0
if tokens >= want then taken = want elseif tokens >= least then taken = tokens end
tokens = tokens - taken
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(math.max(now, ts)))
local full = 60
if rate > 0 then full = math.ceil((burst - tokens) / rate) + 1 end
redis.call('EXPIRE', KEYS[1], full)
return {tostring(taken), tostring(had)}
"""


def _client(url: str) -> Any:
    try:
        import redis
    except ImportError as exc:
        raise ConfigError(
            'redis: in the server config needs the redis extra: pip install "contextfold[redis]"'
        ) from exc
    try:
        return redis.Redis.from_url(
            url, socket_timeout=_TIMEOUT_S, socket_connect_timeout=_TIMEOUT_S,
            health_check_interval=30,
        )
    except ValueError as exc:
        raise ConfigError(f"redis: {_safe(url)} is not a Redis URL: {exc}") from exc


def _safe(url: str) -> str:
    """The URL without its password."""
    scheme, sep, rest = url.partition("://")
    _creds, at, host = rest.rpartition("@")
    return f"{scheme}{sep}{'***@' if at else ''}{host}"


def check_redis(url: str) -> None:
    """Raise ``ConfigError`` unless Redis at ``url`` answers (at server start)."""
    client = _client(url)  # first: a ConfigError naming the extra when it is missing
    import redis

    try:
        client.ping()
    except redis.RedisError as exc:
        raise ConfigError(
            f"redis: cannot reach Redis at {_safe(url)} ({type(exc).__name__}: {exc}); "
            "start it, fix the URL, or remove redis: from the config to keep the rate "
            "limits in the store"
        ) from exc
    finally:
        client.close()


class RedisLeases:
    """The :class:`~contextfold.server.shared_limits.LeaseSource` of Redis buckets."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._redis = _client(url)
        self._script = self._redis.register_script(_LEASE)

    def lease_tokens(
        self, bucket: str, *, want: float, least: float, rate: float, burst: float, now: float
    ) -> tuple[float, float]:
        import redis

        try:
            taken, had = self._script(keys=[PREFIX + bucket], args=[want, least, rate, burst])
        except redis.RedisError as exc:  # connection refused, timeout, server gone
            raise SourceDown(type(exc).__name__) from exc
        return float(taken), float(had)

    def close(self) -> None:
        self._redis.close()


class RedisBuckets(LeasedBuckets):
    """Token buckets in Redis, failing open to a per-process limit while it is down."""

    def __init__(self, url: str, rate: float, burst: float) -> None:
        self.leases = RedisLeases(url)
        super().__init__(self.leases, rate, burst, fail_open=True, name="Redis")

    def close(self) -> None:
        self.leases.close()
