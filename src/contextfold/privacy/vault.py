"""Where the reversible mode keeps placeholder → value mappings, apart from any summary.

A vault holds, per scope (a session id), which raw value each placeholder stands for, so an
application can restore values in its own UI. It is written *before* a redacted text that
uses a new placeholder is returned, so no stored text ever holds a placeholder the vault
cannot resolve, and :meth:`PlaceholderVault.delete` is called when the session is deleted.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

__all__ = ["InMemoryVault", "PlaceholderVault"]


@runtime_checkable
class PlaceholderVault(Protocol):
    """Per-scope storage of ``{placeholder: value}``. Entries are only ever added, never
    changed: a placeholder means one value for the lifetime of its scope."""

    def get(self, scope: str) -> dict[str, str]:
        """All mappings of ``scope`` (empty when there are none)."""
        ...

    def put(self, scope: str, entries: Mapping[str, str]) -> None:
        """Add ``entries``; an existing placeholder keeps its first value."""
        ...

    def delete(self, scope: str) -> None:
        """Forget ``scope`` entirely (safe when it does not exist)."""
        ...


class InMemoryVault:
    """A process-local vault; thread-safe. Values live as long as the process."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def get(self, scope: str) -> dict[str, str]:
        with self._lock:
            return dict(self._data.get(scope, {}))

    def put(self, scope: str, entries: Mapping[str, str]) -> None:
        with self._lock:
            current = self._data.setdefault(scope, {})
            for placeholder, value in entries.items():
                current.setdefault(placeholder, value)

    def delete(self, scope: str) -> None:
        with self._lock:
            self._data.pop(scope, None)

    def __repr__(self) -> str:
        return f"InMemoryVault({len(self._data)} scopes)"
