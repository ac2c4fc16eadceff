"""The store reads of one recall (:func:`contextfold.recall.recall_into`): its searches and
the fetches of the turns around their hits.

A store with ``search_turns`` (:class:`~.stores.base.SearchesTurns`: PostgreSQL) reads the
messages around a search's hits in the search's own statement — each a round trip saved
— and a fetch of seqs it read is answered from them; any other store is searched and
fetched from as the calls say. Either way a fetch returns what ``Store.fetch`` would
(the messages stored with those seqs, seq order), so recall chooses the same turns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .messages import StoredMessage
from .stores.search import SearchHit, SearchTurns

if TYPE_CHECKING:
    from .stores.base import Store

__all__ = ["RecallReads"]


class RecallReads:
    """Searches (of folded messages, no snippets) and fetches of one session for one
    recall; ``reach`` of :meth:`search`: how far around each hit the fetches that follow
    it are likely to reach (what a store with ``search_turns`` reads with the hits, see
    :class:`~.stores.search.SearchTurns`; a fetch beyond it goes to the store)."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._search_turns = getattr(store, "search_turns", None)
        self._read: list[SearchTurns] = []

    async def search(self, terms: Sequence[str], *, limit: int, min_matched: int,
                     reach: Sequence[tuple[int, int]]) -> list[SearchHit]:
        """The store's hits of ``terms`` among the folded messages, best first."""
        if self._search_turns is None:
            return await self.store.search(self.session_id, terms, limit=limit, folded=True,
                                           min_matched=min_matched, snippets=False)
        read: SearchTurns = await self._search_turns(
            self.session_id, terms, limit=limit, folded=True, min_matched=min_matched,
            reach=reach)
        self._read.append(read)
        return read.hits

    async def fetch(self, seqs: Sequence[int]) -> list[StoredMessage]:
        """``Store.fetch`` of ``seqs``: from what the searches read where they reach, the
        rest from the store."""
        if not self._read:
            return await self.store.fetch(self.session_id, seqs) if seqs else []
        out: list[StoredMessage] = []
        missing: list[int] = []
        for seq in sorted(set(seqs)):
            for read in self._read:
                if read.covers(seq):
                    item = read.get(seq)
                    if item is not None:
                        out.append(item)
                    break
            else:
                missing.append(seq)
        if missing:
            out += await self.store.fetch(self.session_id, missing)
            out.sort(key=lambda m: m.seq)
        return out
