"""A missing extra is one line naming what to install, never a driver's traceback: the
PostgreSQL store without ``contextfold[postgres]``, from Python and from the CLI."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from contextfold import ConfigError, Memory
from contextfold.cli import cli

HINT = 'pip install "contextfold[postgres]"'
URL = "postgresql://postgres@127.0.0.1:5432/nowhere"


@pytest.fixture
def without_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a plain install: psycopg cannot be imported, and no contextfold module that
    imported it is loaded yet."""
    for name in list(sys.modules):
        if name.startswith(("psycopg", "contextfold.stores.postgres")):
            monkeypatch.delitem(sys.modules, name)
    for name in ("psycopg", "psycopg_pool"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ModuleNotFoundError


@pytest.mark.usefixtures("without_psycopg")
def test_memory_with_a_postgres_url_names_the_extra() -> None:
    with pytest.raises(ConfigError) as info:
        Memory(URL)
    assert HINT in str(info.value) and "\n" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.usefixtures("without_psycopg")
@pytest.mark.parametrize("command", [["sessions"], ["stats"], ["show", "s"], ["fold", "s"]])
def test_cli_store_option_names_the_extra_in_one_line(command: list[str]) -> None:
    result = CliRunner().invoke(cli, [*command, "--store", URL])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and HINT in lines[0] and lines[0].startswith("error: ConfigError")
    assert "Traceback" not in result.output
