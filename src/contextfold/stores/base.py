"""The storage protocol every store implements, and the records it speaks in.

A store keeps, per session: the messages (each with its ``seq`` and cached token count),
the rolling summary (``through_seq``, ``version``), running totals for O(1) policy
decisions (:class:`~contextfold.policy.SessionStats`), and the ledger of fold attempts.

Contract (checked by :mod:`contextfold.testing.conformance` on every store):

* ``append`` is atomic: it checks the sequence rules against the session's pending tool
  calls inside its write transaction and either writes every message or none. A message
  whose client ``id`` is already stored in the session is not written again; its existing
  seq is returned.
* ``commit_fold`` is one transaction guarded by compare-and-set on the summary version:
  it succeeds only if the summary is still the one the fold started from and ``lo`` is the
  first live seq; otherwise it raises ``ConflictError`` and writes nothing. Messages
  appended meanwhile (higher seqs) are untouched.
* Due sessions and leases: ``claim`` leases one named session (due or not) unless it is
  leased; ``mark_due`` records when a session next wants a fold (a
  mark computed from older stats — lower ``as_of_seq`` — never overwrites a newer one);
  ``claim_due`` leases due, unleased (or lease-expired) sessions to one owner, bumping the
  session's lease token; ``renew`` extends a current, unexpired lease (same token); a
  ``commit_fold`` carrying a lease succeeds only while that lease (owner and token) is the
  session's current, unexpired lease (fencing), else ``ConflictError``; ``revoke_leases``
  ends the leases of dead owners at once and fences them the same way.
* Driver errors are translated into ``StorageError`` with ``__cause__``.
* Invariant: live messages plus messages covered by the summary are exactly seq 1..last,
  each once (with ``delete`` retention, "covered" means seq <= ``through_seq``).
* Summary versions: ``commit_fold`` writes one :class:`SummaryVersion` row per committed
  fold in the same transaction (what the inspector diffs). The row's numbers are always
  kept; its ``text`` only when :func:`keeps_summary_text` says so — by default with
  ``archive`` retention and not with ``delete`` (privacy: no older summary outlives the
  next fold). ``delete`` removes the rows with the session.
* Search (:meth:`Store.search`) uses the database's own full-text engine over what is
  stored — redacted text where the session redacts, nothing a ``delete`` retention fold
  or a session delete removed — and matches any of the terms; see :mod:`.search` for
  what is indexed and how words are folded.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any, Literal, Protocol, runtime_checkable

from ..messages import Message, StoredMessage, check_sequence
from ..policy import SessionStats, advance
from ..tokens import TokenCounter, count_message
from .search import SearchHit, SearchTurns

__all__ = [
    "AppendResult",
    "DueCheck",
    "FoldCommit",
    "Lease",
    "LedgerEntry",
    "LiveWindow",
    "Outcome",
    "PreparedMessage",
    "Retention",
    "SearchHit",
    "SearchTurns",
    "SearchesTurns",
    "Snapshot",
    "Store",
    "Summary",
    "SummaryVersion",
    "appends_due",
    "keeps_summary_text",
    "plan_append",
]

Retention = Literal["archive", "delete"]
Outcome = Literal["committed", "failed", "conflict", "cancelled"]

#: An append's due check: given the session's stats after the append, when the session
#: next wants a fold (None: leave its due mark as it is). A store evaluates it inside the
#: append's write transaction (possibly on its database thread), so it must be pure: no
#: I/O, no awaiting, safe from any thread. What it returns is written as
#: ``mark_due(session_id, due_at, as_of_seq=stats.last_seq)`` in that same transaction;
#: if it raises, the append is rolled back and the error propagates.
DueCheck = Callable[[SessionStats], datetime | None]


class PreparedMessage:
    """A validated message with its token count, ready to append.

    Give ``tokens``, or a ``counter`` to count the message when a store first asks: a
    store asks only for the messages it writes, so an append whose client ids are stored
    already (a framework re-sending its history) counts nothing (PostgreSQL may count a
    batch of a few messages before it finds them stored)."""

    __slots__ = ("_counter", "_tokens", "message")

    def __init__(
        self, message: Message, tokens: int | None = None, *, counter: TokenCounter | None = None
    ) -> None:
        if tokens is None and counter is None:
            raise TypeError("PreparedMessage needs tokens or a counter")
        self.message = message
        self._tokens = tokens
        self._counter = counter

    @property
    def tokens(self) -> int:
        tokens = self._tokens
        if tokens is None:
            assert self._counter is not None
            tokens = self._tokens = count_message(self._counter, self.message)
        return tokens

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PreparedMessage):
            return NotImplemented
        return (self.message, self.tokens) == (other.message, other.tokens)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PreparedMessage(message={self.message!r}, tokens={self.tokens!r})"


@dataclass(frozen=True, slots=True)
class Summary:
    """The rolling summary of everything folded so far (seq 1..``through_seq``).

    ``tokens`` is what the rendered summary message costs in a context.
    """

    text: str
    through_seq: int
    version: int
    tokens: int
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SummaryVersion:
    """The summary as one committed fold left it (version 1 is the first fold).

    ``lo..through_seq`` is what that fold covered; ``at_seq`` the session's last seq when it
    committed (the fold happened after that message), ``live_tokens`` the live messages'
    tokens right after it. ``text`` is None when the store keeps no summary text history
    (see :func:`keeps_summary_text`): the numbers stay, the words do not.
    """

    session_id: str
    version: int
    lo: int
    through_seq: int
    at_seq: int
    tokens: int
    live_tokens: int
    text: str | None
    created_at: datetime | None = None


def appends_due(store: object) -> bool:
    """Whether ``store.append`` takes a ``due`` check (a store written before it was
    added to the protocol does not: the engine then marks due in a second write)."""
    append = getattr(store, "append", None)
    try:
        params = inspect.signature(append).parameters.values() if append else ()
    except (TypeError, ValueError):  # no signature to read: assume the old one
        return False
    return any(p.name == "due" or p.kind is p.VAR_KEYWORD for p in params)


def keeps_summary_text(store: object) -> bool:
    """Whether ``store`` keeps the text of older summary versions: its ``summary_history``
    if set (True/False), else only with ``archive`` retention. Read at every commit, so a
    store whose retention is changed after construction follows it."""
    explicit = getattr(store, "summary_history", None)
    if explicit is not None:
        return bool(explicit)
    return getattr(store, "retention", "archive") == "archive"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A session read in one consistent snapshot: totals, summary and live messages.
    What ``context()`` and a fold need, in one store round trip."""

    stats: SessionStats
    summary: Summary | None
    #: oldest first; read-only (the memory store hands out a window on its own list)
    live: Sequence[StoredMessage]


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Seqs given to the appended messages (in order) and the session's totals after it."""

    seqs: tuple[int, ...]
    stats: SessionStats
    duplicates: int = 0


