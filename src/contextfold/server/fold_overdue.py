"""Sessions a fold should have shrunk by now: the fold workers' diagnostic.

A session whose policy wants a fold (its live tokens over its fold trigger) is folded by a
fold worker within a poll interval or so. One that stays over its trigger, with no fold
committed, for ``fold_workers.overdue_after_leases`` lease periods points at something
the workers do not fix by themselves — a fold failing every time, a lease no live worker
holds, a due mark that was lost. :class:`OverdueWatch` (run by one fold worker process of
each ``contextfold serve``) logs such a session once, with what the store says about it,
and logs again when a fold has caught it up.

It looks at the sessions marked due and the most recently active ones (up to ``limit`` of
each) every lease period; a session is *over* when the policy of its own settings wants a
fold now, and *stuck* when it has been over since the same summary version for longer
than ``after_seconds``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone

from ..engine import AsyncMemory
from ..errors import ContextFoldError
from ..stores.base import Store

__all__ = ["OverdueWatch"]

log = logging.getLogger("contextfold.server.folds")


class OverdueWatch:
    """Finds sessions over their fold trigger without a fold for ``after_seconds``."""

    def __init__(
        self, store: Store, memory_for: Callable[[str], Awaitable[AsyncMemory]], *,
        after_seconds: float, limit: int = 200, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.memory_for = memory_for
        self.after_seconds = after_seconds
        self.limit = limit
        self.clock = clock
        self.reported = 0  # sessions reported stuck so far
        self._since: dict[str, tuple[float, int]] = {}  # over since (clock, summary version)
        self._stuck: set[str] = set()

    async def run(self, interval: float) -> None:
        """Check every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self.check()
            except ContextFoldError as exc:
                log.warning("could not look for sessions left over their fold trigger: %s", exc)

    async def check(self) -> list[str]:
        """One look; returns the sessions newly found stuck (and logs them)."""
        now_utc = datetime.now(timezone.utc)
        due = {sid: at for sid, at in await self.store.list_due(limit=self.limit)}
        candidates = [sid for sid, at in due.items() if at <= now_utc]
        candidates += [s.session_id for s in await self.store.list_sessions(limit=self.limit)]
        over: dict[str, tuple[int, int]] = {}  # session -> (summary version, live tokens)
        for sid in dict.fromkeys(candidates):
            stats = await self.store.stats(sid)
            if stats is None:
                continue
            try:
                memory = await self.memory_for(sid)
            except ContextFoldError:
                continue  # no settings for it any more (deleted meanwhile)
            wanted = memory.due_at(stats)
            if wanted is not None and wanted <= memory.clock():
                over[sid] = (stats.summary_version, stats.live_tokens)
        now = self.clock()
        for sid in [s for s in self._since if s not in over]:
            began, _ = self._since.pop(sid)
            if sid in self._stuck:
                self._stuck.discard(sid)
                log.warning("session %s is no longer left over its fold trigger (after %.0fs)",
                            sid, now - began)
        newly = []
        for sid, (version, live) in over.items():
            began, seen = self._since.get(sid, (now, version))
            if seen != version:  # a fold committed meanwhile: it is being folded
                began = now
                if sid in self._stuck:
                    self._stuck.discard(sid)
                    log.warning("session %s was folded again (summary version %d)",
                                sid, version)
            self._since[sid] = (began, version)
            if now - began >= self.after_seconds and sid not in self._stuck:
                self._stuck.add(sid)
                newly.append(sid)
                self.reported += 1
                mark = due.get(sid)
                log.warning(
                    "session %s has been over its fold trigger for %.0fs without a fold "
                    "(live tokens %d, summary version %d, due mark %s); see its ledger",
                    sid, now - began, live, version,
                    mark.isoformat(timespec="seconds") if mark else "none",
                )
        return newly
