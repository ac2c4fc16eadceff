"""PostgreSQL test fixtures: every test run gets its own fresh database, dropped at the end.

Everything under tests/postgres carries the ``postgres`` marker (``pytest -m postgres``).
The server is the real one at 127.0.0.1:5432 (override with ``CONTEXTFOLD_TEST_PG``, an
admin URL); when it is down the tests fail with the command that starts it — never skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ADMIN_URL = os.environ.get("CONTEXTFOLD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
START_HINT = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of a database created for this test run (and dropped after it)."""
    try:
        import psycopg
    except ImportError:
        pytest.fail('PostgreSQL tests need psycopg: pip install -e ".[dev]" (or "[postgres]")',
                    pytrace=False)
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL is not reachable at {ADMIN_URL}: {exc}\n"
            f"Start the server with: {START_HINT}", pytrace=False,
        )
    name = f"contextfold_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield ADMIN_URL.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fresh_schema() -> str:
    """A schema name no other test uses, so tests in one database never see each other."""
    return f"t_{uuid.uuid4().hex[:12]}"
