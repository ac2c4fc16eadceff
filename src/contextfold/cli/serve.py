"""``contextfold serve`` (the HTTP service) and ``contextfold keys`` (its API keys)."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError
from .common import db_option, emit_json, err_console, fail, guard

_EXTRA_HINT = 'the HTTP service needs its extra: pip install "contextfold[server]"'


def _server_modules() -> Any:
    try:
        import uvicorn  # noqa: F401

        from ..server import app, catalog, config, keys
    except ImportError as exc:
        raise ConfigError(_EXTRA_HINT) from exc
    return app, catalog, config, keys


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@db_option
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Server config file (YAML or JSON): limits, defaults, model.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Server processes (use with a PostgreSQL store).",
)
@click.option(
    "--log-level",
    default="info",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
)
@click.option("--dev", is_flag=True, help="Local debugging (127.0.0.1 only): /v1 and the /ui/ "
              "inspector work without a key, as tenant 'dev'.")
@guard
def serve(
    host: str, port: int, db: str | None, config_path: Path | None, workers: int, log_level: str,
    dev: bool = False,
) -> None:
    """Serve the library over HTTP (OpenAPI at /openapi.json, docs at /docs).

    Appends answer at once; folds run in fold worker processes this command starts and
    keeps running (`fold_workers` in the config; `fold: inline` folds inside the append).

    \b
    Example:
      contextfold keys create --tenant demo      # prints a key once
      contextfold serve                          # http://127.0.0.1:8765 (inspector: /ui/)
      curl -H "Authorization: Bearer $KEY" http://127.0.0.1:8765/v1/sessions
    """
    app_mod, _, config_mod, _ = _server_modules()
    import uvicorn

    config = config_mod.load_config(config_path)
    url = app_mod.resolve_store_url(db or config.store)
    if workers > 1 and url.startswith("sqlite"):
        err_console.print(
            "[yellow]note:[/] several workers on one SQLite file share one writer;"
            " use --store postgresql://… to scale out"
        )
    if config.redis and config.limits.rate_limit_scope == "store":
        from ..server.redis_buckets import check_redis

        check_redis(config.redis)  # a clear error now, not a failing worker process later
    if dev and host not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigError(f"--dev skips API keys, so it serves on 127.0.0.1 only, not {host!r}")
    os.environ["CONTEXTFOLD_SERVER_DEV"] = "1" if dev else "0"  # read by server/ui.py
    # Every process rebuilds the app from these (uvicorn imports the factory by name).
    os.environ["CONTEXTFOLD_SERVER_STORE"] = url
    if config_path is not None:
        os.environ["CONTEXTFOLD_SERVER_CONFIG"] = str(config_path.resolve())
    else:
        os.environ.pop("CONTEXTFOLD_SERVER_CONFIG", None)
    metrics_dir = None  # made for this run, removed when it ends
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metrics_dir = tempfile.mkdtemp(prefix="contextfold-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    folders = config.fold_workers.processes if config.fold == "background" else 0
    err_console.print(
        f"[dim]contextfold serve: http://{host}:{port} store={_safe(url)} workers={workers}"
        f" fold={config.fold} fold_workers={folders}[/]"
    )
    supervisor = _fold_supervisor(url, config_path, folders, log_level)
    from ..server.protocol import HEADER_TIMEOUT_ENV, ServiceProtocol

    os.environ[HEADER_TIMEOUT_ENV] = str(config.limits.header_timeout_seconds)
    try:
        uvicorn.run(
            "contextfold.server.app:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
            access_log=False,  # our access log has no query strings (they can hold prompts)
            proxy_headers=False,
            http=ServiceProtocol,  # headers deadline, TCP_NODELAY (see server/protocol.py)
            limit_concurrency=config.limits.max_connections,
        )
    finally:
        if supervisor is not None:
            supervisor.stop()
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)


def _fold_supervisor(
    url: str, config_path: Path | None, processes: int, log_level: str
) -> Any:
    """The fold worker processes of ``fold: background``, started (None without any)."""
    if processes <= 0:
        return None
    from ..server.fold_workers import FoldSupervisor

    path = str(config_path.resolve()) if config_path is not None else None
    supervisor = FoldSupervisor(url, path, processes, log_level=log_level)
    supervisor.start()
    return supervisor


def _safe(url: str) -> str:
    """The URL without a password."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if at and ":" in creds:
        creds = creds.split(":", 1)[0] + ":***"
    return f"{scheme}{sep}{creds}{at}{host}"


@click.group()
def keys() -> None:
    """API keys of the HTTP service (one tenant per key; a tenant may have several)."""


def _catalog(db: str | None) -> Any:
    app_mod, catalog_mod, _, _ = _server_modules()
    catalog = catalog_mod.open_catalog(app_mod.resolve_store_url(db))
    catalog.setup()
    return catalog


@keys.command("create")
@click.option("--tenant", required=True, help="Tenant name: lowercase letters, digits, - and _.")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@guard
def keys_create(tenant: str, db: str | None, as_json: bool) -> None:
    """Create a key for TENANT and print it once (only its hash is stored)."""
    _, _, _, keys_mod = _server_modules()
    catalog = _catalog(db)
    try:
        key, record = keys_mod.create_key(catalog, tenant)
    finally:
        catalog.close()
    if as_json:
        emit_json({"key": key, "key_id": record.key_id, "tenant": record.tenant})
        return
    click.echo(key)
    err_console.print(
        f"[dim]key {record.key_id} for tenant {tenant!r}; shown once, store it "
        f"now (send it as 'Authorization: Bearer KEY')[/]"
    )


@keys.command("list")
@click.option("--tenant", default=None, help="Only this tenant's keys.")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@guard
def keys_list(tenant: str | None, db: str | None, as_json: bool) -> None:
    """List keys (ids, tenants, dates; never the keys themselves)."""
    from datetime import datetime, timezone

    catalog = _catalog(db)
    try:
        records = catalog.list_keys(tenant)
    finally:
        catalog.close()

    def when(ts: float | None) -> str | None:
        return (
            None
            if ts is None
            else datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")
        )

    rows = [
        {
            "key_id": r.key_id,
            "tenant": r.tenant,
            "created_at": when(r.created_at),
            "revoked_at": when(r.revoked_at),
        }
        for r in records
    ]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        err_console.print("no keys yet: contextfold keys create --tenant NAME")
    for row in rows:
        state = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
        click.echo(f"{row['key_id']}  {row['tenant']:<20}  created {row['created_at']}  {state}")


@keys.command("revoke")
@click.argument("key_id")
@db_option
@guard
def keys_revoke(key_id: str, db: str | None) -> None:
    """Revoke the key KEY_ID (servers stop accepting it within key_cache_seconds)."""
    catalog = _catalog(db)
    try:
        revoked = catalog.revoke_key(key_id)
    finally:
        catalog.close()
    if not revoked:
        fail(f"no active key {key_id!r}")
    click.echo(f"revoked {key_id}")


COMMANDS = [serve, keys]
