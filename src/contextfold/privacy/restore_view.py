"""The summary as the chat model sees it: placeholders given back their values in the view.

The summarizer may be a third-party model, so what it reads and the summary it writes are
redacted (``<EMAIL_1>``), and the summary is *stored* redacted. The chat model, though,
already reads the live messages unredacted; a later tool call that needs an attendee's
address or a customer's phone number should find it in the summary too. So
:class:`SummaryRestorer` shows the stored summary with the values of this session's
placeholders put back — in the context only (:meth:`AsyncMemory.context
<contextfold.engine.AsyncMemory.context>`), never in what is stored or summarized:

- the mapping comes from the session's vault (the store's ``pii_vault`` table, deleted
  with the session), read once per summary version, not per turn; a fold (a new version)
  re-bases it, :meth:`forget` drops it when the session is deleted or cleared;
- the summary is counted at its restored size, and the view keeps to the budget as for any
  summary; a restored summary larger than the cap plus a quarter (a pathological value)
  restores placeholders in order of first appearance while it stays within that, and
  leaves the rest as placeholders;
- values never cost the summary its place: when the restored summary is too large for the
  view to keep beside the newest messages and the stored one is not, the context shows the
  stored one (:meth:`context`). Live messages left out or cut to make room for restored
  values are not a reason to fall back: on the agent benchmark the values are worth more
  than the oldest live turns (held-out set 2 at 500 tokens: 85.3% call-argument recall
  restoring, 78.7% falling back whenever a live message would be left out or cut);
- the fold policy sees the summary at its restored size too (:meth:`adjust`), so a fold
  comes when the context the model gets exceeds the budget, not later;
- sessions with ``redact_messages=True`` never get one (the guard refuses the combination).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..bounded import LRU
from ..context import Context, render_summary
from ..policy import SessionStats, evolve
from ..stores.base import Summary
from ..tokens import TokenCounter, count_message
from .redactor import PLACEHOLDER

__all__ = ["SummaryRestorer", "restore_within"]

#: ``ViewCache.build`` with everything but the summary bound.
Build = Callable[..., Context]

#: How far above the summary cap a restored summary may grow (as a share of the cap).
OVER_CAP_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class _Shown:
    version: int
    stored: str
    stored_tokens: int
    text: str
    tokens: int


def restore_within(
    text: str, values: dict[str, str], counter: TokenCounter, limit: int
) -> tuple[str, int]:
    """``text`` with the placeholders of ``values`` replaced, and its tokens as a rendered
    summary. If restoring all of them costs more than ``limit`` tokens, placeholders are
    restored in order of first appearance while the result stays within ``limit`` (the
    others stay as they are); the stored text itself when nothing can be restored."""
    known = list(dict.fromkeys(m.group() for m in PLACEHOLDER.finditer(text)
                               if m.group() in values))
    if not known:
        return text, count_message(counter, render_summary(text))
    full = PLACEHOLDER.sub(lambda m: values.get(m.group(), m.group()), text)
    tokens = count_message(counter, render_summary(full))
    if tokens <= limit:
        return full, tokens
    chosen: dict[str, str] = {}
    best = text, count_message(counter, render_summary(text))
    for placeholder in known:
        chosen[placeholder] = values[placeholder]
        trial = PLACEHOLDER.sub(lambda m: chosen.get(m.group(), m.group()), text)
        trial_tokens = count_message(counter, render_summary(trial))
        if trial_tokens <= limit:
            best = trial, trial_tokens
        else:
            del chosen[placeholder]
    return best


class SummaryRestorer:
    """Per session, the stored summary with its placeholders restored (see the module doc).

    ``values(session_id)`` reads the session's ``{placeholder: value}`` mapping;
    ``summary_cap`` is the summary's token cap (``Memory.summary_max_tokens``).
    Thread-safe; least recently used sessions are evicted beyond ``size``.
    """

    def __init__(
        self,
        values: Callable[[str], Awaitable[dict[str, str]]],
        counter: TokenCounter,
        summary_cap: int,
        size: int = 1024,
    ) -> None:
        self._values = values
        self.counter = counter
        self.summary_cap = summary_cap
        self.size = size
        self._shown: LRU[str, _Shown] = LRU(size)
        self._lock = threading.Lock()

    def _hit(self, session_id: str, version: int, stored: str | None = None) -> _Shown | None:
        with self._lock:
            hit = self._shown.get(session_id)
            if hit is None or hit.version != version or (stored is not None
                                                          and hit.stored != stored):
                return None
            return hit

    async def shown(self, session_id: str, summary: Summary) -> tuple[str, int]:
        """(text, tokens) of ``summary`` as the context shows it."""
        hit = self._hit(session_id, summary.version, summary.text)
        if hit is None:
            hit = await self._restore(session_id, summary)
        return hit.text, hit.tokens

    async def context(self, session_id: str, summary: Summary, build: Build) -> Context:
        """``build(summary_text=…, summary_tokens=…)`` with the summary restored, unless only
        the stored one leaves room for the newest messages (see the module doc)."""
        text, tokens = await self.shown(session_id, summary)
        ctx = build(summary_text=text, summary_tokens=tokens)
        if ctx.summary_included or text == summary.text:
            return ctx
        plain = build(summary_text=summary.text, summary_tokens=summary.tokens)
        return plain if plain.summary_included else ctx

    async def _restore(self, session_id: str, summary: Summary) -> _Shown:
        text, tokens = summary.text, summary.tokens
        if "<" in text and PLACEHOLDER.search(text) is not None:
            values = await self._values(session_id)
            if values:
                limit = max(summary.tokens, self.summary_cap)
                limit += int(self.summary_cap * OVER_CAP_SHARE)
                text, tokens = restore_within(summary.text, values, self.counter, limit)
                if text == summary.text:
                    tokens = summary.tokens
        shown = _Shown(summary.version, summary.text, summary.tokens, text, tokens)
        with self._lock:
            self._shown.put(session_id, shown)
        return shown

    def adjust(self, stats: SessionStats) -> SessionStats:
        """``stats`` with ``summary_tokens`` at the restored size, when this session's
        current summary was shown restored here (else unchanged): the policy then folds
        when the context the model gets is over budget."""
        hit = self._hit(stats.session_id, stats.summary_version)
        if hit is None or hit.tokens == hit.stored_tokens or (
                stats.summary_tokens != hit.stored_tokens):
            return stats
        return evolve(stats, summary_tokens=hit.tokens)

    def forget(self, session_id: str) -> None:
        """Drop what is kept of ``session_id`` (it was deleted or cleared)."""
        with self._lock:
            self._shown.pop(session_id, None)
