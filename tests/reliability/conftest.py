"""Reliability suite plumbing: counts that grow when the ``slow`` marker is selected.

``pytest tests/reliability`` runs every test with its CI counts; ``pytest tests/reliability
-m slow`` (or ``CONTEXTFOLD_LONG=1``) runs the tests with long variants — every test that
takes the ``counts`` fixture carries the ``slow`` marker — with their long counts. Either
way the counts used are printed at the end of the run.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.pg_database import fresh_database

from contextfold.stores import MemoryStore
from contextfold.stores.base import Retention, Store
from contextfold.stores.sqlite import SQLiteStore

_USED: list[tuple[str, str, int]] = []


def _long(config: pytest.Config) -> bool:
    expr = (config.option.markexpr or "").replace(" ", "")
    return os.environ.get("CONTEXTFOLD_LONG") == "1" or ("slow" in expr and "notslow" not in expr)


@pytest.fixture
def counts(request: pytest.FixtureRequest) -> Callable[[str, int, int], int]:
    """``counts(name, ci, long)`` → the count to use, recorded for the summary."""
    long = _long(request.config)

    def pick(name: str, ci: int, long_count: int) -> int:
        value = long_count if long else ci
        _USED.append((request.node.name, name, value))
        return value

    return pick


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test with CI and long counts is a long variant: it carries the ``slow`` marker."""
    for item in items:
        if "counts" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _USED:
        return
    mode = "long" if _long(terminalreporter.config) else "CI"
    terminalreporter.section(f"reliability counts ({mode})")
    for test, name, value in _USED:
        terminalreporter.write_line(f"{test:<55} {name:<28} {value:>8,}")


# -- stores: every behavioural test runs on each (PostgreSQL ones carry the marker) ----------

@pytest.fixture(scope="session")
def reliability_pg_url() -> Iterator[str]:
    """A database created for this run and dropped after it; fails (never skips) when the
    server is down, like tests/postgres."""
    with fresh_database("contextfold_rel") as url:
        yield url


class StoreFactory:
    """Makes stores of one kind. ``new()`` gives fresh storage and its key; ``reopen(key)``
    a second store object on the same storage (the same object for MemoryStore, whose
    storage is the object)."""

    def __init__(self, kind: str, tmp: Path, pg_url: str | None) -> None:
        self.kind, self.tmp, self.pg_url = kind, tmp, pg_url
        self._memory: dict[str, Store] = {}

    def __repr__(self) -> str:
        return f"StoreFactory({self.kind})"

    def new(self, retention: Retention = "archive") -> tuple[str, Store]:
        key = f"{retention}_{uuid.uuid4().hex[:10]}"
        return key, self.reopen(key)

    def reopen(self, key: str) -> Store:
        retention: Retention = "delete" if key.startswith("delete") else "archive"
        if self.kind == "memory":
            return self._memory.setdefault(key, MemoryStore(retention=retention))
        if self.kind == "sqlite":
            return SQLiteStore(self.tmp / f"{key}.db", retention=retention)
        from contextfold.stores.postgres import PostgresStore

        assert self.pg_url is not None
        return PostgresStore(self.pg_url, retention=retention, schema=f"r_{key}", pool_size=2)


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    url = request.getfixturevalue("reliability_pg_url") if request.param == "postgres" else None
    return StoreFactory(request.param, tmp_path, url)
