"""Fault injection for a ``contextfold serve`` process started by the tests: with
``CONTEXTFOLD_TEST_FAULT=cursor`` on the path, decoding a session-list cursor raises an
error whose message quotes the cursor (a bug that would carry user input)."""

from __future__ import annotations

import os

if os.environ.get("CONTEXTFOLD_TEST_FAULT") == "cursor":
    from contextfold.server.routes import sessions

    def _broken(cursor: str | None, *args: object, **kwargs: object) -> object:
        if cursor is None:
            return None
        raise RuntimeError(f"could not decode {cursor}")

    sessions._decode = _broken  # type: ignore[assignment]
