"""Fixtures shared by every test directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pg_database import fresh_database


@pytest.fixture(scope="module")
def pg_database(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a PostgreSQL database made for the requesting test module alone (named
    after it) and dropped when the module's tests are done."""
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    with fresh_database(f"contextfold_{module}"[:40]) as url:
        yield url


def store_url_of(kind: str, request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store URL of ``kind`` ("memory", "sqlite" or "postgres"): a new SQLite file, the
    requesting module's PostgreSQL database (:func:`pg_database`)."""
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.db'}"
    return str(request.getfixturevalue("pg_database"))


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Each of the three stores in turn (a module may define its own ``store_url``)."""
    return store_url_of(request.param, request, tmp_path_factory)
