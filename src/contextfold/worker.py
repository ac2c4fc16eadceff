"""Fold workers: take due sessions off the request path.

With ``Memory(store=…, fold="deferred")`` an ``add`` only appends and marks the session
due. A :class:`Worker` claims due sessions from the store under a lease (owner + expiry),
folds them through the engine with at most ``concurrency`` folds in flight, commits each
fold fenced by its lease, and releases the lease with the session's next due time. Any
number of workers on any number of machines can share one PostgreSQL store (claims use
``FOR UPDATE SKIP LOCKED``); against SQLite the same worker serves one machine.

Guarantees, from the store contract:

* a session is leased to at most one worker at a time, and a fold commits only while its
  lease is current and unexpired — a worker that stalled past its lease (or was killed)
  cannot commit over a newer fold; a running fold renews its lease every third of
  ``lease_seconds``, so only a dead or stalled worker loses one;
* a killed worker's sessions are claimed again once its leases expire — or at once by a
  worker started with ``takeover`` naming it (a supervisor's replacement for a worker it
  saw exit, see :mod:`contextfold.server.fold_workers`): the dead owner's leases are
  revoked before the first claim, which also fences off any fold of theirs still running;
* a failed fold changes nothing and is retried after ``retry_after`` seconds (so is a
  fold fenced off because its worker stalled past its lease, and one that raised an
  unexpected exception: logged with its traceback, its lease released at once).

On :meth:`Worker.stop` (SIGTERM/SIGINT under :func:`run_worker`) a worker stops claiming,
lets in-flight folds finish for up to ``grace_seconds``, then cancels the rest and
releases their leases so another worker can take them at once. A second signal skips
the grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from .errors import ConfigError, ContextFoldError
from .memory import AsyncMemory, FoldOutcome
from .stores.base import Lease

__all__ = ["Worker", "WorkerStats", "default_owner", "run_worker"]

log = logging.getLogger("contextfold.worker")


def default_owner() -> str:
    """``host:pid:random`` — unique per worker, readable in the ledger."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class WorkerStats:
    """What a worker did: leases claimed and how their folds ended."""

    claimed: int = 0
    committed: int = 0
    skipped: int = 0
    cleared: int = 0
    failed: int = 0
    conflicts: int = 0
    released: int = 0
    lost: int = 0
    cancelled: int = 0
    taken_over: int = 0


