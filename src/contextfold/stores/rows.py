"""Row encoding shared by the SQL stores (SQLite, PostgreSQL): one place decides how a
message, a timestamp and a ledger row become columns and back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ConflictError, StorageError, ValidationError
from ..messages import Message, StoredMessage, make_stored, trusted_message
from ..policy import SessionStats
from .base import FoldCommit, Lease, LedgerEntry, SummaryVersion

LEDGER_COLUMNS = (
    "session_id",
    "outcome",
    "reason",
    "lo",
    "hi",
    "messages_folded",
    "tokens_folded",
    "summary_tokens",
    "input_tokens",
    "output_tokens",
    "calls",
    "model",
    "latency_ms",
    "error_class",
    "error",
    "started_at",
    "key",
    "owner",
    "lease_token",
)


def encode_message(message: Message) -> str:
    return json.dumps(message.to_dict(), ensure_ascii=False, separators=(",", ":"))


def decode_message(seq: int, body: str, tokens: int, folded: bool = False) -> StoredMessage:
    """A stored row back as a message. The common row (a text turn, see
    :func:`~contextfold.messages.trusted_message`) is rebuilt without validating again what
    was validated before it was written; any other row is parsed and validated in full,
    and a row that does not parse (not JSON, not a message) raises ``StorageError``."""
    try:
        data = json.loads(body)
        msg = trusted_message(data) or Message.from_openai(data)
    except (ValueError, ValidationError) as exc:
        raise StorageError(f"stored message seq {seq} cannot be read back: {exc}") from exc
    return make_stored(seq, msg, tokens, folded)


class MessageDecoder:
    """Decodes stored message rows, reusing earlier results for identical rows.

    Live messages are read every turn; decoding (JSON + validation) is the costly part,
    so a decoded message is kept under (session, seq) together with the row body it came
    from and reused only when the body read now is the same text — a deleted and
    re-created session with other content at the same seq is decoded afresh. Bounded:
    past ``max_entries`` the cache starts over.
    """

    def __init__(self, max_entries: int = 200_000) -> None:
        self.max_entries = max_entries
        self._cache: dict[tuple[str, int], tuple[str, StoredMessage]] = {}

    def decode(
        self, session_id: str, seq: int, body: str, tokens: int, folded: bool = False
    ) -> StoredMessage:
        hit = self._cache.get((session_id, seq))
        if hit is not None and hit[0] == body and hit[1].tokens == tokens:
            stored = hit[1]
            if stored.folded != folded:  # folded since (it stays so): kept as it now reads
                stored = make_stored(seq, stored.message, tokens, folded)
                self._cache[(session_id, seq)] = (body, stored)
            return stored
        stored = decode_message(seq, body, tokens, folded)
        self._keep(session_id, seq, body, stored)
        return stored

    def encode(self, session_id: str, seq: int, message: Message, tokens: int) -> str:
        """The row body of a message being written, remembered as its decoded form: the
        next read of the row (this turn's context) finds it without decoding. A row that
        is never written (a rolled-back append) does no harm: a hit needs the same body."""
        body = encode_message(message)
        self._keep(session_id, seq, body, StoredMessage(seq, message, tokens))
        return body

    def written(self, session_id: str, seq: int, body: str, message: Message,
                tokens: int) -> None:
        """Remember a row written with ``body`` (made by :func:`encode_message`), as
        :meth:`encode` does."""
        self._keep(session_id, seq, body, StoredMessage(seq, message, tokens))

    def _keep(self, session_id: str, seq: int, body: str, stored: StoredMessage) -> None:
        if len(self._cache) >= self.max_entries:
            self._cache.clear()
        self._cache[(session_id, seq)] = (body, stored)


def encode_time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def decode_time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def ledger_values(entry: LedgerEntry) -> tuple[Any, ...]:
    values = [getattr(entry, c) for c in LEDGER_COLUMNS]
    values[LEDGER_COLUMNS.index("started_at")] = encode_time(entry.started_at)
    return tuple(values)


def ledger_from_row(row: tuple[Any, ...]) -> LedgerEntry:
    """``row`` is (id, *LEDGER_COLUMNS)."""
    fields: dict[str, Any] = dict(zip(LEDGER_COLUMNS, row[1:], strict=True))
    fields["started_at"] = decode_time(fields["started_at"])
    return LedgerEntry(id=row[0], **fields)


#: The sessions columns every SQL store reads into SessionStats, in this order.
SESSION_COLS = (
    "session_id, last_seq, live_count, live_tokens, through_seq, summary_version, "
    "summary_tokens, pending_calls, last_activity, reported_input_tokens"
)


def session_stats(row: Sequence[Any]) -> SessionStats:
    return SessionStats(
        session_id=row[0],
        last_seq=row[1],
        live_count=row[2],
        live_tokens=row[3],
        through_seq=row[4],
        summary_version=row[5],
        summary_tokens=row[6],
        pending_calls=() if row[7] == "[]" else tuple(json.loads(row[7])),
        last_activity=decode_time(row[8]),
        reported_input_tokens=row[9],
    )


def version_values(version: SummaryVersion) -> tuple[Any, ...]:
    """A summary version as (session_id, version, lo, through_seq, at_seq, tokens,
    live_tokens, text, created_at) column values."""
    return (
        version.session_id,
        version.version,
        version.lo,
        version.through_seq,
        version.at_seq,
        version.tokens,
        version.live_tokens,
        version.text,
        version.created_at,
    )


def version_from_row(row: Sequence[Any]) -> SummaryVersion:
    sid, version, lo, through, at_seq, tokens, live, text, at = row
    return SummaryVersion(sid, version, lo, through, at_seq, tokens, live, text, decode_time(at))


@dataclass(frozen=True, slots=True)
class LedgerTotals:
    """Sums over the ledger rows of one ``model`` with one ``outcome``: what a usage report
    adds up, computed by the database (``ledger_totals``)."""

    model: str | None
    outcome: str
    attempts: int
    calls: int
    input_tokens: int
    output_tokens: int
    messages_folded: int
    tokens_folded: int

    @classmethod
    def of(cls, entry: LedgerEntry) -> LedgerTotals:
        """One ledger row as totals (an attempt of one)."""
        return cls(entry.model, entry.outcome, 1, entry.calls, entry.input_tokens,
                   entry.output_tokens, entry.messages_folded, entry.tokens_folded)


#: Per (model, outcome) sums of some sessions' ledger rows (see ``ledger_totals_query``).
LEDGER_TOTALS = (
    "SELECT model, outcome, count(*), coalesce(sum(calls), 0), "
    "coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0), "
    "coalesce(sum(messages_folded), 0), coalesce(sum(tokens_folded), 0) FROM ledger "
    "WHERE {where} GROUP BY model, outcome"
)


def ledger_totals_query(
    session_id: str | None, prefix: str | None, *, ordered: str = "session_id"
) -> tuple[str, tuple[str, ...]]:
    """SQL (``?`` placeholders) and parameters of ``ledger_totals``: one session, or every
    session whose id starts with ``prefix`` (exactly one of the two) — an equality or a
    range on the ledger's session index, so the cost follows those sessions' rows, not the
    ledger. ``ordered``: the session id expression that compares in code point order."""
    if (session_id is None) == (prefix is None):
        raise ValueError("ledger_totals takes a session_id or a prefix (one of the two)")
    if session_id is not None:
        return LEDGER_TOTALS.format(where="session_id = ?"), (session_id,)
    assert prefix is not None
    lo, hi = prefix_range(prefix)
    return LEDGER_TOTALS.format(where=f"{ordered} >= ? AND {ordered} < ?"), (lo, hi)


def prefix_range(prefix: str) -> tuple[str, str]:
    """[lo, hi): in code point order, exactly the strings that start with ``prefix``."""
    if not prefix:
        raise ValueError("an empty prefix names every session")
    after = ord(prefix[-1]) + 1
    if after > 0x10FFFF:
        raise ValueError("the prefix cannot end with U+10FFFF")
    if 0xD800 <= after <= 0xDFFF:  # surrogates are not text: next is U+E000
        after = 0xE000
    return prefix, prefix[:-1] + chr(after)


def ledger_totals_from_rows(rows: Sequence[Sequence[Any]]) -> list[LedgerTotals]:
    return [LedgerTotals(r[0], str(r[1]), *(int(v) for v in r[2:])) for r in rows]


def fenced_off(lease: Lease) -> ConflictError:
    """The error of a fold commit whose lease is no longer its session's current one."""
    return ConflictError(
        f"lease {lease.token} of {lease.owner!r} on session {lease.session_id!r} "
        "expired or was taken over; the fold is fenced off"
    )


def check_fold_start(commit: FoldCommit, version: int, through: int, last: int) -> None:
    """Raise ``ConflictError`` unless the session (summary ``version``, cursor ``through``,
    ``last`` seq) is where the fold started: same summary, span = the next live messages."""
    sid = commit.session_id
    if version != commit.expected_version:
        raise ConflictError(
            f"session {sid!r} summary is at version {version}, "
            f"the fold started from {commit.expected_version}"
        )
    if commit.lo != through + 1 or not (commit.lo <= commit.hi <= last):
        raise ConflictError(
            f"fold span {commit.lo}..{commit.hi} does not start at the first live "
            f"message {through + 1} or passes the last {last}"
        )
