"""The committed ``openapi.json`` is the contract: it must equal the app's document, and a
schema-driven fuzz run (schemathesis) against the running server finds no 5xx and no
response that breaks the document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import Served

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "openapi.json"

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis import checks as st_checks  # noqa: E402


def test_committed_openapi_matches_the_app() -> None:
    from contextfold.server.openapi import dumps

    current = dumps()
    committed = COMMITTED.read_text(encoding="utf-8")
    assert json.loads(committed) == json.loads(current), (
        "openapi.json is out of date: regenerate it with "
        "`python -m contextfold.server.openapi > openapi.json` (and the TypeScript types: "
        "cd clients/typescript && npm run generate)"
    )
    assert committed == current  # byte for byte: stable key order and indentation


def test_every_v1_operation_documents_its_problems() -> None:
    doc = json.loads(COMMITTED.read_text(encoding="utf-8"))
    for path, item in doc["paths"].items():
        if not path.startswith("/v1"):
            continue
        for method, op in item.items():
            for status in ("401", "422", "429", "503"):
                content = op["responses"][status]["content"]
                assert list(content) == ["application/problem+json"], (method, path, status)
            assert op["security"] == [{"bearer": []}]


schema = schemathesis.openapi.from_dict(json.loads(COMMITTED.read_text(encoding="utf-8")))

CHECKS = [
    st_checks.not_a_server_error,
    st_checks.status_code_conformance,
    st_checks.content_type_conformance,
    st_checks.response_schema_conformance,
    st_checks.response_headers_conformance,
]


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
def test_fuzz_no_5xx_and_every_response_matches_the_document(
    case: Any, server: Served
) -> None:
    headers = {"Authorization": f"Bearer {server.key('fuzz')}"}
    case.call_and_validate(base_url=server.url, headers=headers, checks=CHECKS, timeout=30)
