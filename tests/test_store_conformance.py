"""Every store passes the same conformance suite (contextfold.testing)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from contextfold.stores import MemoryStore
from contextfold.stores.base import Retention, Store
from contextfold.stores.sqlite import SQLiteStore
from contextfold.testing import StoreConformance


class TestMemoryStore(StoreConformance):
    def make_store(self, retention: Retention = "archive") -> Store:
        return MemoryStore(retention=retention)


class TestSQLiteStore(StoreConformance):
    def make_store(self, retention: Retention = "archive") -> Store:
        path = Path(tempfile.mkdtemp(prefix="cf-sqlite-")) / "test.db"
        return SQLiteStore(path, retention=retention)