@dataclass(frozen=True, slots=True)
class Lease:
    """A worker's claim on one due session until ``expires_at``.

    ``token`` is the session's lease epoch: every claim increments it, so a worker whose
    lease expired and was claimed again holds a stale token and cannot commit (fencing).
    """

    session_id: str
    owner: str
    token: int
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class FoldCommit:
    """A fold ready to commit: replaces summary ``expected_version`` and covers ``lo..hi``.

    With ``lease`` the commit is fenced: it succeeds only while that lease is current.
    """

    session_id: str
    expected_version: int
    lo: int
    hi: int
    text: str
    tokens: int
    lease: Lease | None = None


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One fold attempt. Holds no message content; ``error`` is a redacted one-liner."""

    session_id: str
    outcome: Outcome
    reason: str = ""
    lo: int = 0
    hi: int = 0
    messages_folded: int = 0
    tokens_folded: int = 0
    summary_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    model: str | None = None
    latency_ms: float = 0.0
    error_class: str | None = None
    error: str | None = None
    started_at: datetime | None = None
    key: str | None = None
    owner: str | None = None
    lease_token: int | None = None
    id: int | None = None


@dataclass(frozen=True, slots=True)
class AppendPlan:
    """What an append writes: ``fresh`` (seq, message) rows and the session's new totals;
    ``result`` is what the store returns. Nothing to write when ``fresh`` is empty."""

    fresh: list[tuple[int, PreparedMessage]]
    result: AppendResult


def plan_append(
    stats: SessionStats,
    items: Sequence[PreparedMessage],
    known: Mapping[str, int],
    now: datetime,
) -> AppendPlan:
    """The store-independent part of an append, shared by every store: messages whose
    client id is already stored (``known``: client id → seq) or repeated in the batch are
    not written again and get their existing seq; the rest get the next seqs; the sequence
    rules are checked against the pending tool calls (``ValidationError`` before any
    write); the totals are advanced. O(batch): ``known`` is only looked up."""
    if len(items) == 1 and items[0].message.id is None:  # one chat turn: a fresh message
        item = items[0]
        seq = stats.last_seq + 1
        msg = item.message
        if stats.pending_calls or msg.role == "tool" or msg.tool_calls:
            pending = check_sequence((msg,), stats.pending_calls)
        else:
            pending = ()  # what check_sequence says of a plain turn with nothing pending
        new = advance(
            stats, seq, stats.live_count + 1, stats.live_tokens + item.tokens, pending, now
        )
        return AppendPlan([(seq, item)], AppendResult((seq,), new, 0))
    seqs: list[int] = []
    fresh: list[tuple[int, PreparedMessage]] = []
    batch: dict[str, int] = {}  # client ids first seen in this batch
    seq = stats.last_seq
    for item in items:
        mid = item.message.id
        if mid is not None:
            old = batch.get(mid)
            if old is None:
                old = known.get(mid)
            if old is not None:
                seqs.append(old)
                continue
        seq += 1
        if mid is not None:
            batch[mid] = seq
        fresh.append((seq, item))
        seqs.append(seq)
    pending = check_sequence([i.message for _, i in fresh], stats.pending_calls)
    if not fresh:
        return AppendPlan(fresh, AppendResult(tuple(seqs), stats, len(items)))
    new = advance(
        stats,
        seq,
        stats.live_count + len(fresh),
        stats.live_tokens + sum(i.tokens for _, i in fresh),
        pending,
        now,
    )
    return AppendPlan(fresh, AppendResult(tuple(seqs), new, len(items) - len(fresh)))


@runtime_checkable
class Store(Protocol):
    """Where sessions live. Every method is a coroutine; sync use goes through ``Memory``."""

    retention: Retention
    #: Keep older summaries' text (None: only with ``archive`` retention); see
    #: :func:`keeps_summary_text`.
    summary_history: bool | None

    async def setup(self) -> None:
        """Create or migrate the schema; safe to call any number of times."""
        ...

    async def append(
        self,
        session_id: str,
        items: Sequence[PreparedMessage],
        now: datetime,
        *,
        due: DueCheck | None = None,
    ) -> AppendResult:
        """Append atomically (see the module contract); ``now`` becomes the last activity.
        With ``due``, the due mark it asks for is written in the same transaction (see
        :data:`DueCheck`): one write where ``append`` + ``mark_due`` took two."""
        ...

    async def stats(self, session_id: str) -> SessionStats | None:
        """The session's running totals, or None if it does not exist."""
        ...

    async def live(self, session_id: str) -> list[StoredMessage]:
        """Every live (not yet folded) message, oldest first."""
        ...

    async def snapshot(self, session_id: str) -> Snapshot | None:
        """Stats, summary and live messages from one consistent read, or None."""
        ...

    async def messages(
        self,
        session_id: str,
        *,
        include_folded: bool = True,
        after_seq: int = 0,
        limit: int | None = None,
    ) -> list[StoredMessage]:
        """Stored messages with seq > ``after_seq``, oldest first (folded ones flagged)."""
        ...

    async def summary(self, session_id: str) -> Summary | None:
        """The current summary, or None before the first fold."""
        ...

    async def search(
        self,
        session_id: str,
        terms: Sequence[str],
        *,
        limit: int = 20,
        folded: bool | None = None,
        min_matched: int = 1,
        snippets: bool = True,
    ) -> list[SearchHit]:
        """The session's stored messages matching *any* of ``terms`` (plain words: the
        store folds, splits and quotes them; none left → no hits), best first by the
        engine's relevance, at most ``limit`` (1..1000, else ``ValidationError``).
        ``folded``: True only folded messages, False only live ones, None both.
        ``min_matched``: only messages with at least that many of the terms (capped at
        their number; see :func:`.search.term_groups`) — much cheaper than filtering the
        hits afterwards. When some terms are in very many messages (broad, see
        :data:`.search.BROAD_MESSAGES`), the matches with one of the rarer terms are ranked
        first and, if they fill ``limit``, are the hits. An unknown session has no hits.
        ``snippets=False``: every hit's ``snippet`` is ``""`` (cheaper, for a caller that
        fetches the messages themselves); the hits are otherwise the same."""
        ...

    async def fetch(self, session_id: str, seqs: Sequence[int]) -> list[StoredMessage]:
        """The stored messages with these seqs, in seq order (folded ones flagged);
        seqs not stored (never, or removed by ``delete`` retention) are skipped."""
        ...

    async def commit_fold(self, commit: FoldCommit, entry: LedgerEntry) -> Summary:
        """Commit a fold, its ledger row and its summary version atomically, or raise
        ``ConflictError``."""
        ...

    async def summary_versions(
        self,
        session_id: str,
        *,
        after_version: int = 0,
        limit: int | None = None,
        text: bool = True,
    ) -> list[SummaryVersion]:
        """The session's summary versions with version > ``after_version``, oldest first.
        ``text=False`` leaves every ``text`` None (numbers only: cheap for long sessions)."""
        ...

    async def record_attempt(self, entry: LedgerEntry) -> int:
        """Record a fold attempt that did not commit; returns the ledger id."""
        ...

    async def record_usage(self, session_id: str, input_tokens: int) -> None:
        """Remember the provider-reported input tokens of the session's last model call."""
        ...

    async def ledger(
        self, session_id: str | None = None, *, limit: int | None = 100
    ) -> list[LedgerEntry]:
        """Ledger rows, newest first, for one session or all."""
        ...

    async def list_sessions(
        self, *, limit: int | None = 100, offset: int = 0
    ) -> list[SessionStats]:
        """Sessions, most recently active first."""
        ...

    async def delete(self, session_id: str, *, if_last_seq: int | None = None) -> bool:
        """Remove a session with its messages, summary, summary versions and ledger rows.
        With ``if_last_seq`` only if nothing was appended since; returns whether it deleted."""
        ...

    async def mark_due(self, session_id: str, due_at: datetime | None, *, as_of_seq: int) -> None:
        """Record when the session next wants a fold (None: not due), computed from stats
        at ``last_seq == as_of_seq``; ignored if a mark from newer stats is stored."""
        ...

    async def claim_due(self, owner: str, *, limit: int, lease_seconds: float) -> list[Lease]:
        """Lease up to ``limit`` sessions that are due now and not leased (or whose lease
        expired), most overdue first. Concurrent claimers never get the same session."""
        ...

    async def claim(self, session_id: str, owner: str, *, lease_seconds: float) -> Lease | None:
        """Lease this one session to ``owner`` now, due or not, unless another lease on it
        is unexpired (then None; also None if the session does not exist). Bumps the lease
        token like ``claim_due``: the short lease an inline fold takes so one process
        folds a session at a time."""
        ...

    async def claim_many(
        self, session_ids: Sequence[str], owner: str, *, lease_seconds: float
    ) -> list[Lease]:
        """``claim`` for many sessions at once (one round trip where it matters): the
        leases of those that exist and were not leased."""
        ...

    async def release_many(self, leases: Sequence[Lease]) -> None:
        """End the leases that are still current; due marks are left as they are."""
        ...

    async def revoke_leases(self, owner_prefix: str, *, except_owner: str | None = None) -> int:
        """End now, expired or not, every lease whose owner starts with ``owner_prefix``
        (but ``except_owner``'s), bumping each session's lease token: a fold of such an
        owner still running cannot commit, renew or release any more (fencing). Due marks
        stay, so the sessions can be claimed at once. For owners known to be dead (the
        worker a supervisor saw exit); returns how many leases ended."""
        ...

    async def snapshots(self, session_ids: Sequence[str]) -> dict[str, Snapshot]:
        """``snapshot`` of many sessions (one round trip where it matters); missing ones
        are absent from the result."""
        ...

    async def renew(self, lease: Lease, *, lease_seconds: float) -> Lease | None:
        """Extend a current, unexpired lease to ``lease_seconds`` from now (same token);
        None if it expired or was taken over."""
        ...

    async def release(self, lease: Lease, *, due_at: datetime | None, as_of_seq: int) -> bool:
        """End ``lease`` and mark the session due at ``due_at`` (as :meth:`mark_due`).
        Returns False (and changes nothing) if the lease is no longer the current one."""
        ...

    async def list_due(self, *, limit: int | None = 100) -> list[tuple[str, datetime]]:
        """Sessions marked due (now or later), soonest first, with their due time."""
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


