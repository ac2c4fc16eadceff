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

from ..errors import ConfigError

__all__ = ["InMemoryVault", "PlaceholderVault", "StoreVault", "VaultStore"]


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


class VaultStore(Protocol):
    """The optional store ability :class:`StoreVault` needs (``MemoryStore``,
    ``SQLiteStore`` and ``PostgresStore`` have it; the rows go with ``store.delete``)."""

    async def vault_get(self, session_id: str) -> dict[str, str]: ...

    async def vault_put(self, session_id: str, entries: Mapping[str, str]) -> None: ...


class StoreVault:
    """A vault kept in the store's ``pii_vault`` table, so it is deleted with the session.

    The :class:`~contextfold.privacy.Redactor` is synchronous and the store is not, so the
    engine brackets every redaction: ``await load(scope)`` before (the sync ``get`` then
    answers from that snapshot) and ``await flush(scope)`` after, before anything that uses
    a new placeholder is written. Two processes adding new values to one session at the
    same moment could pick the same number; the first write wins (one writer per session).
    """

    def __init__(self, store: VaultStore) -> None:
        for method in ("vault_get", "vault_put"):
            if not callable(getattr(store, method, None)):
                raise ConfigError(
                    f"{type(store).__name__} cannot keep a PII vault (no {method}); "
                    "use MemoryStore, SQLiteStore or PostgresStore"
                )
        self._store = store
        self._loaded: dict[str, dict[str, str]] = {}
        self._pending: dict[str, dict[str, str]] = {}

    def get(self, scope: str) -> dict[str, str]:
        return dict(self._loaded.get(scope, {}))

    def put(self, scope: str, entries: Mapping[str, str]) -> None:
        loaded = self._loaded.setdefault(scope, {})
        pending = self._pending.setdefault(scope, {})
        for placeholder, value in entries.items():
            if placeholder not in loaded:
                loaded[placeholder] = value
                pending[placeholder] = value

    def delete(self, scope: str) -> None:
        self._loaded.pop(scope, None)
        self._pending.pop(scope, None)

    async def load(self, scope: str) -> None:
        """Snapshot ``scope``'s rows from the store (unflushed entries are kept)."""
        rows = await self._store.vault_get(scope)
        rows.update(self._pending.get(scope, {}))
        self._loaded[scope] = rows

    async def read(self, scope: str) -> dict[str, str]:
        """``scope``'s mapping as stored, with unflushed entries (no snapshot is kept)."""
        rows = await self._store.vault_get(scope)
        rows.update(self._pending.get(scope, {}))
        return rows

    async def flush(self, scope: str) -> None:
        """Write the entries added since the last flush; then drop the snapshot."""
        pending = self._pending.pop(scope, None)
        if pending:
            try:
                await self._store.vault_put(scope, pending)
            except BaseException:
                self._pending.setdefault(scope, {}).update(pending)
                raise
        if scope not in self._pending:
            self._loaded.pop(scope, None)

    def __repr__(self) -> str:
        return f"StoreVault({self._store!r})"
