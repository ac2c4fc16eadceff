"""The PostgreSQL store's live cache (``stores.live_cache``) against overlapping reads: a
session changes (appends, folds) while snapshots of it are taken and merged in any order,
as concurrent context reads of one process do, and is deleted and created again under the
same id (a new generation: same seqs, other messages). Whatever the order, a merged window
is the snapshot's live messages exactly, or None (the store then reads them all again)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.messages import Message, StoredMessage
from contextfold.policy import SessionStats
from contextfold.stores.base import LiveWindow
from contextfold.stores.live_cache import LiveCache

SID = "s"


@dataclass
class Read:
    """A snapshot read started with the cache's ``after`` and the stored state then."""

    after: int
    through: int
    last: int
    generation: int = 1


def stored(seq: int, generation: int = 1) -> StoredMessage:
    return StoredMessage(seq, Message(role="user", content=f"g{generation} m{seq}"), 1)


def stats(read: Read) -> SessionStats:
    return SessionStats(SID, last_seq=read.last, through_seq=read.through,
                        live_count=read.last - read.through)


def finish(cache: LiveCache, read: Read) -> tuple[LiveWindow, bool]:
    """Merge ``read`` as the store does (rows above max(through, after)); a None is
    followed by the full re-read, as in ``PostgresStore.snapshot``. Also: whether it
    took that re-read."""
    g = read.generation
    rows = [stored(s, g) for s in range(max(read.through, read.after) + 1, read.last + 1)]
    window = cache.merge(SID, g, stats(read), read.after, iter(rows))
    if window is not None:
        return window, False
    full = [stored(s, g) for s in range(read.through + 1, read.last + 1)]
    window = cache.merge(SID, g, stats(read), 0, iter(full))
    assert window is not None
    return window, True


def seqs(window: LiveWindow) -> list[int]:
    return [m.seq for m in window]


def expected(read: Read) -> list[StoredMessage]:
    return [stored(s, read.generation) for s in range(read.through + 1, read.last + 1)]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 4)),
        st.tuples(st.just("fold"), st.integers(0, 6)),
        st.tuples(st.just("start"), st.just(0)),
        st.tuples(st.just("finish"), st.integers(0, 5)),
        st.tuples(st.just("recreate"), st.integers(0, 6)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_merged_windows_are_the_snapshots_live_messages(script: list[tuple[str, int]]) -> None:
    cache = LiveCache()
    through = last = 0
    generation = 1
    pending: list[Read] = []
    windows: list[tuple[LiveWindow, Read]] = []
    for op, n in script:
        if op == "append":
            last += n
        elif op == "fold":
            through = min(last, through + n)
        elif op == "recreate":  # deleted and created again elsewhere, with n messages
            generation, through, last = generation + 1, 0, n
        elif op == "start":
            pending.append(Read(cache.after(SID), through, last, generation))
        elif pending:
            read = pending.pop(n % len(pending))
            window, _ = finish(cache, read)
            assert list(window) == expected(read)
            windows.append((window, read))
    for window, read in windows:  # windows handed out earlier never change afterwards
        assert list(window) == expected(read)


def test_a_recreated_session_with_fewer_messages_is_read_again() -> None:
    """The list of a session deleted since, and created again (by another process, at
    the same ``created_at``) with fewer messages, is not the new one's prefix."""
    cache = LiveCache()
    finish(cache, Read(0, 0, 5, generation=1))
    window, reread = finish(cache, Read(5, 0, 2, generation=2))
    assert (list(window), reread) == ([stored(1, 2), stored(2, 2)], True)
    window, reread = finish(cache, Read(2, 0, 3, generation=2))  # and it grows from there
    assert (list(window), reread) == ([stored(s, 2) for s in (1, 2, 3)], False)


def test_an_older_read_leaves_the_newer_list_in_place() -> None:
    cache = LiveCache()
    assert seqs(finish(cache, Read(0, 0, 3))[0]) == [1, 2, 3]
    older, newer = Read(3, 0, 5), Read(3, 0, 7)  # both started when the list ended at 3
    window, reread = finish(cache, newer)
    assert (seqs(window), reread) == (list(range(1, 8)), False)
    assert cache.after(SID) == 7
    window, reread = finish(cache, older)
    assert (seqs(window), reread) == (list(range(1, 6)), False)  # its part of the list
    assert cache.after(SID) == 7


def test_reads_overlapping_an_append_take_no_full_read() -> None:
    """Two reads that started together, the second finishing after the first moved the
    list: the second takes the rows above the list's end, no re-read (each re-read was a
    second statement per context read)."""
    cache = LiveCache()
    finish(cache, Read(0, 0, 4))
    first, second = Read(4, 0, 6), Read(4, 1, 8)  # a fold and appends in between
    assert seqs(finish(cache, first)[0]) == [1, 2, 3, 4, 5, 6]
    window, reread = finish(cache, second)
    assert (seqs(window), reread) == ([2, 3, 4, 5, 6, 7, 8], False)
