"""The engine, :class:`AsyncMemory`: add → (policy) → fold → commit; context(); fold_many().

One step, two fronts. Every operation here is one ``async def`` step, written once.
``AsyncMemory`` awaits it on the caller's event loop. The synchronous
:class:`~contextfold.memory.Memory` drives the *same* coroutine in the caller's thread with
:func:`contextfold.inline.run_inline`: while it runs, the stores do their I/O
synchronously where it is awaited (SQLite on its connection, PostgreSQL on a synchronous
psycopg connection, the memory store never waits), so the step completes on its first
``send`` — no event loop, no thread hop per call. The only things a step awaits besides
the store are routed through :func:`contextfold.inline.run_elsewhere` (a summarizer that
does network I/O; ``fold_many``'s concurrency), which on the sync front runs them on the
``Memory``'s private loop thread: one hop per summarizer call, never per turn. So a new
step needs nothing special: await the store, and send anything else that truly waits
through ``run_elsewhere``; ``tests/test_fronts.py`` runs the steps on both fronts.

A fold reads the session and asks the policy for a span here; :mod:`contextfold.folding`
then calls the summarizer with no transaction or lock held, validates the result, and
commits summary + ledger row in one compare-and-set transaction. Any failure leaves the
session as it was and is recorded in the ledger; the caller gets a :class:`FoldOutcome`
(or the error, with ``raise_errors``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from functools import partial
from typing import Any, Literal, TypeVar

from .batch import fold_in_waves
from .budget import check_budget, policy_keep_last
from .context import Context, summary_overhead
from .errors import ConfigError
from .exclusive import fold_exclusively
from .fold_planning import due_at, expected_summary_tokens, plan_fold, wants_fold, with_reserved
from .folding import refold_over_budget, run_fold
from .inline import inline, run_elsewhere
from .masking import Masking
from .messages import (
    DEFAULT_MAX_MESSAGE_CHARS,
    Message,
    StoredMessage,
    check_text,
    coerce_message,
    make_stored,
    stamp_batch,
)
from .outcomes import (
    AddResult,
    BatchResult,
    FoldOutcome,
    Usage,
    error_text,
)
from .policy import Policy, SessionStats, TokenBudget
from .privacy import Redactor
from .privacy.guard import PrivacyGuard
from .recall import Recall, recall_into
from .search_terms import search_terms
from .stores import open_store
from .stores.base import (
    Lease,
    LedgerEntry,
    PreparedMessage,
    SearchHit,
    Snapshot,
    Store,
    Summary,
    appends_due,
)
from .summarizers.base import Summarizer, SummaryRequest, SummaryResult
from .tokens import TokenCounter, count_message, count_tools, get_counter
from .view_cache import ViewCache

__all__ = ["AsyncMemory", "MessageLike", "error_text", "utcnow"]

log = logging.getLogger("contextfold")
T = TypeVar("T")
FoldMode = Literal["inline", "manual", "deferred"]
MessageLike = Message | Mapping[str, Any]

DEFAULT_SUMMARY_MAX_TOKENS = 1024


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


_CHECKED_IDS: dict[str, None] = {}  # session ids found valid (every call checks one)


def _check_session_id(session_id: object) -> str:
    if type(session_id) is str and session_id in _CHECKED_IDS:
        return session_id
    if not isinstance(session_id, str) or not session_id.strip():
        raise ConfigError(f"session_id must be a non-empty string, got {session_id!r:.60}")
    check_text(session_id, "session_id", 256)
    if len(_CHECKED_IDS) >= 4096:
        _CHECKED_IDS.clear()
    _CHECKED_IDS[session_id] = None
    return session_id


async def _call_summarizer(summarizer: Summarizer, request: SummaryRequest) -> SummaryResult:
    return await summarizer.summarize(request)


class AsyncMemory:
    """Bounded conversation memory, async.

    ``store``: a Store, a URL (``sqlite:///path.db``, ``memory://``) or None for the
    default SQLite file. ``summarizer``: default the offline ``ExtractiveSummarizer``.
    ``policy``: default ``TokenBudget(4000)``. ``fold``: ``"inline"`` folds during
    ``add`` when the policy fires; ``"manual"`` leaves it to ``fold``/``fold_many``;
    ``"deferred"`` only marks the session due in the store, for workers
    (:mod:`contextfold.worker`) to fold.
    ``raise_errors``: raise ``SummarizationError``/``ConflictError`` instead of returning
    a failed outcome.
    PII (:mod:`contextfold.privacy`): ``redactor`` (default ``Redactor()``; ``False``
    switches the optional points off) replaces personal data with placeholders stable per
    session: in what the summarizer receives (``redact_summarizer_input``, default on for
    summarizers that may send text to a provider), in the summary before it is stored
    (``redact_summary``, default on), in messages before they are stored
    (``redact_messages``, default off); ledger error text always. ``reversible=True`` keeps
    placeholder → value in the store (deleted with the session) for :meth:`restore`.
    ``restore_context`` (default: on when messages are stored unredacted and kept; refused
    with ``redact_messages``) shows the summary in :meth:`context` with its placeholders'
    values, counted at that size (:mod:`contextfold.privacy.restore_view`); the stored
    summary and the summarizer's input stay redacted.
    ``fold_lease_seconds``: a fold (inline, ``fold``, ``fold_many``) first takes this
    session's short lease, the one workers use, so processes sharing a store never fold
    one session at once: the second gets a ``skipped`` outcome. A process killed mid-fold
    holds it until it expires (the view still keeps to the budget). 0 switches it off.
    ``masking`` (a :class:`~contextfold.masking.Masking`, or ``True`` for the defaults):
    tool results older than the newest few are shown in the context as compact stand-ins,
    and the policy sees the live messages at that size, so folding runs only when masking
    is not enough (the ``agent`` preset, :class:`~contextfold.settings.AgentSettings`,
    turns it on).
    ``locales`` picks the national detectors of the default redactor (``["tr", "de"]``).
    ``max_tokens``: the context budget (default: the policy's ``max_tokens``, if any):
    ``context()``'s default, and a hard fold trigger whatever the policy — a session whose
    context would not fit it whole is folded (oldest first, ``keep_last`` kept) rather
    than shown trimmed. A ``MessageCount`` whose ``min_tokens`` could never be exceeded
    within it is a ``ConfigError``.
    ``recall`` (a :class:`~contextfold.recall.Recall`, or ``True`` for the defaults): the
    context brings back exact folded turns that match the newest user message (or the
    ``query`` given to :meth:`context`) in a labelled block within a share of the budget;
    a ``TokenBudget`` policy then folds at ``1 - share`` of its budget to leave it room
    (with masking, agents: the block takes only the room the masked view leaves).
    """

    def __init__(
        self,
        store: Store | str | None = None,
        *,
        summarizer: Summarizer | None = None,
        policy: Policy | None = None,
        tokenizer: TokenCounter | str | None = None,
        system: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        fold: FoldMode = "inline",
        summary_max_tokens: int | None = None,
        max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
        raise_errors: bool = False,
        clock: Callable[[], datetime] = utcnow,
        redactor: Redactor | bool | None = None,
        redact_summarizer_input: bool | None = None,
        redact_summary: bool = True,
        redact_messages: bool = False,
        reversible: bool = False,
        fold_lease_seconds: float = 60.0,
        masking: Masking | bool | None = None,
        locales: Sequence[str] | None = None,
        max_tokens: int | None = None,
        recall: Recall | bool | None = None,
        restore_context: bool | None = None,
    ) -> None:
        if fold not in ("inline", "manual", "deferred"):
            raise ConfigError(f"fold must be 'inline', 'manual' or 'deferred', got {fold!r}")
        if not isinstance(max_message_chars, int) or max_message_chars < 1:
            raise ConfigError(
                f"max_message_chars must be a positive int, got {max_message_chars!r}"
            )
        self.store: Store = open_store(store)
        self.counter = get_counter(tokenizer)
        self.policy: Policy = policy if policy is not None else TokenBudget(4000)
        given = max_tokens
        if max_tokens is None:
            own = getattr(self.policy, "max_tokens", None)
            max_tokens = own if isinstance(own, int) and not isinstance(own, bool) else None
        elif isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 16:
            raise ConfigError(f"max_tokens must be an integer >= 16, got {max_tokens!r}")
        check_budget(self.policy, max_tokens)
        self.max_tokens = max_tokens
        self._keep_last = policy_keep_last(self.policy)
        self.recall = Recall.coerce(recall)
        if self.recall is not None and not masking:  # (before the summary cap is derived)
            self.policy = self.recall.fold_policy(self.policy)  # leave the block its room
        if summarizer is None:
            from .summarizers.extractive import ExtractiveSummarizer

            summarizer = ExtractiveSummarizer()
        self.summarizer = summarizer
        self.privacy = PrivacyGuard.configure(
            redactor=redactor,
            summarizer=summarizer,
            store=self.store,
            redact_summarizer_input=redact_summarizer_input,
            redact_summary=redact_summary,
            redact_messages=redact_messages,
            reversible=reversible,
            locales=locales,
            restore_context=restore_context,
        )
        self.system = system
        self.tools = list(tools) if tools else None
        self.fold_mode: FoldMode = fold
        cap = summary_max_tokens or getattr(self.policy, "summary_max_tokens", None)
        if cap is None and given is not None:  # a budget given, no cap: room verbatim
            cap = min(DEFAULT_SUMMARY_MAX_TOKENS, max(16, given * 3 // 5))
        self.summary_max_tokens: int = cap or DEFAULT_SUMMARY_MAX_TOKENS
        if given is not None and self.summary_max_tokens >= given:
            raise ConfigError(
                f"summary_max_tokens ({self.summary_max_tokens}) must be below max_tokens "
                f"({given}), or no summary fits the context"
            )
        self._summary_overhead = summary_overhead(self.counter)
        if self.summary_max_tokens <= self._summary_overhead + 8:
            raise ConfigError(f"summary_max_tokens {self.summary_max_tokens} is too small")
        self._restorer = self.privacy.summary_restorer(self.counter, self.summary_max_tokens)
        self.max_message_chars = max_message_chars
        self.raise_errors = raise_errors
        self.clock = clock
        self._reserved = self._fixed_tokens(system, tools)
        self._tools_counted: tuple[object, int] | None = None
        # agent view: observation masking and the per-session incremental view
        if masking is not None and not isinstance(masking, (bool, Masking)):
            raise ConfigError(f"masking must be a Masking, True/False or None, got {masking!r}")
        self.masking: Masking | None = Masking() if masking is True else (masking or None)
        self._views = ViewCache(self.counter, self.masking)
        # deferred folds: the due mark is written in the append's own transaction (one
        # write, not two) — unless masking needs the view with the new messages first,
        # or the store's append takes no due check
        self._due_in_append = self.masking is None and appends_due(self.store)
        self._inflight: set[str] = set()
        if isinstance(fold_lease_seconds, bool) or not fold_lease_seconds >= 0:
            raise ConfigError(f"fold_lease_seconds must be >= 0, got {fold_lease_seconds!r}")
        self.fold_lease_seconds = float(fold_lease_seconds)
        self._owner = f"fold:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._lease_taken: dict[str, float] = {}
        self._recent_summaries: deque[int] = deque(maxlen=8)  # tokens of the last folds
        self._setup_done = False
        self._setup_lock = asyncio.Lock()
        self._setup_thread_lock = threading.Lock()  # the sync front's steps

    def _fixed_tokens(self, system: str | None, tools: Sequence[Mapping[str, Any]] | None) -> int:
        fixed = count_tools(self.counter, tools)
        if system:
            fixed += count_message(self.counter, Message(role="system", content=system))
        return fixed

    async def _ready(self) -> Store:
        if not self._setup_done:
            if inline():
                with self._setup_thread_lock:  # an inline step never suspends under it
                    if not self._setup_done:
                        await self.store.setup()
                        self._setup_done = True
            else:
                async with self._setup_lock:
                    if not self._setup_done:
                        await self.store.setup()
                        self._setup_done = True
        return self.store

    async def _summarize(self, request: SummaryRequest) -> SummaryResult:
        """The summarizer's call. A summarizer that declares ``runs_inline = True`` (it
        never waits on I/O, like the extractive one) runs right here on either front; any
        other goes through :func:`run_elsewhere` (the sync front's loop thread)."""
        if getattr(self.summarizer, "runs_inline", False) is True:
            return await self.summarizer.summarize(request)
        return await run_elsewhere(_call_summarizer(self.summarizer, request))

    # -- writing ---------------------------------------------------------------------------

    def prepare(
        self,
        messages: Iterable[MessageLike],
        session_id: str | None = None,
        *,
        now: datetime | None = None,
    ) -> list[PreparedMessage]:
        """Validate and timestamp messages (no I/O): one without a timestamp takes its
        neighbour's in the batch, else ``now``; each is counted when a store first
        needs its tokens (a duplicate by client id never is). Raises ``ValidationError``.
        With ``session_id`` and ``redact_messages``, personal data is redacted first."""
        if now is None:
            now = self.clock()
        redact = session_id is not None and self.privacy.messages
        cap = self.max_message_chars
        counter = self.counter
        out: list[PreparedMessage] = []
        batch = [coerce_message(raw) for raw in messages]  # valid text by construction
        for msg in stamp_batch(batch, now):  # untimed ones take a neighbour's time
            if redact:
                assert session_id is not None
                msg = self.privacy.message(msg, session_id)
            text = msg.text
            if len(text) > cap:
                check_text(text, f"{msg.role} message content", cap)
            out.append(PreparedMessage(msg, counter=counter))
        return out

    async def add(self, session_id: str, *messages: MessageLike) -> AddResult:
        """Append messages (atomically, all or none); fold inline if the policy says so."""
        sid = _check_session_id(session_id)
        privacy = self.privacy
        if privacy.messages and privacy.vault is not None:
            await self._ready()
            await privacy.begin(sid)
        now = self.clock()
        items = self.prepare(messages, sid, now=now)
        if not items:
            return AddResult(())
        store = self.store if self._setup_done else await self._ready()
        if privacy.vault is not None:
            await privacy.end(sid)  # reversible mode: mapping before the messages using it
        if self.fold_mode == "deferred" and self._due_in_append:
            result = await store.append(sid, items, now, due=self.due_at)
        else:
            result = await store.append(sid, items, now)
        if not result.duplicates:  # agent view: take the new messages in, O(new)
            self._views.extend(sid, [make_stored(q, p.message, p.tokens, False)
                                     for q, p in zip(result.seqs, items, strict=True)])
        outcome = None
        if self.fold_mode == "inline":
            if self._wants_fold(result.stats, now):
                outcome = await self.fold(sid)
        elif self.fold_mode == "deferred" and not self._due_in_append:
            due = self.due_at(result.stats)
            if due is not None:
                await store.mark_due(sid, due, as_of_seq=result.stats.last_seq)
        return AddResult(result.seqs, outcome, result.duplicates, result.stats)

    async def record_usage(self, session_id: str, input_tokens: int) -> FoldOutcome | None:
        """Record the provider-reported input tokens of the last model call (for
        ``ReportedUsage``); folds inline if that makes the policy fire."""
        sid = _check_session_id(session_id)
        if isinstance(input_tokens, bool) or not isinstance(input_tokens, int) or input_tokens < 0:
            raise ConfigError(f"input_tokens must be a non-negative int, got {input_tokens!r}")
        store = await self._ready()
        await store.record_usage(sid, input_tokens)
        stats = await store.stats(sid)
        if self.fold_mode == "inline" and stats is not None and self._wants_fold(stats):
            return await self.fold(sid)
        if self.fold_mode == "deferred" and stats is not None and self._wants_fold(stats):
            await store.mark_due(sid, self.clock(), as_of_seq=stats.last_seq)
        return None

    def _with_reserved(self, stats: SessionStats) -> SessionStats:
        return with_reserved(self, stats)

    def expected_summary_tokens(self, stats: SessionStats) -> int | None:
        """What the next fold's summary is expected to cost in the context (see
        :func:`~contextfold.fold_planning.expected_summary_tokens`)."""
        return expected_summary_tokens(self, stats)

    def _wants_fold(self, stats: SessionStats, now: datetime | None = None) -> bool:
        return wants_fold(self, stats, now)

    def due_at(self, stats: SessionStats) -> datetime | None:
        """When the policy next wants to fold this session: now if it fires, else its
        ``due_at(stats)`` (idle timeouts) if it has one, else None. Pure without masking
        (the append's :data:`~.stores.base.DueCheck`, run in the store's transaction)."""
        return due_at(self, stats)

    # -- folding ---------------------------------------------------------------------------

    async def fold(
        self,
        session_id: str,
        *,
        force: bool = False,
        key: str | None = None,
        lease: Lease | None = None,
    ) -> FoldOutcome:
        """Fold now if the policy says so (``force=True``: fold every live message but the
        policy's newest ``keep_last``, up to a safe cut). Returns a typed outcome; raises
        only with ``raise_errors``. ``lease`` (from ``store.claim_due``) fences the commit
        and is named in the ledger."""
        sid = _check_session_id(session_id)
        if sid in self._inflight:
            return FoldOutcome(sid, "skipped", "a fold of this session is already running")
        self._inflight.add(sid)
        try:
            if lease is not None or not self.fold_lease_seconds:
                return await self._fold(sid, force, key, lease)
            return await fold_exclusively(self, sid, force, key)
        finally:
            self._inflight.discard(sid)

    async def _fold_with(
        self,
        sid: str,
        force: bool,
        key: str | None,
        lease: Lease | None,
        snap: Snapshot,
        taken: float,
        summarized: Callable[[], None],
    ) -> FoldOutcome:
        """A ``fold_many`` fold: its wave took the lease (at ``taken``) and the snapshot;
        ``summarized`` frees its batch slot once the summarizer has answered."""
        if sid in self._inflight:
            return FoldOutcome(sid, "skipped", "a fold of this session is already running")
        self._inflight.add(sid)
        if lease is not None:
            self._lease_taken[sid] = taken
        try:
            return await self._fold(sid, force, key, lease, snap, summarized)
        finally:
            self._inflight.discard(sid)
            self._lease_taken.pop(sid, None)

    async def _fold(
        self,
        sid: str,
        force: bool,
        key: str | None,
        lease: Lease | None,
        snap: Snapshot | None = None,
        summarized: Callable[[], None] | None = None,
    ) -> FoldOutcome:
        store = await self._ready()
        planned = await plan_fold(self, store, sid, force, snap)
        if planned is None:
            return FoldOutcome(sid, "skipped", "policy did not fire")
        outcome = await run_fold(self, store, sid, *planned, key, lease, summarized)
        return await refold_over_budget(self, store, sid, outcome, lease)

    async def fold_many(
        self,
        session_ids: Iterable[str],
        *,
        concurrency: int = 8,
        force: bool = False,
        key: Callable[[str], str] | None = None,
    ) -> BatchResult:
        """Fold many sessions with at most ``concurrency`` summarizer calls in flight (a
        fold's commit runs after its slot is freed). One session's
        failure never affects another's; each gets its own outcome. Sessions are taken in
        waves of ``concurrency``: one store call leases a wave, one reads its snapshots,
        one releases it (:mod:`contextfold.batch`)."""
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"concurrency must be an int >= 1, got {concurrency!r}")
        sids = list(dict.fromkeys(_check_session_id(s) for s in session_ids))
        return await fold_in_waves(self, sids, concurrency, force, key)

    # -- reading ---------------------------------------------------------------------------

    async def context(
        self,
        session_id: str,
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        query: str | None = None,
    ) -> Context:
        """The provider-ready context, never over ``max_tokens`` (default: the policy's
        budget when it has one). ``system``/``tools`` default to the Memory's. ``query``:
        recall folded turns matching it (with ``recall`` on and no query, the newest user
        message is the query; see :mod:`contextfold.recall`)."""
        sid = _check_session_id(session_id)
        budget = max_tokens if max_tokens is not None else self.max_tokens
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
        ):
            raise ConfigError(f"max_tokens must be a positive int, got {budget!r}")
        store = self.store if self._setup_done else await self._ready()
        snap = await store.snapshot(sid)
        summary = snap.summary if snap else None
        build = partial(
            self._views.build,
            sid,
            snap.live if snap else [],
            system=system if system is not None else self.system,
            budget=budget,
            reserved_tokens=self._tool_tokens(self.tools if tools is None else tools),
        )
        ctx = await self._summary_view(sid, summary, build)
        if summary is not None:
            ctx = replace(ctx, summary=summary)
        if snap is None or not snap.stats.through_seq or (
                self.recall is None and query is None):
            return ctx  # nothing folded, or recall off: the plain context
        return await recall_into(
            store, sid, ctx, snap.live, options=self.recall or Recall(), counter=self.counter,
            query=query, agent=self.masking is not None,
            summary_text=summary.text if summary else None)

    async def _summary_view(
        self, sid: str, summary: Summary | None, build: Callable[..., Context]
    ) -> Context:
        """``build(summary_text=…, summary_tokens=…)`` with the summary as the context shows
        it: restored (:mod:`contextfold.privacy.restore_view`) or as stored."""
        if summary is None:
            return build(summary_text=None, summary_tokens=0)
        if self._restorer is not None:
            return await self._restorer.context(sid, summary, build)
        return build(summary_text=summary.text, summary_tokens=summary.tokens)

    def _tool_tokens(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        """What ``tools`` cost, counted once per tools object (not on every turn)."""
        hit = self._tools_counted
        if hit is None or hit[0] is not tools:
            hit = self._tools_counted = (tools, count_tools(self.counter, tools))
        return hit[1]

    async def summary(self, session_id: str) -> Summary | None:
        return await (await self._ready()).summary(_check_session_id(session_id))

    async def messages(
        self, session_id: str, *, include_folded: bool = True
    ) -> list[StoredMessage]:
        return await (await self._ready()).messages(
            _check_session_id(session_id), include_folded=include_folded
        )

    async def search(
        self,
        session_id: str,
        query: str | Sequence[str],
        *,
        limit: int = 20,
        folded: bool | None = None,
        min_matched: int = 1,
    ) -> list[SearchHit]:
        """Full-text search of the session's stored messages, best first. ``query``: text
        (its words, stop words dropped: :func:`~contextfold.search_terms.search_terms`) or
        the terms themselves; any of them matches. ``folded``: only folded (True) or live
        (False) messages; ``min_matched``: only messages with that many of the terms.
        What the store holds is what is found: redacted text where
        messages are redacted, nothing that ``delete`` retention removed."""
        terms = search_terms(query) if isinstance(query, str) else list(query)
        store = await self._ready()
        return await store.search(
            _check_session_id(session_id), terms, limit=limit, folded=folded,
            min_matched=min_matched,
        )

    async def stats(self, session_id: str) -> SessionStats | None:
        return await (await self._ready()).stats(_check_session_id(session_id))

    async def sessions(self, *, limit: int | None = 100, offset: int = 0) -> list[SessionStats]:
        return await (await self._ready()).list_sessions(limit=limit, offset=offset)

    async def ledger(
        self, session_id: str | None = None, *, limit: int | None = 100
    ) -> list[LedgerEntry]:
        sid = None if session_id is None else _check_session_id(session_id)
        return await (await self._ready()).ledger(sid, limit=limit)

    async def usage(self, session_id: str | None = None) -> Usage:
        """Summarizer usage totals (all sessions when ``session_id`` is None)."""
        return Usage.from_ledger(await self.ledger(session_id, limit=None))

    async def delete(self, session_id: str) -> bool:
        """Delete a session: messages, summary, ledger rows and its PII vault."""
        sid = _check_session_id(session_id)
        deleted = await (await self._ready()).delete(sid)
        self.privacy.forget(sid)
        self._views.forget(sid)
        return deleted

    async def restore(self, session_id: str, text: str) -> str:
        """``text`` (a summary, a message) with this session's placeholders replaced by the
        original values; needs ``reversible=True``. Unknown placeholders are kept."""
        sid = _check_session_id(session_id)
        await self._ready()
        return await self.privacy.restore(sid, text)

    async def close(self) -> None:
        await self.store.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