class Worker:
    """Claims due sessions of ``memory.store`` and folds them with ``memory``'s policy and
    summarizer. Use one ``AsyncMemory`` per worker (its event loop runs the folds).

    ``memory_for``: when sessions fold with settings of their own (the HTTP service's
    per-session settings), an async function giving the ``AsyncMemory`` for a session id —
    one on the same store — used for that session's fold and its next due time instead of
    ``memory``.

    ``lease_seconds`` is how long the sessions of a worker that died or stalled stay
    blocked; running folds renew their leases, so it need not exceed the longest fold.

    ``takeover``: an owner prefix naming workers known to be dead (every earlier owner of
    a supervisor's slot); before its first claim the worker revokes their leases
    (:meth:`~contextfold.stores.base.Store.revoke_leases`, fenced: a paused predecessor
    that wakes up cannot commit) instead of waiting ``lease_seconds`` for them to expire.
    """

    def __init__(
        self,
        memory: AsyncMemory,
        *,
        owner: str | None = None,
        concurrency: int = 8,
        lease_seconds: float = 60.0,
        poll_interval: float = 1.0,
        retry_after: float = 30.0,
        grace_seconds: float = 20.0,
        memory_for: Callable[[str], Awaitable[AsyncMemory]] | None = None,
        takeover: str | None = None,
    ) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"concurrency must be an int >= 1, got {concurrency!r}")
        for name, value in (("lease_seconds", lease_seconds), ("poll_interval", poll_interval)):
            if not value > 0:
                raise ConfigError(f"{name} must be > 0, got {value!r}")
        if retry_after < 0 or grace_seconds < 0:
            raise ConfigError("retry_after and grace_seconds must be >= 0")
        self.memory = memory
        self.memory_for = memory_for
        self.owner = owner or default_owner()
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.retry_after = retry_after
        self.grace_seconds = grace_seconds
        self.takeover = takeover or None
        self.stats = WorkerStats()
        self._stopping = asyncio.Event()
        self._hurry = asyncio.Event()

    def __repr__(self) -> str:
        return f"Worker(owner={self.owner!r}, concurrency={self.concurrency})"

    def stop(self) -> None:
        """Stop claiming and drain gracefully; a second call cancels in-flight folds now."""
        if self._stopping.is_set():
            self._hurry.set()
        self._stopping.set()

    async def run(self, *, once: bool = False) -> WorkerStats:
        """Work until :meth:`stop` (or, with ``once``, until nothing is due and every
        claimed fold has finished). Returns the totals."""
        store = await self.memory._ready()
        tasks: set[asyncio.Task[None]] = set()
        wake = asyncio.Event()

        def finished(task: asyncio.Task[None]) -> None:
            tasks.discard(task)
            wake.set()

        log.info("worker %s started (concurrency %d)", self.owner, self.concurrency)
        takeover = self.takeover
        try:
            while not self._stopping.is_set():
                if takeover is not None and await self._take_over(takeover):
                    takeover = None
                free = self.concurrency - len(tasks)
                leases: list[Lease] = []
                if free > 0:
                    try:
                        leases = await store.claim_due(
                            self.owner, limit=free, lease_seconds=self.lease_seconds)
                    except ContextFoldError as exc:
                        log.warning("worker %s could not claim: %s", self.owner, exc)
                for lease in leases:
                    self.stats.claimed += 1
                    task = asyncio.create_task(self._process(lease))
                    tasks.add(task)
                    task.add_done_callback(finished)
                if once and not leases and not tasks:
                    break
                if leases and len(leases) == free:
                    continue  # there may be more due right now
                wake.clear()
                await _first(wake, self._stopping,
                             timeout=None if once and tasks else self.poll_interval)
        finally:
            await self._drain(tasks)
        log.info("worker %s stopped: %s", self.owner, self.stats)
        return self.stats

    async def _take_over(self, prefix: str) -> bool:
        """Revoke the leases of the dead owners ``prefix`` names; False to try again."""
        try:
            revoked = await self.memory.store.revoke_leases(prefix, except_owner=self.owner)
        except ContextFoldError as exc:
            log.warning("worker %s could not take over the leases of %s* (they expire on "
                        "their own; trying again): %s", self.owner, prefix, exc)
            return False
        self.stats.taken_over += revoked
        if revoked:
            log.warning("worker %s took over %d lease(s) of its dead predecessor %s*",
                        self.owner, revoked, prefix)
        return True

    async def _drain(self, tasks: set[asyncio.Task[None]]) -> None:
        if not tasks:
            return
        pending = set(tasks)
        if not self._hurry.is_set():
            all_done = asyncio.Event()

            async def wait_all() -> None:
                await asyncio.wait(pending)  # unlike gather, never cancels them
                all_done.set()

            waiter = asyncio.create_task(wait_all())
            await _first(all_done, self._hurry, timeout=self.grace_seconds)
            waiter.cancel()
            pending = {t for t in pending if not t.done()}
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _process(self, lease: Lease) -> None:
        memory, store, sid = self.memory, self.memory.store, lease.session_id
        held = [lease]
        beat = asyncio.create_task(self._heartbeat(held))
        try:
            try:
                if self.memory_for is not None:
                    memory = await self.memory_for(sid)
                outcome = await memory.fold(sid, lease=lease)
            except ContextFoldError as exc:  # raise_errors=True, or no memory for the session
                outcome = FoldOutcome(sid, "failed", str(exc), error=exc)
            except Exception as exc:  # a bug: say so, and release the session for a retry
                log.exception("worker %s: the fold of %s raised", self.owner, sid)
                outcome = FoldOutcome(sid, "failed", f"{type(exc).__name__}: {exc}", error=exc)
        except asyncio.CancelledError:
            self.stats.cancelled += 1
            await asyncio.shield(self._release(lease, memory.clock(), None))
            raise
        finally:
            beat.cancel()
        self._count(outcome)
        try:
            stats = await store.stats(sid)
            if stats is None:  # cleared or deleted: nothing left to release
                return
            due: datetime | None
            expired = datetime.now(timezone.utc) >= held[0].expires_at
            if outcome.status == "failed" or (outcome.status == "conflict" and expired):
                if expired:
                    log.warning("fold of %s outlived its lease (process stalled for over "
                                "%gs?)", sid, self.lease_seconds)
                due = memory.clock() + timedelta(seconds=self.retry_after)
            elif outcome.status == "conflict":  # lost the compare-and-set: just try again
                due = memory.clock()
            else:
                due = memory.due_at(stats)
            await self._release(lease, due, stats.last_seq)
        except ContextFoldError as exc:
            log.warning("worker %s could not release %s (lease expires on its own): %s",
                        self.owner, sid, exc)
        except Exception:  # a bug: say so (the lease expires on its own)
            log.exception("worker %s could not release %s (lease expires on its own)",
                          self.owner, sid)

    async def _heartbeat(self, held: list[Lease]) -> None:
        """Renew the lease every third of its length while the fold runs, so a long fold
        keeps its session and only a dead or stalled worker loses it."""
        store = self.memory.store
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                renewed = await store.renew(held[0], lease_seconds=self.lease_seconds)
            except ContextFoldError as exc:
                log.warning("worker %s could not renew %s: %s", self.owner,
                            held[0].session_id, exc)
                continue
            if renewed is None:
                log.warning("worker %s lost its lease on %s; its fold will be fenced off",
                            self.owner, held[0].session_id)
                return
            held[0] = renewed

    async def _release(
        self, lease: Lease, due: datetime | None, as_of_seq: int | None
    ) -> None:
        store = self.memory.store
        try:
            if as_of_seq is None:  # cancelled: keep whatever is marked, due again now
                stats = await store.stats(lease.session_id)
                as_of_seq = stats.last_seq if stats else 0
            ok = await store.release(lease, due_at=due, as_of_seq=as_of_seq)
        except ContextFoldError as exc:
            log.warning("worker %s could not release %s: %s", self.owner, lease.session_id, exc)
            return
        if ok:
            self.stats.released += 1
        else:
            self.stats.lost += 1
            log.warning("worker %s lost its lease on %s (expired and taken over)",
                        self.owner, lease.session_id)

    def _count(self, outcome: FoldOutcome) -> None:
        field = {"committed": "committed", "skipped": "skipped", "cleared": "cleared",
                 "failed": "failed", "conflict": "conflicts"}[outcome.status]
        setattr(self.stats, field, getattr(self.stats, field) + 1)


async def _first(*events: asyncio.Event, timeout: float | None) -> None:
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def run_worker(worker: Worker, *, once: bool = False) -> WorkerStats:
    """Run ``worker`` with SIGTERM/SIGINT wired to :meth:`Worker.stop` (first: drain,
    second: cancel in-flight folds and release them)."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, worker.stop)
            installed.append(sig)
    try:
        return await worker.run(once=once)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
