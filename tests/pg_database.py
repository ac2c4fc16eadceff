"""A fresh PostgreSQL database for tests: created under a unique name, dropped after.

The server is the real one at 127.0.0.1:5432 (override with ``CONTEXTFOLD_TEST_PG``, an
admin URL). When it is down the test fails with the command that starts it — never skips.
Fixtures (``tests/conftest.py``'s ``pg_database``, ``tests/postgres``' ``pg_url``, the
reliability suite's) and the server tests all make their databases here.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest

ADMIN_URL = os.environ.get("CONTEXTFOLD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
START_HINT = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"


@contextlib.contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """The URL of a database named ``{prefix}_{pid}_{random}``, dropped (with any
    connection still open to it) when the block ends."""
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
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield ADMIN_URL.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def host_and_port(url: str) -> tuple[str, int]:
    """The server address of a ``postgresql://user@host:port/db`` URL."""
    hostport = url.rsplit("/", 1)[0].rsplit("@", 1)[-1]
    host, _, port = hostport.partition(":")
    return host, int(port or 5432)


def fresh_schema() -> str:
    """A schema name no other test uses, so tests in one database never see each other."""
    return f"t_{uuid.uuid4().hex[:12]}"
