""":class:`MessageView`: the messages of a :class:`~contextfold.context.Context` without
copying them.

A context at a 100,000-token budget holds ~3,000 messages; copying them into a new tuple
on every turn cost a fifth of the turn. The view instead reads ranges of lists the
:class:`~contextfold.context.LiveView` only ever appends to (after a fold it starts new
ones), so the range it holds stays as it was when the context was built. It behaves as the
tuple it replaces: indexing, slicing (a tuple), ``len``, iteration, ``in``, equality with
tuples and other views, hashing, ``+``, ``repr`` — and it pickles (and deep-copies) as a
plain tuple.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, islice
from typing import Any, overload

from .messages import Message

__all__ = ["MessageView"]


class MessageView(Sequence[Message]):
    """A read-only tuple of messages: ``head`` followed by ``body[start:stop]`` (see the
    module docstring). ``body`` must never change in that range while the view lives."""

    __slots__ = ("_body", "_head", "_n", "_start", "_stop")

    def __init__(self, head: tuple[Message, ...], body: Sequence[Message], start: int = 0,
                 stop: int | None = None) -> None:
        self._head = head
        self._body = body
        self._start = start
        self._stop = len(body) if stop is None else stop
        self._n = len(head) + max(0, self._stop - start)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Message: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, i: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(i, slice):
            return tuple(self)[i]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("tuple index out of range")
        h = len(self._head)
        return self._head[i] if i < h else self._body[self._start + i - h]

    def __iter__(self) -> Iterator[Message]:
        if self._start == 0 and self._stop == len(self._body):
            return chain(self._head, self._body)
        return chain(self._head, islice(self._body, self._start, self._stop))

    def __reversed__(self) -> Iterator[Message]:
        return reversed(tuple(self))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageView):
            other = tuple(other)
        if not isinstance(other, tuple):
            return NotImplemented  # as a tuple: never equal to a list
        return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=False))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: object) -> tuple[Message, ...]:
        if not isinstance(other, (tuple, MessageView)):
            return NotImplemented
        return (*self, *other)

    def __radd__(self, other: object) -> tuple[Message, ...]:
        if not isinstance(other, tuple):
            return NotImplemented
        return (*other, *self)

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (tuple(self),)
