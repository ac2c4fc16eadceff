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
its fold never commits after its lease expired, and the session is claimed again. Each
worker slot of a supervisor has an owner identity of its own — ``<server>/fold-<slot>/g<n>``,
``<server>`` unique per ``serve`` process (host, pid, random), ``n`` the generation —
and the replacement of a worker the supervisor saw exit revokes the leases of every
earlier generation of its slot before it claims anything
(:meth:`~contextfold.stores.base.Store.revoke_leases`): their sessions are folded again
at once instead of after ``lease_seconds``. The revoke bumps each session's lease token,
so a fold of the old owner can never commit after it, even one of a process that was
only paused. It names the slot's own owners only: another server's workers on the same
PostgreSQL are never touched. The workers of a server that was itself killed (``kill -9``)
get SIGTERM (parent death) and finish or release their folds as they stop; the leases of
workers killed with it (a process group kill, the OOM killer) wait until they expire, as
the leases of any process nobody saw exit must.

A fold worker runs below the server's CPU priority (``fold_workers.nice``) and, on Linux,
in the idle scheduling class (``fold_workers.idle``, :func:`lower_priority`): on busy
cores requests come first and folds catch up with the CPU time left over; meanwhile the
context stays within its budget, and a session left unfolded is logged (below).

One worker process per server also logs a session left over its fold trigger, with no
fold committed, for ``fold_workers.overdue_after_leases`` lease periods
(:mod:`.fold_overdue`).
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
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

from ..engine import AsyncMemory
from ..messages import Message, make_stored
from ..summarizers.base import SummaryRequest
from ..summarizers.extractive import ExtractiveSummarizer
from ..worker import Worker, WorkerStats, default_owner, run_worker
from .config import ServerConfig, load_config
from .fold_overdue import OverdueWatch

__all__ = ["FoldSupervisor", "serve_folds"]

log = logging.getLogger("contextfold.server.folds")

#: Environment of a supervised fold worker (besides the server's store and config).
PARENT_ENV = "CONTEXTFOLD_FOLD_PARENT"
OWNER_ENV = "CONTEXTFOLD_FOLD_OWNER"  # its lease owner identity
TAKEOVER_ENV = "CONTEXTFOLD_FOLD_TAKEOVER"  # the owner prefix of its dead predecessors
WATCH_ENV = "CONTEXTFOLD_FOLD_WATCH"  # "1": it runs the overdue-session watch

#: A worker that ran this long before it exited is not crash-looping: the pause resets.
STABLE_SECONDS = 30.0

MakeWorker = Callable[[AsyncMemory, Callable[[str], Awaitable[AsyncMemory]]], Worker]


async def serve_folds(
    config: ServerConfig, url: str, make_worker: MakeWorker, *, once: bool = False,
    watch: Callable[[Worker], Coroutine[Any, Any, None]] | None = None,
    overdue_seconds: float = 0.0,
) -> WorkerStats:
    """Fold the due sessions of the service's store at ``url`` as the service would: the
    config's model, retention and defaults, overlaid with each session's own settings
    (``contextfold worker --config`` and the workers ``serve`` supervises). With
    ``overdue_seconds`` it also logs sessions left over their fold trigger that long."""
    from .catalog import open_catalog
    from .memories import SessionMemories, open_service_store

    # Summarizing holds the interpreter lock: folds in several threads would only take
    # turns at it (and pay for every switch), so the summarizer gets one thread.
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="contextfold-fold"))
    store = open_service_store(config, url)
    catalog = open_catalog(url)
    memories = SessionMemories(config, store, catalog)
    try:
        work = make_worker(memories.memory(config.defaults), memories.for_store_id)
        watchers = [asyncio.create_task(watch(work))] if watch is not None else []
        if overdue_seconds > 0:
            overdue = OverdueWatch(store, memories.for_store_id, after_seconds=overdue_seconds)
            watchers.append(asyncio.create_task(overdue.run(work.lease_seconds)))
        if not once:
            await warm_up(work.memory)
        try:
            return await run_worker(work, once=once)
        finally:
            for watcher in watchers:
                watcher.cancel()
    finally:
        await store.close()
        await asyncio.to_thread(catalog.close)


