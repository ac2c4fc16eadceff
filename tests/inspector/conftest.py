"""The inspector's API and browser tests run against a real ``contextfold serve`` process
over a seeded SQLite file (one server per test module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .live import Served, start_server, stop
from .seed import seed


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("inspector")
    seeded = seed(folder / "contextfold.db")
    base, proc = start_server(seeded.db, log=folder / "server.log")
    try:
        yield Served(base, seeded, proc)
    finally:
        stop(proc)
