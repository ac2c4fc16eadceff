"""Memory cells for simulation characters: K verbatim memories, newest first, plus a summary.

A world advances in ticks; each tick may give each character one new memory text.
:class:`MemoryCells` keeps one session per character in any store, with the
:class:`~contextfold.policy.FixedCells` policy, and per tick:

* appends every new memory (one transaction per character, so it is durable at once);
* folds every character that now holds more than ``k`` memories — old summary + oldest
  cell → new summary — in one :meth:`~contextfold.memory.AsyncMemory.fold_many` batch with
  bounded concurrency, ledger key ``memory:{character_id}``. A character with fewer than
  ``k`` cells just gains the cell: no model call. Nobody full, no model call at all.

Contract that is easy to break: a character whose fold fails keeps its memory exactly as it
was. Its cells are the *oldest* ``k`` live messages of its session; the new memory waits
behind them as *pending* (stored, so a restart does not lose it), is not a cell yet, and is
folded in at the next tick — together with that tick's memory, in one model call. The
failure is logged with the character id and the error class, recorded in the ledger, and
marked due in the store (so a fresh process, or a :class:`~contextfold.worker.Worker`,
knows to retry); the tick itself still succeeds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .engine import AsyncMemory, utcnow
from .errors import ConfigError, ContextFoldError
from .messages import Message, check_text
from .outcomes import BatchResult, FoldOutcome
from .policy import FixedCells
from .stores.base import Store
from .summarizers.base import Summarizer
from .summarizers.metadata import WithMetadata
from .tokens import TokenCounter

__all__ = ["CharacterMemory", "MemoryCells", "TickResult"]

log = logging.getLogger("contextfold.cells")

#: The longest memory text one cell takes, in characters.
MAX_MEMORY_CHARS = 100_000


@dataclass(frozen=True)
class CharacterMemory:
    """What a character remembers: ``cells`` newest first (at most ``k``) and ``summary``
    ("" before the first fold). ``pending`` are memories, oldest first, still waiting for
    a fold that failed; they are stored but not yet part of the memory."""

    character_id: str
    cells: tuple[str, ...]
    summary: str
    pending: tuple[str, ...] = ()


@dataclass(frozen=True)
class TickResult:
    """What one tick did. ``added``: characters given a new memory; ``folded``: characters
    whose oldest cell went into the summary; ``failed``: character → error class of a fold
    that failed (memory unchanged, retried next tick). ``batch`` is the fold batch (None
    when nobody needed a fold: no model call was made)."""

    added: tuple[str, ...]
    folded: tuple[str, ...]
    failed: Mapping[str, str]
    batch: BatchResult | None

    @property
    def requests(self) -> int:
        """Summarizer requests made this tick."""
        return self.batch.requests if self.batch else 0

    @property
    def input_tokens(self) -> int:
        return self.batch.input_tokens if self.batch else 0

    @property
    def output_tokens(self) -> int:
        return self.batch.output_tokens if self.batch else 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


Names = Mapping[str, str] | Callable[[str], "str | None"]


class MemoryCells:
    """``k`` memory cells plus a summary per character, folded in batches per tick.

    ``store``: a Store or URL (default: the default SQLite file). ``summarizer``: typically
    ``LLMSummarizer(model, preset="character")``; default the offline extractive one.
    ``names``: character id → display name for the ``character`` preset (default: the id).
    ``concurrency``: summarizer calls in flight at once (``fold_many``'s bound).
    ``key_prefix``: ledger key ``prefix:id``.
    """

    def __init__(
        self,
        store: Store | str | None = None,
        *,
        k: int,
        summarizer: Summarizer | None = None,
        names: Names | None = None,
        concurrency: int = 8,
        key_prefix: str = "memory",
        tokenizer: TokenCounter | str | None = None,
        summary_max_tokens: int | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"k (memory cells per character) must be an int >= 1, got {k!r}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"concurrency must be an int >= 1, got {concurrency!r}")
        if not key_prefix or not isinstance(key_prefix, str):
            raise ConfigError(f"key_prefix must be a non-empty string, got {key_prefix!r}")
        self.k = k
        self.concurrency = concurrency
        self.key_prefix = key_prefix
        self._names = names
        wrapped = WithMetadata(summarizer, self._metadata) if summarizer is not None else None
        self.memory = AsyncMemory(
            store, summarizer=wrapped, policy=FixedCells(k), fold="manual",
            tokenizer=tokenizer, summary_max_tokens=summary_max_tokens, clock=clock,
        )
        self._pending: set[str] | None = None

    def _metadata(self, character_id: str) -> dict[str, Any]:
        names = self._names
        name = names(character_id) if callable(names) else (names or {}).get(character_id)
        return {"character": name or character_id}

    def key(self, character_id: str) -> str:
        """The ledger key of a character's folds."""
        return f"{self.key_prefix}:{character_id}"

    async def _known_pending(self) -> set[str]:
        """Characters with a memory waiting for a failed fold: from the store's due marks
        the first time (a restart keeps them), then tracked here."""
        if self._pending is None:
            store = await self.memory._ready()
            self._pending = {sid for sid, _ in await store.list_due(limit=None)}
        return self._pending

    async def tick(self, memories: Mapping[str, str]) -> TickResult:
        """Give each character in ``memories`` its new memory; fold the full ones in one
        batch; retry every character left pending by an earlier tick. Validates every
        memory before writing any. Raises only for invalid input or a failing store."""
        items: list[tuple[str, str]] = []
        for cid, text in memories.items():
            if not isinstance(cid, str) or not cid.strip():
                raise ConfigError(f"character id must be a non-empty string, got {cid!r:.60}")
            items.append((cid, check_text(text, f"memory of {cid!r}", MAX_MEMORY_CHARS)))
        pending = await self._known_pending()
        for cid, text in items:
            await self.memory.add(cid, Message(role="user", content=text))
        store = self.memory.store
        candidates = dict.fromkeys([cid for cid, _ in items] + sorted(pending))
        full: list[str] = []
        for cid in candidates:
            stats = await store.stats(cid)
            if stats is not None and stats.live_count > self.k:
                full.append(cid)
            else:
                pending.discard(cid)
        if not full:
            return TickResult(tuple(c for c, _ in items), (), {}, None)
        batch = await self.memory.fold_many(full, concurrency=self.concurrency, key=self.key)
        folded: list[str] = []
        failed: dict[str, str] = {}
        for cid, outcome in batch.outcomes.items():
            stats = await store.stats(cid)
            as_of = stats.last_seq if stats else 0
            if outcome.status == "committed" and stats is not None and stats.live_count <= self.k:
                folded.append(cid)
                pending.discard(cid)
                await store.mark_due(cid, None, as_of_seq=as_of)
                continue
            failed[cid] = _error_class(outcome)
            pending.add(cid)
            await store.mark_due(cid, self.memory.clock(), as_of_seq=as_of)
            log.warning(
                "character %s kept its memory unchanged: fold failed (%s); its new memory "
                "is kept pending and retried next tick", cid, failed[cid],
            )
        return TickResult(tuple(c for c, _ in items), tuple(folded), failed, batch)

    async def recall(self, character_id: str) -> CharacterMemory:
        """The character's cells (newest first), summary, and pending memories."""
        live = await self.memory.messages(character_id, include_folded=False)
        summary = await self.memory.summary(character_id)
        texts = [m.text for m in live]
        return CharacterMemory(
            character_id=character_id,
            cells=tuple(reversed(texts[: self.k])),
            summary=summary.text if summary else "",
            pending=tuple(texts[self.k:]),
        )

    async def close(self) -> None:
        await self.memory.close()

    async def __aenter__(self) -> MemoryCells:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _error_class(outcome: FoldOutcome) -> str:
    err = outcome.error
    if err is None:
        return "Skipped" if outcome.status == "skipped" else outcome.status.title()
    cause = err.__cause__ if isinstance(err, ContextFoldError) and err.__cause__ else err
    return type(cause).__name__
