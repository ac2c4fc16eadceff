"""One folder per session at a time, without workers: the fold lease.

Before it reads a session and calls the summarizer, a fold (inline during ``add``, an
explicit ``fold``) takes the session's short lease — the one fold workers use
(``Store.claim``). A second process that wants to fold the same session meanwhile gets a
``skipped`` outcome ("another process is folding this session") instead of paying for a
summarizer call that would lose the compare-and-set commit. The commit is fenced by the
lease; a lease outliving half its time (a slow summarizer) is renewed before committing,
or taken again if it lapsed unclaimed. ``fold_many`` takes a wave's leases at once
(:mod:`contextfold.batch`). ``AsyncMemory(fold_lease_seconds=0)`` switches it off.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from .errors import ConflictError, ContextFoldError
from .inline import inline
from .outcomes import FoldOutcome
from .stores.base import Lease, Store

if TYPE_CHECKING:
    from .engine import AsyncMemory

__all__ = ["fold_exclusively", "fresh_lease"]

log = logging.getLogger("contextfold")


async def fold_exclusively(
    memory: AsyncMemory, sid: str, force: bool, key: str | None
) -> FoldOutcome:
    """One folder per session without workers: take the short lease workers use
    before reading the session and calling the summarizer; if another process holds
    it, skip (its fold is under way) instead of racing it to a conflict."""
    store = await memory._ready()
    own = await store.claim(sid, memory._owner, lease_seconds=memory.fold_lease_seconds)
    if own is None:
        if await store.stats(sid) is None:
            return FoldOutcome(sid, "skipped", "policy did not fire")
        return FoldOutcome(sid, "skipped", "another process is folding this session")
    memory._lease_taken[sid] = time.monotonic()
    try:
        return await memory._fold(sid, force, key, own)
    finally:
        memory._lease_taken.pop(sid, None)
        release = store.release(own, due_at=None, as_of_seq=-1)
        try:  # best effort: an unreleased lease expires on its own
            await (release if inline() else asyncio.shield(release))
        except (ContextFoldError, asyncio.CancelledError):
            log.warning("could not release the fold lease of %s", sid)


async def fresh_lease(memory: AsyncMemory, store: Store, lease: Lease | None) -> Lease | None:
    """Before committing: renew a lease this memory took itself if half of it has
    passed (a slow summarizer), or take it again if it lapsed unclaimed."""
    taken = memory._lease_taken.get(lease.session_id) if lease is not None else None
    if lease is None or taken is None:
        return lease
    if time.monotonic() - taken < memory.fold_lease_seconds / 2:
        return lease
    renewed = await store.renew(lease, lease_seconds=memory.fold_lease_seconds)
    if renewed is None:
        renewed = await store.claim(
            lease.session_id, memory._owner, lease_seconds=memory.fold_lease_seconds
        )
    if renewed is None:
        raise ConflictError(
            f"the fold lease on session {lease.session_id!r} was taken over; fenced off"
        )
    return renewed
