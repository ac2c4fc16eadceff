"""Bounded maps: the caches that remember what was used lately and drop the rest.

Per-session state (live lists, views, adapter bookkeeping) and memos of pure functions
(token counts, formatted dates) are kept for the entries used most recently; past its
size a map drops the one used least recently, so what recurs from turn to turn stays
and a full map never empties all at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar, overload

from .errors import ConfigError

__all__ = ["LRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class LRU(Generic[K, V]):
    """At most ``size`` entries; :meth:`get` and :meth:`put` make an entry the most
    recently used, and a :meth:`put` past the size drops the least recently used.

    Each call is a few operations of a C ``OrderedDict``, so threads may share a map
    without a lock: a race loses at most a refresh or an entry (a miss: the caller
    computes it again), or keeps one entry over the size until the next :meth:`put`; it
    never raises. A get-then-put that must happen once (a value built on a miss that
    others must share) needs the caller's own lock.
    """

    __slots__ = ("_items", "size")

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ConfigError(f"a bounded map holds 0 or more entries, not {size}")
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...

    def get(self, key: K, default: object = None) -> object:
        """The value under ``key`` (now the most recently used), else ``default``.
        (A hit is the hot path: two C calls; a miss costs an exception, next to the work
        a miss is followed by.)"""
        items = self._items
        try:
            items.move_to_end(key)
            return items[key]
        except KeyError:  # (or dropped by another thread in between: as good as a miss)
            return default

    def put(self, key: K, value: V) -> None:
        """Set ``key`` to ``value``, the most recently used; drop the least recently used
        entries past the size."""
        items = self._items
        items[key] = value
        try:
            items.move_to_end(key)
            while len(items) > self.size:
                items.popitem(last=False)
        except KeyError:  # another thread changed the map meanwhile: bounded still
            pass

    @overload
    def pop(self, key: K) -> V | None: ...
    @overload
    def pop(self, key: K, default: D) -> V | D: ...

    def pop(self, key: K, default: object = None) -> object:
        """Remove ``key``; its value, else ``default``."""
        return self._items.pop(key, default)

    def clear(self) -> None:
        self._items.clear()

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is held (without making it recently used)."""
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        """The keys, least recently used first."""
        return iter(list(self._items))

    def __repr__(self) -> str:
        return f"LRU(size={self.size}, entries={len(self._items)})"