@runtime_checkable
class SearchesTurns(Protocol):
    """A store that reads a search's hits and the turns around them together (optional:
    a store without it is searched and then fetched from; see
    :class:`contextfold.recall_reads.RecallReads`)."""

    async def search_turns(
        self,
        session_id: str,
        terms: Sequence[str],
        *,
        limit: int = 20,
        folded: bool | None = None,
        min_matched: int = 1,
        reach: Sequence[tuple[int, int]] = ((1, 1),),
    ) -> SearchTurns:
        """:meth:`Store.search` (no snippets) and the stored messages within ``reach`` of
        its hits — (seqs before, seqs after) the best hit, the second best, … (of equal
        scores the older first), the last pair for every hit after those — as
        :meth:`Store.fetch` returns them, from one snapshot (a bad ``reach``:
        ``ValidationError``)."""
        ...


class LiveWindow(Sequence[StoredMessage]):
    """A snapshot's live messages without copying them: the first ``n`` items of a list
    the store only appends to (after a fold it starts a new list), so they stay as they
    were when the snapshot was taken. Read-only; O(1) to take, where copying a
    100,000-token live window (~3,000 messages) cost a fifth of a turn."""

    __slots__ = ("_items", "_n")

    def __init__(self, items: list[StoredMessage], n: int) -> None:
        self._items = items
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._n)
            if step == 1:
                return self._items[start:max(start, stop)]
            return [self._items[j] for j in range(start, stop, step)]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("live window index out of range")
        return self._items[i]

    def __iter__(self) -> Iterator[StoredMessage]:
        return islice(self._items, self._n)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=False))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LiveWindow({list(self)!r})"
