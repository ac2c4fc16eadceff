"""The process the crash campaign SIGKILLs: it appends and folds against a SQLite file
as fast as it can, forever, and acknowledges every append after ``add`` returns.

Test-only hooks live here, not in the library: :class:`HookedStore` sleeps a random
moment *inside* every write transaction (after its statements, before ``COMMIT``) and
records in a one-byte state file which transaction is open, so the parent can tell how
many kills landed inside a fold commit. :class:`ClearThenInsertStore` is the deliberately
wrong fold commit (clear the session's rows, then insert them back with the summary, in
two transactions) that the campaign must catch.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

from contextfold import AsyncMemory, Message, MessageCount, ToolCall
from contextfold.stores.base import FoldCommit, LedgerEntry, Retention, Summary
from contextfold.stores.sqlite import SQLiteStore
from contextfold.testing import ConcatSummarizer

T = TypeVar("T")
SESSIONS = ("alice", "bob")


class HookedStore(SQLiteStore):
    """SQLiteStore that lingers inside each write transaction and says which one is open."""

    def __init__(self, path: str, state_fd: int, rng: random.Random, hold_s: float,
                 retention: Retention = "archive") -> None:
        super().__init__(path, retention=retention)
        self.state_fd = state_fd
        self.rng = rng
        self.hold_s = hold_s
        self.op = b"W"

    def mark(self, op: bytes) -> None:
        os.pwrite(self.state_fd, op, 0)

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        # The fold lease's short claim/release transactions do not linger: the campaign's
        # kills should land in appends and fold commits, as before leases existed.
        op = self.op
        hold = 0.0 if op == b"L" else self.rng.random() * self.hold_s

        def lingering(conn: sqlite3.Connection) -> T:
            result = fn(conn)
            self.mark(op)  # statements done, COMMIT not yet issued
            time.sleep(hold)
            return result

        try:
            return await super()._write(lingering)
        finally:
            self.mark(b"-")
            self.op = b"W"

    async def append(self, *args: Any, **kwargs: Any) -> Any:
        self.op = b"A"
        return await super().append(*args, **kwargs)

    async def commit_fold(self, commit: FoldCommit, entry: LedgerEntry) -> Summary:
        self.op = b"F"
        return await super().commit_fold(commit, entry)

    async def claim(self, *args: Any, **kwargs: Any) -> Any:
        self.op = b"L"
        return await super().claim(*args, **kwargs)

    async def release(self, *args: Any, **kwargs: Any) -> Any:
        self.op = b"L"
        return await super().release(*args, **kwargs)


class ClearThenInsertStore(HookedStore):
    """WRONG on purpose: rewrites the session's live rows as "delete them all, then insert
    them back with the new summary" in two transactions. A crash between the two loses
    every live message, acknowledged ones included."""

    async def commit_fold(self, commit: FoldCommit, entry: LedgerEntry) -> Summary:
        sid = commit.session_id
        keep = await self.live(sid)
        self.op = b"X"
        await self._write(lambda conn: conn.execute(
            "DELETE FROM messages WHERE session_id = ? AND seq >= ?", (sid, commit.lo)))
        self.mark(b"Y")  # the live rows are gone and not yet back: the window that loses them

        def insert(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO messages (session_id, seq, client_id, role, body, tokens, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, '')",
                [(sid, m.seq, m.message.id, m.role, _encode(m.message), m.tokens) for m in keep],
            )

        self.op = b"X"
        await self._write(insert)
        return await super().commit_fold(commit, entry)


def _encode(message: Message) -> str:
    from contextfold.stores.rows import encode_message

    return encode_message(message)


def next_messages(rng: random.Random, sid: str, last_seq: int,
                  pending: tuple[str, ...]) -> list[Message]:
    """The next append; every message's client id is ``sid:seq`` of the seq it will get."""
    seq = last_seq
    out: list[Message] = []

    def mid() -> str:
        nonlocal seq
        seq += 1
        return f"{sid}:{seq}"

    if pending:
        answer = list(pending)
        rng.shuffle(answer)
        for cid in answer[: rng.randint(1, len(answer))]:
            out.append(Message(role="tool", content=f"result of {cid}", tool_call_id=cid, id=mid()))
        return out
    roll = rng.random()
    if roll < 0.15:
        ident = mid()
        calls = tuple(ToolCall(f"call-{ident}-{i}", "lookup", '{"q": 1}')
                      for i in range(rng.randint(1, 3)))
        out.append(Message(role="assistant", content="", tool_calls=calls, id=ident))
    else:
        for _ in range(rng.choice([1, 1, 2])):
            role = "user" if seq % 2 == 0 else "assistant"
            body = f"message {seq + 1} of {sid} " * rng.randint(1, 20)
            out.append(Message(role=role, content=body, id=mid()))
    return out


def run(db: str, ack_path: str, state_path: str, wrong: bool, seed: int, hold_s: float,
        retention: Retention = "archive") -> None:
    """Append and fold forever (until killed). Acks go to ``ack_path``, one ``sid:seq`` per
    line, each written with one ``write`` after ``add`` returned."""
    rng = random.Random(seed)
    ack_fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    state_fd = os.open(state_path, os.O_RDWR | os.O_CREAT, 0o644)
    cls = ClearThenInsertStore if wrong else HookedStore
    store = cls(db, state_fd, rng, hold_s, retention)
    # Every other child folds under the fold lease (the default), the rest without it
    # (fold_lease_seconds=0): kills land in both kinds of fold. A child killed mid-fold
    # keeps its lease until it expires and children live ~40 ms, so the lease is a few
    # folds long (a fold outliving half of it renews or re-takes it before committing).
    memory = AsyncMemory(store, summarizer=ConcatSummarizer(), tokenizer="approx",
                         policy=MessageCount(6, fold=4, keep_last=1),
                         fold_lease_seconds=0.03 if seed % 2 else 0)

    async def main() -> None:
        while True:
            sid = rng.choice(SESSIONS)
            stats = await memory.stats(sid)
            last = stats.last_seq if stats else 0
            msgs = next_messages(rng, sid, last, stats.pending_calls if stats else ())
            await memory.add(sid, *msgs)
            os.write(ack_fd, "".join(f"{m.id}\n" for m in msgs).encode())
            if rng.random() < 0.1:
                await memory.fold(sid, force=True)

    asyncio.run(main())


def zygote() -> None:
    """Fork children quickly: this process imports everything once, then for each line
    ``db acks state wrong seed hold retention`` on stdin forks a child running :func:`run`, prints
    ``pid N``, reaps it when it dies (the parent kills it) and prints ``exit N code``."""
    import sys

    for line in sys.stdin:
        db, acks, state, wrong, seed, hold, retention = line.split()
        pid = os.fork()
        if pid == 0:
            try:
                run(db, acks, state, wrong == "1", int(seed), float(hold),
                    "delete" if retention == "delete" else "archive")
            finally:
                os._exit(1)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {pid} {-os.WTERMSIG(status) if os.WIFSIGNALED(status) else status}",
              flush=True)


if __name__ == "__main__":
    zygote()
