"""Stores: where sessions live. ``open_store`` turns a URL into a store.

URL schemes are a registry (``register_scheme``), so a backend in an extra adds itself
without touching this module's logic.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigError
from .base import Store
from .memory import MemoryStore

__all__ = ["MemoryStore", "Store", "default_db_path", "open_store", "register_scheme"]

#: What an object needs to be taken as a store (a structural check that does not depend on
#: optional abilities such as leases).
_CORE_METHODS = ("setup", "append", "stats", "live", "summary", "commit_fold", "record_attempt")
_SCHEMES: dict[str, Callable[[str], Store]] = {}


def register_scheme(scheme: str, factory: Callable[[str], Store]) -> None:
    """Make ``open_store('scheme://...')`` call ``factory(url)``."""
    _SCHEMES[scheme] = factory


def default_db_path() -> Path:
    """``$CONTEXTFOLD_HOME/contextfold.db``, else ``~/.contextfold/contextfold.db``."""
    home = os.environ.get("CONTEXTFOLD_HOME")
    base = Path(home).expanduser() if home else Path.home() / ".contextfold"
    return base / "contextfold.db"


def _sqlite(url: str) -> Store:
    from .sqlite import SQLiteStore

    path = url[len("sqlite://") :]
    if path.startswith("/"):
        path = path[1:]  # sqlite:///relative.db and sqlite:////abs/path.db
    if not path:
        raise ConfigError(f"store URL {url!r} names no file; use sqlite:///path/to.db")
    return SQLiteStore(path)


def _memory(url: str) -> Store:
    return MemoryStore()


#: The one line a missing ``postgres`` extra gives, wherever a store URL is opened.
POSTGRES_EXTRA_HINT = 'the PostgreSQL store needs psycopg 3: pip install "contextfold[postgres]"'


def _postgres(url: str) -> Store:
    try:
        from .postgres import PostgresStore
    except ImportError as exc:  # the extra is missing: one line naming it, no driver trace
        if not (exc.name or "").startswith("psycopg"):
            raise
        raise ConfigError(f"{POSTGRES_EXTRA_HINT} (missing module {exc.name!r})") from None
    return PostgresStore(url)


register_scheme("sqlite", _sqlite)
register_scheme("memory", _memory)
register_scheme("postgresql", _postgres)
register_scheme("postgres", _postgres)


def open_store(store: Store | str | os.PathLike[str] | None) -> Store:
    """A store from a Store (returned as is), a URL, a path to a SQLite file, or None
    (the default SQLite file, see :func:`default_db_path`)."""
    if store is None:
        from .sqlite import SQLiteStore

        return SQLiteStore(default_db_path())
    if isinstance(store, os.PathLike):
        from .sqlite import SQLiteStore

        return SQLiteStore(store)
    if isinstance(store, str):
        scheme, sep, _ = store.partition("://")
        if not sep:
            if store.endswith((".db", ".sqlite", ".sqlite3")) or store == ":memory:":
                from .sqlite import SQLiteStore

                return SQLiteStore(store)
            raise ConfigError(
                f"unknown store {store!r}; use sqlite:///path.db, memory:// or postgresql://…"
            )
        factory = _SCHEMES.get(scheme)
        if factory is None:
            hint = ' (pip install "contextfold[postgres]")' if scheme.startswith("postgres") else ""
            raise ConfigError(f"unknown store scheme {scheme!r} in {store!r}{hint}")
        return factory(store)
    if all(callable(getattr(store, m, None)) for m in _CORE_METHODS):
        return store
    raise ConfigError(f"not a store or store URL: {store!r}")
