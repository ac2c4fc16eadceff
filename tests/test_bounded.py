"""The bounded map (``contextfold.bounded.LRU``) against a model: a list of keys, least
recently used first, and their values."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextfold.bounded import LRU
from contextfold.errors import ConfigError

ops = st.lists(
    st.tuples(st.sampled_from(["get", "put", "pop", "in"]), st.integers(0, 7), st.integers()),
    max_size=80,
)


@given(st.integers(0, 5), ops)
def test_it_keeps_the_most_recently_used(size: int, script: list[tuple[str, int, int]]) -> None:
    lru: LRU[int, int] = LRU(size)
    order: list[int] = []  # the model: keys, least recently used first
    values: dict[int, int] = {}
    for op, key, value in script:
        if op == "get":
            assert lru.get(key) == values.get(key)
            assert lru.get(key, -1) == values.get(key, -1)
            if key in values:
                order.remove(key)
                order.append(key)
        elif op == "put":
            lru.put(key, value)
            if key in values:
                order.remove(key)
            order.append(key)
            values[key] = value
            while len(order) > size:
                del values[order.pop(0)]
        elif op == "pop":
            assert lru.pop(key) == values.pop(key, None)
            if key in order:
                order.remove(key)
        else:  # ``in`` tells without refreshing
            assert (key in lru) == (key in values)
        assert list(lru) == order and len(lru) == len(order) <= size
    assert {k: values[k] for k in order} == values


def test_clear_and_a_size_below_zero() -> None:
    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.clear()
    assert len(lru) == 0 and lru.get("a") is None
    with pytest.raises(ConfigError):
        LRU(-1)


def test_threads_sharing_one_stay_bounded_and_right() -> None:
    """No lock: racing gets and puts never raise, every hit is the value put under that
    key, and the map ends within its size."""
    lru: LRU[int, int] = LRU(16)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(20_000):
                key = (i * 7 + seed) % 40
                hit = lru.get(key)
                assert hit is None or hit == key * 10
                lru.put(key, key * 10)
                if i % 97 == 0:
                    lru.pop(key)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    lru.put(-1, -10)  # the next put trims any overshoot
    assert len(lru) <= 16
