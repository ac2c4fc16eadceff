"""The browser tests' skip-or-fail rule (tests/browser.py): on a machine without Chromium the
README's test command stays green (the browser tests skip, saying why), and under
``CONTEXTFOLD_REQUIRE_BROWSER=1`` — set by ``.ci/run`` — the same situation fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser import REQUIRE_BROWSER, chromium, require_playwright

ROOT = Path(__file__).resolve().parents[1]


def _nowhere(_: str) -> None:
    return None


def test_missing_chromium_skips_with_the_reason_and_the_fix() -> None:
    with pytest.raises(pytest.skip.Exception, match=r"no chromium on PATH: apt-get install"):
        chromium({}, which=_nowhere)


@pytest.mark.parametrize("flag", ["1", "yes"])
def test_missing_chromium_fails_when_a_browser_is_required(flag: str) -> None:
    with pytest.raises(pytest.fail.Exception, match=REQUIRE_BROWSER):
        chromium({REQUIRE_BROWSER: flag}, which=_nowhere)


def test_flag_set_to_zero_still_skips() -> None:
    with pytest.raises(pytest.skip.Exception):
        chromium({REQUIRE_BROWSER: "0"}, which=_nowhere)


def test_found_chromium_is_returned_flag_or_not() -> None:
    assert chromium({}, which=lambda _: "/usr/bin/chromium") == "/usr/bin/chromium"
    assert chromium({REQUIRE_BROWSER: "1"}, which=lambda _: "/x/chromium") == "/x/chromium"


def test_a_named_binary_must_exist(tmp_path: Path) -> None:
    missing = str(tmp_path / "chromium")
    with pytest.raises(pytest.skip.Exception, match="not an executable"):
        chromium({"CONTEXTFOLD_CHROMIUM": missing}, which=lambda _: "/usr/bin/chromium")
    with pytest.raises(pytest.fail.Exception):
        chromium({"CONTEXTFOLD_CHROMIUM": missing, REQUIRE_BROWSER: "1"}, which=_nowhere)


def test_missing_playwright_follows_the_same_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="needs Playwright"):
        require_playwright({})
    with pytest.raises(pytest.fail.Exception, match="needs Playwright"):
        require_playwright({REQUIRE_BROWSER: "1"})


def _readme_test_command() -> str:
    text = (ROOT / "README.md").read_text()
    commands = [line.strip() for line in text.splitlines()
                if line.strip().endswith("&& pytest") and "venv" in line]
    assert len(commands) == 1, commands
    return commands[0]


def test_ci_runs_the_readme_test_command_with_the_browser_required() -> None:
    """``.ci/run`` runs the README's command exactly, after requiring the browser."""
    ci = (ROOT / ".ci" / "run").read_text()
    command = _readme_test_command()
    lines = [line.strip() for line in ci.splitlines()]
    assert command in lines
    flag = re.compile(rf"^export {REQUIRE_BROWSER}=1$")
    assert any(flag.match(line) for line in lines[: lines.index(command)])
