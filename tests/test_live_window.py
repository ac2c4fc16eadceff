"""Snapshots hand out their live messages without copying them (``LiveWindow``): a
snapshot taken earlier must still show exactly what was live when it was taken, whatever
the session did since (appends, folds, deletion), on the memory and SQLite stores."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold import Memory, TokenBudget
from contextfold.stores import MemoryStore
from contextfold.stores.base import LiveWindow, Store
from contextfold.stores.sqlite import SQLiteStore


def _memory_store() -> Store:
    return MemoryStore()


def _sqlite_store() -> Store:
    return SQLiteStore(Path(tempfile.mkdtemp(prefix="cf-window-")) / "w.db")


STORES = {"memory": _memory_store, "sqlite": _sqlite_store}

# an action: ("add", n messages) | ("fold",) | ("snap",) | ("delete",)
ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 4)),
        st.tuples(st.just("fold")),
        st.tuples(st.just("snap")),
        st.tuples(st.just("delete")),
    ),
    min_size=1,
    max_size=25,
)


@pytest.mark.parametrize("kind", sorted(STORES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=ACTIONS)
def test_an_earlier_snapshot_never_changes(kind: str, actions: list[tuple]) -> None:
    with Memory(STORES[kind](), policy=TokenBudget(10_000), redactor=False) as memory:
        memory.stats("s")  # the store is set up on first use
        store = memory.store
        taken: list[tuple[object, list[tuple[int, str]]]] = []
        n = 0
        for action in actions:
            if action[0] == "add":
                for _ in range(action[1]):
                    n += 1
                    role = "user" if n % 2 else "assistant"
                    memory.add("s", {"role": role, "content": f"message number {n} " * 3})
            elif action[0] == "fold" and memory.stats("s") is not None:
                memory.fold("s", force=True)
            elif action[0] == "delete":
                memory.delete("s")
            else:
                snap = memory._run(store.snapshot("s"))
                if snap is not None:
                    seen = [(m.seq, m.text) for m in snap.live]
                    assert seen == [(m.seq, m.text) for m in memory._run(store.live("s"))]
                    taken.append((snap, seen))
            for snap, seen in taken:  # after every step, every earlier snapshot is intact
                live = snap.live  # type: ignore[attr-defined]
                assert [(m.seq, m.text) for m in live] == seen
                assert len(live) == len(seen)
                if seen:
                    assert (live[-1].seq, live[0].seq) == (seen[-1][0], seen[0][0])
                    assert [m.seq for m in live[1:-1]] == [s for s, _ in seen[1:-1]]


def test_window_behaves_as_a_read_only_sequence() -> None:
    items = list(range(10))
    window = LiveWindow(items, 6)  # type: ignore[arg-type]
    items.append(10)  # the store appends after the snapshot: the window does not grow
    assert len(window) == 6 and list(window) == [0, 1, 2, 3, 4, 5]
    assert window[-1] == 5 and window[0] == 0 and window[2:] == [2, 3, 4, 5]
    assert window[::-2] == [5, 3, 1] and window[4:100] == [4, 5]
    assert window == [0, 1, 2, 3, 4, 5]
    assert list.__eq__([0, 1, 2, 3, 4, 5], window) is NotImplemented  # so Python asks the window
    assert window != [0, 1, 2, 3, 4] and window != "012345"
    with pytest.raises(IndexError):
        window[6]
    with pytest.raises(IndexError):
        window[-7]
    with pytest.raises(TypeError):
        hash(window)
    assert not hasattr(window, "append")
