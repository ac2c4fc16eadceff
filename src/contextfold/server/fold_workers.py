"""Folding off the request path: the fold workers of the HTTP service.

With ``fold: background`` (the default) an append commits, marks the session due when the
policy wants a fold, and answers; the fold itself runs in a *fold worker process*, the
lease-based :class:`~contextfold.worker.Worker` with the service's per-session settings.
Summarizing is CPU-bound (the extractive summarizer) or slow (a model call): in its own
process it never runs on a server's event loop nor holds a server process's GIL.

``contextfold serve`` starts ``fold_workers.processes`` of them and supervises them
(:class:`FoldSupervisor`): a worker that exits or is killed is started again, and they stop
with the server. A worker also stops on its own when its server dies, even by ``kill -9``
(Linux: ``PR_SET_PDEATHSIG``; elsewhere: it notices its parent changed within a second),
so no worker outlives its server. Leases make them share the work with each other and with
the workers of other servers on the same PostgreSQL, and with ``contextfold worker
--config`` processes (``fold: deferred`` starts none: only external workers fold).

A fold worker killed mid-fold loses nothing: the messages were committed by the append,
its fold never commits after its lease expired, and the session is claimed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ..engine import AsyncMemory
from ..worker import Worker, WorkerStats, run_worker
from .config import ServerConfig

__all__ = ["FoldSupervisor", "serve_folds"]

log = logging.getLogger("contextfold.server.folds")

#: Environment of a supervised fold worker (besides the server's store and config).
PARENT_ENV = "CONTEXTFOLD_FOLD_PARENT"

MakeWorker = Callable[[AsyncMemory, Callable[[str], Awaitable[AsyncMemory]]], Worker]


async def serve_folds(
    config: ServerConfig, url: str, make_worker: MakeWorker, *, once: bool = False,
    watch: Callable[[Worker], Coroutine[Any, Any, None]] | None = None,
) -> WorkerStats:
    """Fold the due sessions of the service's store at ``url`` as the service would: the
    config's model, retention and defaults, overlaid with each session's own settings
    (``contextfold worker --config`` and the workers ``serve`` supervises)."""
    from .catalog import open_catalog
    from .memories import SessionMemories, open_service_store

    store = open_service_store(config, url)
    catalog = open_catalog(url)
    memories = SessionMemories(config, store, catalog)
    try:
        work = make_worker(memories.memory(config.defaults), memories.for_store_id)
        watcher: asyncio.Task[None] | None = (
            asyncio.create_task(watch(work)) if watch is not None else None
        )
        try:
            return await run_worker(work, once=once)
        finally:
            if watcher is not None:
                watcher.cancel()
    finally:
        await store.close()
        await asyncio.to_thread(catalog.close)


class FoldSupervisor:
    """Runs ``processes`` fold worker processes for a server and keeps them running.

    A thread per worker starts it, waits for it and starts it again if it ends before
    :meth:`stop` (after a pause that grows while it keeps failing, up to 10 s). The thread
    outlives its worker, so the worker's parent-death signal (tied to that thread) fires
    only when the server process dies. :meth:`stop` sends SIGTERM (the worker finishes or
    releases its folds) and kills what is left after ``grace_seconds``.
    """

    def __init__(
        self, store_url: str, config_path: str | None, processes: int, *,
        grace_seconds: float = 25.0, log_level: str = "warning",
    ) -> None:
        self.store_url = store_url
        self.config_path = config_path
        self.processes = processes
        self.grace_seconds = grace_seconds
        self.log_level = log_level
        self.started = 0  # worker processes started so far, restarts included
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for n in range(self.processes):
            thread = threading.Thread(target=self._keep, args=(n,), daemon=True,
                                      name=f"contextfold-fold-supervisor-{n}")
            thread.start()
            self._threads.append(thread)

    def pids(self) -> list[int]:
        with self._lock:
            return [c.pid for c in self._children.values() if c.poll() is None]

    def _spawn(self, n: int) -> subprocess.Popen[bytes] | None:
        env = {**os.environ, "CONTEXTFOLD_SERVER_STORE": self.store_url,
               PARENT_ENV: str(os.getpid()), "CONTEXTFOLD_FOLD_LOG_LEVEL": self.log_level}
        env.pop("CONTEXTFOLD_SERVER_CONFIG", None)
        if self.config_path is not None:
            env["CONTEXTFOLD_SERVER_CONFIG"] = self.config_path
        with self._lock:
            if self._stopping.is_set():
                return None
            child = subprocess.Popen(
                [sys.executable, "-m", "contextfold.server.fold_workers"],
                env=env, stdin=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C is the server's to handle
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
            self._children[n] = child
            self.started += 1
        return child

    def _keep(self, n: int) -> None:
        pause = 0.5
        while not self._stopping.is_set():
            began = time.monotonic()
            child = self._spawn(n)
            if child is None:
                return
            code = child.wait()
            if self._stopping.is_set():
                return
            if time.monotonic() - began > 30:
                pause = 0.5
            log.warning("fold worker %d (pid %d) exited with %s; starting it again in %.1fs",
                        n, child.pid, code, pause)
            if self._stopping.wait(pause):
                return
            pause = min(10.0, pause * 2)

    def stop(self) -> None:
        """Stop every worker (SIGTERM, then SIGKILL after ``grace_seconds``) and wait."""
        with self._lock:
            self._stopping.set()
            children = list(self._children.values())
        for child in children:
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_seconds
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for thread in self._threads:
            thread.join(timeout=5)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: SIGTERM this process when the thread that started it dies (the server)."""
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


async def _watch_parent(worker: Worker, parent: int) -> None:
    """Stop the worker when its server is gone (the portable half of parent death)."""
    while True:
        if os.getppid() != parent:
            log.warning("fold worker %s: its server (pid %d) is gone; stopping",
                        worker.owner, parent)
            worker.stop()
            return
        await asyncio.sleep(1.0)


def main() -> None:
    """A supervised fold worker (``python -m contextfold.server.fold_workers``): the
    server's store and config from the environment ``contextfold serve`` sets."""
    from .config import load_config

    logging.basicConfig(
        level=os.environ.get("CONTEXTFOLD_FOLD_LOG_LEVEL", "warning").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = load_config(os.environ.get("CONTEXTFOLD_SERVER_CONFIG"))
    url = os.environ["CONTEXTFOLD_SERVER_STORE"]
    parent = int(os.environ.get(PARENT_ENV) or os.getppid())
    if os.getppid() != parent:  # the server died before this process got going
        return
    workers = config.fold_workers
    if workers.nice and hasattr(os, "nice"):
        os.nice(workers.nice)  # requests first: this process only ever runs background work

    def make_worker(
        memory: AsyncMemory, memory_for: Callable[[str], Awaitable[AsyncMemory]]
    ) -> Worker:
        return Worker(memory, concurrency=workers.concurrency,
                      lease_seconds=workers.lease_seconds, poll_interval=workers.poll_interval,
                      memory_for=memory_for)

    asyncio.run(serve_folds(config, url, make_worker,
                            watch=lambda w: _watch_parent(w, parent)))


if __name__ == "__main__":
    main()