#: A warm-up turn: a relative date (the date tables), a number and a name (the redactor).
_WARM_TEXT = ("Yesterday Dana Reyes said the report is due in 2 weeks; call her at "
              "+1 415 555 0134 about invoice 4417.")


async def warm_up(memory: AsyncMemory) -> None:
    """Pay a fresh worker's one-time costs before its first claim — the tokenizer, the
    extractive summarizer's language and date tables (``dateparser`` is imported on first
    use), the redactor's patterns — by summarizing and redacting a made-up turn, so the
    first folds after a start cost what later ones do. Only with the offline summarizer
    (a model's summarizer is never called for it); a failure is logged, never raised."""
    if not isinstance(memory.summarizer, ExtractiveSummarizer):
        return
    sid = f"\x00warm-up/{uuid.uuid4().hex}"  # no session id of the service's looks so
    day = datetime.now(timezone.utc)
    turns = [Message(role=role, content=_WARM_TEXT, timestamp=day)
             for role in ("user", "assistant")]
    span = [make_stored(n + 1, m, memory.counter.count(m.text), False)
            for n, m in enumerate(turns)]
    try:
        result = await memory.summarizer.summarize(SummaryRequest(
            sid, "", span, memory.summary_max_tokens, memory.counter, "warm-up"))
        privacy = memory.privacy
        if (privacy.summary or privacy.summarizer_input) and not privacy.reversible:
            privacy.text(result.text, sid)
    except Exception:  # only an optimisation: the first fold pays instead
        log.warning("fold worker warm-up failed (the first fold pays for it)", exc_info=True)
    finally:
        memory.privacy.forget(sid)


class FoldSupervisor:
    """Runs ``processes`` fold worker processes for a server and keeps them running.

    A thread per worker slot starts it, waits for it and starts it again if it ends before
    :meth:`stop`, after ``fold_workers.restart_pause`` seconds, doubled (up to
    ``restart_pause_max``) while it keeps exiting within 30 s of its start. Each start is
    a new generation of the slot's owner identity (:meth:`owner`); a replacement takes over
    the leases of the slot's earlier generations at once — the supervisor has reaped them,
    so they are dead. The thread outlives its worker, so the worker's parent-death signal
    (tied to that thread) fires only when the server process dies. :meth:`stop` sends
    SIGTERM (the worker finishes or releases its folds) and kills what is left after
    ``grace_seconds``.
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
        settings = load_config(config_path).fold_workers
        self.restart_pause = settings.restart_pause
        self.restart_pause_max = max(settings.restart_pause, settings.restart_pause_max)
        self.instance = default_owner()  # this server: host:pid:random
        self.started = 0  # worker processes started so far, restarts included
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._threads: list[threading.Thread] = []

    def owner(self, slot: int, generation: int) -> str:
        """The lease owner of ``slot``'s ``generation``-th worker process; every generation
        of a slot starts with :meth:`slot_prefix`."""
        return f"{self.slot_prefix(slot)}g{generation}"

    def slot_prefix(self, slot: int) -> str:
        return f"{self.instance}/fold-{slot}/"

    def start(self) -> None:
        for n in range(self.processes):
            thread = threading.Thread(target=self._keep, args=(n,), daemon=True,
                                      name=f"contextfold-fold-supervisor-{n}")
            thread.start()
            self._threads.append(thread)

    def pids(self) -> list[int]:
        with self._lock:
            return [c.pid for c in self._children.values() if c.poll() is None]

    def _spawn(self, n: int, generation: int) -> subprocess.Popen[bytes] | None:
        env = {**os.environ, "CONTEXTFOLD_SERVER_STORE": self.store_url,
               PARENT_ENV: str(os.getpid()), "CONTEXTFOLD_FOLD_LOG_LEVEL": self.log_level,
               OWNER_ENV: self.owner(n, generation), WATCH_ENV: "1" if n == 0 else "0"}
        env.pop("CONTEXTFOLD_SERVER_CONFIG", None)
        env.pop(TAKEOVER_ENV, None)
        if generation > 1:  # its predecessors were reaped: take their leases over
            env[TAKEOVER_ENV] = self.slot_prefix(n)
        if self.config_path is not None:
            env["CONTEXTFOLD_SERVER_CONFIG"] = self.config_path
        with self._lock:
            if self._stopping.is_set():
                return None
            child = subprocess.Popen(
                [sys.executable, "-m", "contextfold.server.fold_workers"],
                env=env, stdin=subprocess.DEVNULL,
                preexec_fn=_background_child if os.name == "posix" else None,
            )
            self._children[n] = child
            self.started += 1
        return child

    def _keep(self, n: int) -> None:
        pause, quick_exits, generation = self.restart_pause, 0, 0
        while not self._stopping.is_set():
            generation += 1
            began = time.monotonic()
            child = self._spawn(n, generation)
            if child is None:
                return
            code = child.wait()  # reaped: from here on it is surely dead
            if self._stopping.is_set():
                return
            ran = time.monotonic() - began
            if ran > STABLE_SECONDS:
                pause, quick_exits = self.restart_pause, 0
            quick_exits += ran <= STABLE_SECONDS
            log.warning("fold worker %d (pid %d, %s) exited with %s after %.1fs; starting "
                        "it again in %.1fs, taking over its leases", n, child.pid,
                        self.owner(n, generation), _exit_name(code), ran, pause)
            if quick_exits >= 3:
                log.error("fold worker %d keeps failing: %d exits in a row within %.0fs of "
                          "starting (its log is above); retrying every %.1fs at most",
                          n, quick_exits, STABLE_SECONDS, self.restart_pause_max)
            if self._stopping.wait(pause):
                return
            pause = min(self.restart_pause_max, max(pause * 2, 0.1))

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


def _exit_name(code: int) -> str:
    """``SIGKILL`` for a process killed by a signal, else the exit status."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-code).name
    return str(code)


