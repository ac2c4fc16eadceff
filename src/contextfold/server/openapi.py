"""``python -m contextfold.server.openapi``: print the service's OpenAPI document (the one
committed as ``openapi.json``)."""

from __future__ import annotations

import json
from typing import Any


def document() -> dict[str, Any]:
    """The OpenAPI document of the app with the default configuration (no store opened)."""
    from .app import create_app

    return create_app(store_url="sqlite:///openapi-only.db").openapi()


def dumps() -> str:
    return json.dumps(document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(dumps(), end="")
