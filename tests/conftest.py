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