def _background_child() -> None:  # pragma: no cover - runs in the child before exec
    """POSIX, in the worker before exec: a process group of its own, so a terminal's
    Ctrl-C is the server's to handle — but the server's session, so its ``nice`` ranks it
    below the server. (In a session of its own, Linux's autogroup scheduling would give
    the worker as much CPU as the server's whole session, whatever its nice value.) It
    writes its log to the server's terminal even with ``stty tostop``. Linux: SIGTERM when
    the thread that started it dies (the server)."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def lower_priority(nice: int, *, idle: bool) -> None:
    """Requests first: this process only ever runs background work. ``nice`` ranks it
    below the server; ``idle`` (Linux's ``SCHED_IDLE``) gives it only CPU time no other
    process wants, so on busy cores a fold waits instead of taking a turn from a request.
    Called before any thread starts: the summarizer's and the store's threads inherit it.
    Where the platform has neither, nothing changes."""
    if nice and hasattr(os, "nice"):
        os.nice(nice)
    if idle and hasattr(os, "SCHED_IDLE"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError as exc:  # e.g. a container's seccomp policy: nice still holds
            log.warning("fold worker: SCHED_IDLE not available (%s); running at nice %d",
                        exc, nice)


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
    lower_priority(workers.nice, idle=workers.idle)

    def make_worker(
        memory: AsyncMemory, memory_for: Callable[[str], Awaitable[AsyncMemory]]
    ) -> Worker:
        return Worker(memory, owner=os.environ.get(OWNER_ENV) or None,
                      concurrency=workers.concurrency, lease_seconds=workers.lease_seconds,
                      poll_interval=workers.poll_interval, memory_for=memory_for,
                      takeover=os.environ.get(TAKEOVER_ENV) or None)

    overdue = workers.overdue_after_leases * workers.lease_seconds
    asyncio.run(serve_folds(config, url, make_worker,
                            watch=lambda w: _watch_parent(w, parent),
                            overdue_seconds=overdue if os.environ.get(WATCH_ENV) == "1" else 0))


if __name__ == "__main__":
    main()
