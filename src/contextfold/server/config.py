"""Server configuration: the ``--config`` file (YAML or JSON) and the command-line flags.

::

    # server.yaml — every key is optional
    store: postgresql://localhost/contextfold   # default: the CLI's SQLite file
    model: null                 # summarizer model ("openai:gpt-4o-mini"); null: offline
    fold: background            # background: appends answer at once, fold worker processes
                                # of `serve` fold (see fold_workers); inline: fold during
                                # the append (single-user setups); deferred: only external
                                # `contextfold worker --config` processes fold
    fold_workers:               # with fold: background
      processes: 1              # fold worker processes `serve` starts and supervises
      concurrency: 8            # folds in flight per worker process
      lease_seconds: 30         # how long a killed worker's sessions wait for another
      poll_interval: 0.5        # seconds between looks for due sessions when idle
      nice: 10                  # CPU priority below the server's (0: the same; Unix): on
                                # busy cores requests come first, folds catch up after
      idle: true                # Linux: folds get only CPU time nothing else wants
                                # (SCHED_IDLE); false: only `nice` ranks them
      restart_pause: 0.5        # a worker that exits is started again after this many
      restart_pause_max: 10     # seconds, doubled up to the max while it keeps failing
                                # (within 30 s of its start); its replacement takes over
                                # the dead worker's leases at once
      overdue_after_leases: 3   # log a session over its fold trigger that no fold has
                                # shrunk for this many lease periods (0: never)
    retention: archive          # archive: keep folded messages (marked folded); delete:
                                # remove them in the fold's commit (privacy)
    key_cache_seconds: 2        # a revoked key stops working within this many seconds
    redis: null                 # redis://127.0.0.1:6379/0: the shared rate limits live in
                                # Redis instead of the store (pip install "contextfold[redis]";
                                # must answer at start; while it is down each server process
                                # limits on its own)
    limits:
      max_body_bytes: 1048576   # 413 payload_too_large above this
      max_messages_per_request: 1000   # 413 too_many_messages above this
      requests_per_second: 50   # per key; 0: no limit (429 above it)
      burst: 100                # requests a key may make at once before the rate applies
      rate_limit_scope: store   # store: one limit per key across every server process on
                                # the database; process: per key and server process
      cost_bytes_per_token: 65536   # a request takes 1 token per started 64 KiB of body
      cost_messages_per_token: 20   # an append takes 1 more token per 20 messages
      heavy_requests_per_tenant: 1  # requests with a body over heavy_request_bytes a
      heavy_request_bytes: 262144   # tenant runs at once (the next ones wait their turn)
      failed_auth_per_second: 10    # per client address: /v1 requests without a valid key
      failed_auth_burst: 50         # (above it: 429 without looking the key up)
      header_timeout_seconds: 10    # a connection's request headers must arrive within this
      body_timeout_seconds: 30      # and the body within this after them (else 408)
      max_connections: 1000         # per server process; more: 503 to new requests
    defaults:                   # per-session settings a session has until it PUTs its own
      policy: token_budget
      budget: 4000
      keep_last: 2
      preset: conversation
      masking: {keep: 3}        # observation masking: older tool results shown as
                                # stand-ins; false: off; left out: on for preset agent

An unknown key or a wrong value is a ``ConfigError`` naming the file and the field.
"""

from __future__ import annotations

import json
import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from ..errors import ConfigError
from .session_settings import SessionSettings

__all__ = ["FoldWorkers", "Limits", "ServerConfig", "load_config"]


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_messages_per_request: int = Field(default=1000, ge=1)
    requests_per_second: float = Field(default=50.0, ge=0)
    burst: int = Field(default=100, ge=1)
    cost_bytes_per_token: int = Field(default=65_536, ge=1024)
    cost_messages_per_token: int = Field(default=20, ge=1)
    heavy_requests_per_tenant: int = Field(default=1, ge=1)
    heavy_request_bytes: int = Field(default=262_144, ge=1024)
    failed_auth_per_second: float = Field(default=10.0, ge=0)
    failed_auth_burst: int = Field(default=50, ge=1)
    header_timeout_seconds: float = Field(default=10.0, gt=0, le=3600)
    body_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    max_connections: int = Field(default=1000, ge=1)
    rate_limit_scope: Literal["store", "process"] = "store"


class FoldWorkers(BaseModel):
    """The fold worker processes ``contextfold serve`` runs with ``fold: background``."""

    model_config = ConfigDict(extra="forbid")

    processes: int = Field(default=1, ge=0, le=64)
    concurrency: int = Field(default=8, ge=1, le=1024)
    lease_seconds: float = Field(default=30.0, ge=1, le=3600)
    poll_interval: float = Field(default=0.5, ge=0.05, le=60)
    nice: int = Field(default=10, ge=0, le=19)
    idle: bool = True
    restart_pause: float = Field(default=0.5, ge=0, le=60)
    restart_pause_max: float = Field(default=10.0, ge=0, le=600)
    overdue_after_leases: int = Field(default=3, ge=0, le=1000)


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    store: str | None = Field(default=None, description="Store URL or SQLite path")
    model: str | None = None
    fold: Literal["background", "inline", "deferred"] = "background"
    fold_workers: FoldWorkers = Field(default_factory=FoldWorkers)
    retention: Literal["archive", "delete"] = "archive"
    key_cache_seconds: float = Field(default=2.0, ge=0, le=300)
    redis: str | None = Field(default=None, description="Redis URL for the shared rate limits")
    limits: Limits = Field(default_factory=Limits)
    defaults: SessionSettings = Field(default_factory=SessionSettings)


def load_config(path: str | os.PathLike[str] | None) -> ServerConfig:
    """The configuration in ``path`` (YAML, or JSON), or the defaults when None."""
    if path is None:
        return ServerConfig()
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read server config {source!r}: {exc}") from exc
    if source.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}: not valid JSON: {exc}") from exc
    else:
        try:
            import yaml
        except ImportError as exc:  # pragma: no cover - yaml is in the server extra
            raise ConfigError(
                'reading YAML needs PyYAML: pip install "contextfold[server]"'
            ) from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source}: not valid YAML: {exc}") from exc
    try:
        config = ServerConfig.model_validate(data or {})
        config.defaults.policy_object()
    except PydanticValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"{source}: {problems}") from exc
    except ConfigError as exc:
        raise ConfigError(f"{source}: defaults: {exc}") from exc
    return config
