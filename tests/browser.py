"""Browser tests and a machine without a browser.

The README's test command must pass on a fresh machine that has no Chromium: every test that
drives a browser asks :func:`chromium` for one and is *skipped*, with the reason and the fix,
when there is none. CI installs Chromium and sets ``CONTEXTFOLD_REQUIRE_BROWSER=1``, which
turns that skip into a failure — so a CI run can never go green with its browser tests unrun.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable, Mapping
from typing import NoReturn

import pytest

#: Set to ``1`` (``.ci/run`` does) to make a missing browser fail the tests instead of skip.
REQUIRE_BROWSER = "CONTEXTFOLD_REQUIRE_BROWSER"
#: A Chromium binary to use instead of ``chromium`` on PATH.
CHROMIUM = "CONTEXTFOLD_CHROMIUM"


def browser_missing(reason: str, environ: Mapping[str, str] | None = None) -> NoReturn:
    """Skip the test (or module) for ``reason`` — or fail it when the environment says a
    browser is required."""
    env = os.environ if environ is None else environ
    if env.get(REQUIRE_BROWSER, "").strip() not in ("", "0"):
        pytest.fail(f"{reason} ({REQUIRE_BROWSER} is set, so this is a failure, not a skip)",
                    pytrace=False)
    pytest.skip(f"{reason} (browser tests skipped; set {REQUIRE_BROWSER}=1 to fail instead)",
                allow_module_level=True)


def chromium(environ: Mapping[str, str] | None = None,
             which: Callable[[str], str | None] = shutil.which) -> str:
    """The Chromium binary for Playwright: ``$CONTEXTFOLD_CHROMIUM``, else ``chromium`` on
    PATH; without one, :func:`browser_missing` (skip, or fail under the flag)."""
    env = os.environ if environ is None else environ
    if env.get(CHROMIUM):
        path = env[CHROMIUM]
        if not os.access(path, os.X_OK):
            browser_missing(f"{CHROMIUM}={path} is not an executable file", env)
        return path
    found = which("chromium")
    if not found:
        browser_missing("no chromium on PATH: apt-get install -y chromium (.ci/run does it), "
                        f"or set {CHROMIUM} to a Chromium binary", env)
    return found


def require_playwright(environ: Mapping[str, str] | None = None) -> None:
    """Skip (or fail under the flag) when Playwright is not installed."""
    if importlib.util.find_spec("playwright") is None:
        browser_missing('needs Playwright: pip install -e ".[dev]"', environ)
