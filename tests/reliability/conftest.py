"""Reliability suite plumbing: counts that grow when the ``slow`` marker is selected.

``pytest tests/reliability`` runs every test with its CI counts; ``pytest tests/reliability
-m slow`` (or ``CONTEXTFOLD_LONG=1``) runs the tests marked ``slow`` with their long
counts. Either way the counts used are printed at the end of the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _USED:
        return
    mode = "long" if _long(terminalreporter.config) else "CI"
    terminalreporter.section(f"reliability counts ({mode})")
    for test, name, value in _USED:
        terminalreporter.write_line(f"{test:<55} {name:<28} {value:>8,}")
