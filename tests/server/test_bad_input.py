"""Malformed input is a 4xx naming the parameter, never a 500 or a 503; a real bug's 500
logs one line, with no traceback and none of the request's input. Over real HTTP, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Served, assert_problem, start_server, user


def cursor_of(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode("utf-8", "surrogatepass")).decode().rstrip("=")


BAD_CURSORS = [
    cursor_of("[1e999, \"s\"]"),              # infinity
    cursor_of("[" + "9" * 400 + ", \"s\"]"),  # an integer no float holds
    cursor_of("[NaN, \"s\"]"),
    cursor_of('[1.5, "\\ud800"]'),             # a lone surrogate
    cursor_of('[1.5, "a\\u0000b"]'),           # a NUL byte
    cursor_of("[" * 5000 + "]" * 5000),        # nesting
    cursor_of('["s"]'),                        # the other sort's shape
    "not base64!",
    "%00",
]
BAD_ID_CURSORS = [cursor_of('["\\ud800"]'), cursor_of('["a\\u0000"]'), cursor_of("[1e999]"),
                  cursor_of("[" + "9" * 400 + "]")]


def check_bad_input(served: Served) -> None:
    with served.client("prober") as c:
        c.post("/v1/sessions/one/messages", json={"messages": [user("hello")]})
        for cursor in BAD_CURSORS:
            for path in ("/v1/sessions", "/v1/inspect/sessions"):
                r = c.get(path, params={"cursor": cursor, "limit": 1})
                body = assert_problem(r, 422, "validation_error")
                assert "cursor" in body["detail"], body
        for cursor in BAD_ID_CURSORS:
            r = c.get("/v1/inspect/sessions", params={"cursor": cursor, "sort": "id"})
            assert "cursor" in assert_problem(r, 422, "validation_error")["detail"]
        for q in ("a\x00b", "\x00", "tab\there", "\x7f"):
            r = c.get("/v1/inspect/sessions", params={"q": q})
            assert "q" in assert_problem(r, 422, "validation_error")["detail"]
        # a real cursor still pages
        first = c.get("/v1/inspect/sessions", params={"q": "on", "limit": 1}).json()
        assert [s["session_id"] for s in first["sessions"]] == ["one"]
        page = c.get("/v1/sessions", params={"limit": 1}).json()
        assert page["sessions"][0]["session_id"] == "one"


def test_bad_cursors_and_queries_on_sqlite(server: Served) -> None:
    check_bad_input(server)


@pytest.mark.postgres
def test_bad_cursors_and_queries_on_postgres(tmp_path: Path) -> None:
    from tests.server.tcp_proxy import fresh_pg_database

    with fresh_pg_database() as (url, _, _):
        served = start_server(tmp_path, store=url, config={"limits": {"requests_per_second": 0}})
        try:
            check_bad_input(served)
        finally:
            served.stop()


@pytest.fixture()
def faulty(tmp_path: Path) -> Iterator[Served]:
    faults = str(Path(__file__).with_name("faults"))
    path = os.pathsep.join(p for p in (faults, os.environ.get("PYTHONPATH", "")) if p)
    served = start_server(tmp_path, extra_env={"CONTEXTFOLD_TEST_FAULT": "cursor",
                                               "PYTHONPATH": path})
    yield served
    served.stop()


def test_a_bug_answers_500_and_logs_no_traceback_or_input(faulty: Served) -> None:
    secret = cursor_of(json.dumps([1.0, "the-users-secret-value"]))
    with faulty.client("someone") as c:
        r = c.get("/v1/sessions", params={"cursor": secret})
        body = assert_problem(r, 500, "internal_error")
        assert secret not in r.text and body["detail"] == ""
        assert c.get("/v1/sessions").status_code == 200  # the process is fine
    faulty.stop()
    log = faulty.log()
    assert "GET /v1/sessions failed: RuntimeError" in log
    assert "Traceback" not in log and secret not in log
