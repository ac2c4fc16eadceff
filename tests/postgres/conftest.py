"""PostgreSQL test fixtures: every test run gets its own fresh database, dropped at the end.

Everything under tests/postgres carries the ``postgres`` marker (``pytest -m postgres``).
The server is the real one at 127.0.0.1:5432 (override with ``CONTEXTFOLD_TEST_PG``, an
admin URL); when it is down the tests fail with the command that starts it — never skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_database import fresh_database, fresh_schema

__all__ = ["fresh_schema", "pg_url"]

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of a database created for this test run (and dropped after it)."""
    with fresh_database("contextfold_test") as url:
        yield url
