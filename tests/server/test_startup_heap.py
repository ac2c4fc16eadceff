"""``contextfold serve``'s app freezes the objects alive once it has started (the cyclic
garbage collector stops walking them at every full collection); an app built by a library
user leaves the collector alone."""

from __future__ import annotations

import asyncio
import gc
import sys
from pathlib import Path

import pytest

from contextfold.server.app import app_from_env, create_app


async def _started(app: object) -> int:
    async with app.router.lifespan_context(app):  # type: ignore[attr-defined]
        return gc.get_freeze_count()


def test_serve_app_freezes_the_startup_heap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTEXTFOLD_SERVER_STORE", f"sqlite:///{tmp_path / 'x.db'}")
    monkeypatch.delenv("CONTEXTFOLD_SERVER_CONFIG", raising=False)
    interval = sys.getswitchinterval()
    gc.unfreeze()
    try:
        frozen = asyncio.run(_started(app_from_env()))
    finally:
        gc.unfreeze()
        sys.setswitchinterval(interval)
    assert frozen > 10_000  # the modules, the app, the tokenizer's tables


def test_a_library_app_leaves_the_collector_alone(tmp_path: Path) -> None:
    gc.unfreeze()
    try:
        frozen = asyncio.run(_started(create_app(store_url=f"sqlite:///{tmp_path / 'y.db'}")))
    finally:
        gc.unfreeze()
    assert frozen == 0
