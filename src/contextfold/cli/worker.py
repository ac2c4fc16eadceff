"""``contextfold worker``: fold due sessions off the request path."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError
from ..memory import AsyncMemory
from ..worker import Worker, WorkerStats, run_worker
from .common import (
    SUMMARIZERS,
    console,
    db_option,
    emit_json,
    guard,
    make_summarizer,
    model_option,
    store_url,
)


@click.command()
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Most folds in flight in this process.",
)
@click.option("--once", is_flag=True, help="Fold what is due now, then exit.")
@click.option(
    "--lease-seconds",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    help="How long a dead worker's sessions stay blocked (running folds renew their leases).",
)
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="Seconds between looks for due sessions when idle.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=64),
    default=None,
    help="Budget of the TokenBudget policy (use the same as your app).",
)
@click.option(
    "--summarizer", type=click.Choice(sorted(SUMMARIZERS)), default="extractive", show_default=True
)
@model_option
@click.option(
    "--settings",
    "settings_path",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Agent settings YAML: its policy (context limit, idle fold/clear) replaces --max-tokens.",
)
@click.option(
    "--config",
    "config_path",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The HTTP service's config file: fold each session as `contextfold serve --config` "
    "does (its model, retention and defaults, and the session's own settings). Replaces "
    "--max-tokens, --settings, --summarizer and --model.",
)
@click.option("--owner", default=None, help="Name in the ledger (default host:pid:random).")
@click.option("--json", "as_json", is_flag=True, help="Print the totals as JSON at exit.")
@db_option
@guard
def worker(
    concurrency: int,
    once: bool,
    lease_seconds: float,
    poll_interval: float,
    max_tokens: int | None,
    summarizer: str,
    model: str | None,
    settings_path: Path | None,
    config_path: Path | None,
    owner: str | None,
    as_json: bool,
    db: str | None,
) -> None:
    """Claim due sessions and fold them, many at a time.

    Apps that use Memory(store=URL, fold="deferred") only append and mark sessions
    due; run any number of workers, on any number of machines, against the same store:

    \b
      contextfold worker --store postgresql://app@db/chat --concurrency 32
      contextfold worker --store sqlite:///chat.db --once

    Behind `contextfold serve`, pass the server's --config so each session folds with
    its own settings (policy, budget, preset). `serve` runs fold workers of its own
    (`fold: background`); more of them here add folding capacity, on any machine.

    Each session is leased to one worker at a time; a worker killed mid-fold loses its
    sessions to others when the lease expires, and cannot commit after that. SIGTERM
    stops claiming and lets in-flight folds finish (a second SIGTERM releases them now).
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    options: dict[str, Any] = {}

    def make_worker(
        memory: AsyncMemory, memory_for: Callable[[str], Awaitable[AsyncMemory]] | None = None
    ) -> Worker:
        return Worker(memory, owner=owner, concurrency=concurrency, lease_seconds=lease_seconds,
                      poll_interval=poll_interval, memory_for=memory_for)

    async def main() -> WorkerStats:
        memory = AsyncMemory(store_url(db), **options)
        try:
            return await run_worker(make_worker(memory), once=once)
        finally:
            await memory.close()

    async def as_the_server(path: Path) -> WorkerStats:
        try:
            from ..server.config import load_config
            from ..server.fold_workers import serve_folds
        except ImportError as exc:
            raise ConfigError('--config needs the server extra: pip install '
                              '"contextfold[server]"') from exc
        config = load_config(path)
        return await serve_folds(config, store_url(db or config.store), make_worker, once=once)

    if config_path is not None:
        if max_tokens or settings_path or model or summarizer != "extractive":
            raise click.UsageError(
                "--config replaces --max-tokens, --settings, --summarizer and --model"
            )
        totals = asyncio.run(as_the_server(config_path))
    else:
        options["summarizer"] = make_summarizer(summarizer, model)
        if max_tokens:
            from ..policy import TokenBudget

            options["policy"] = TokenBudget(max_tokens)
        if settings_path is not None:
            from ..settings import AgentSettings

            options.update(AgentSettings.load(settings_path).options(model))
        totals = asyncio.run(main())
    if as_json:
        emit_json(asdict(totals))
    else:
        console.print(", ".join(f"{k} {v}" for k, v in asdict(totals).items()))


COMMANDS = [worker]
