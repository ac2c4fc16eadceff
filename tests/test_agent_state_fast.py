"""The optimised key-fact extraction gives exactly the output of the reference (session 3's
code, kept verbatim in ``agent_state_reference.py``): on random text and JSON built from
the fragments tool output is made of, and on every tool result and call of the synthetic
agent traces the benchmark replays. Stand-ins must stay byte-identical, so "faster" may
not mean "slightly different"."""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextfold.summarizers import agent_state as fast

from . import agent_state_reference as ref

_FRAGMENTS = [
    "error", "Error:", "ERROR", "FAILED", "failed", "KeyError: 'x'", "Traceback", "timed out",
    "timeout", "not found", "can't", "Exception", "panic:", "errno 2", "fatal", "denied",
    "  ", " ", "\n", "\t", "\r\n", "\u00a0", "\x1c", ":", "=", "::", "/", "//", ".", ",", ";",
    "-", "+", "%", "$", "€12.50", "£3", "¥", "$1,200.00", "45%", "12 USD", "3.5EUR", "GBP",
    "2024-05-01", "2024-05-01T10:00:00Z", "2024-05-01 10:00", "12:30", "line 42", "ln 7",
    "src/app/config.py", "/var/log/x", "tests/test_a.py::test_b", "a/b", "1/2", "ORD-8812",
    "HX101", "JFK", "ERR_QUOTA", "acct_7781", "value_1", "value_2", "value_3", "value_#",
    "test_case_7", "x1", "ab", "abc", "abc1", "1a2b3c", "v1.2.3", "sha 1f41a9f", "42", "-7",
    "+3.5", "0.25", "1,000", "status: ok", "id = 77a", "Name: Bob", "é", "Привет", "ID٣٤",
    "🙂", "<EMAIL_1>", "[redacted]", "(note)", "'", '"', "x" * 70, "y1" * 70, "#", "é1",
    "café/menu", "Ω9", "\u0660\u0661-01-01",
]
_KEYS = [
    "id", "user_id", "status", "error", "errors", "ok", "success", "amount", "total", "price",
    "name", "email", "date", "message", "code", "type", "count", "items", "result", "state",
    "reservation_id", "flight_number", "acct_7781", "A1-22", "x", "", "exit_code", "path",
    "detail", "balance", "seats", "traceback", "Status", "OK", "fault", "mode", "é_id",
]

texts = st.lists(st.sampled_from(_FRAGMENTS), max_size=60).map("".join) | st.text(max_size=300)
scalars = (st.none() | st.booleans() | st.integers(-10**6, 10**12)
           | st.floats(allow_nan=False, allow_infinity=False) | texts
           | st.sampled_from(_FRAGMENTS))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6)
    | st.dictionaries(st.sampled_from(_KEYS) | st.sampled_from(_FRAGMENTS), inner, max_size=6),
    max_leaves=60,
)
scans = st.sampled_from([fast.VIEW_SCAN_CHARS, fast.SCAN_CHARS, 40, 300, 2000])


def _same(text: str, scan: int) -> None:
    a, b = ref.extract(text, scan), fast.extract(text, scan)
    assert list(b.items.items()) == list(a.items.items()) and b.failed == a.failed
    assert fast.facts_and_failure(text) == ref.facts_and_failure(text)
    assert fast.is_failure(text) == ref.is_failure(text)
    assert fast.call_values(text) == ref.call_values(text)
    assert fast.call_signature("f", text) == ref.call_signature("f", text)
    for value in (text, text[:12], text.strip()[:30]):
        assert fast.value_shape(value) == ref.value_shape(value)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, scans)
def test_text_extraction_is_identical(text: str, scan: int) -> None:
    _same(text, scan)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, scans, st.booleans())
def test_json_extraction_is_identical(value: Any, scan: int, pretty: bool) -> None:
    text = json.dumps(value, indent=2 if pretty else None, ensure_ascii=False)
    _same(text, scan)
    _same(json.dumps(value), scan)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=12))
def test_many_lines_and_long_outputs_are_identical(lines: list[str]) -> None:
    text = "\n".join(lines * 40)  # longer than the scan windows: head + tail cut
    for scan in (fast.VIEW_SCAN_CHARS, fast.SCAN_CHARS):
        _same(text, scan)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=" \t\r\x0b\u00a0ab1Z_.-:=é/%$2", max_size=70), max_size=8),
       st.integers(0, 3))
def test_key_value_lines_and_words_are_identical(lines: list[str], width: int) -> None:
    text = "\n".join(line * (width + 1) for line in lines)
    _same(text, fast.SCAN_CHARS)


def _load(file: str, name: str) -> ModuleType:
    """A module of ``benchmarks/`` (not a package) loaded under ``name``."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / file
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@cache
def _traces() -> ModuleType:
    return _load("agent_traces.py", "agent_traces_for_tests")


@cache
def _traces2() -> ModuleType:
    """The second held-out set (``agent_traces_heldout2.py`` imports ``agent_traces``)."""
    sys.modules.setdefault("agent_traces", _traces())
    return _load("agent_traces_heldout2.py", "agent_traces_heldout2_for_tests")


@cache
def _traces3() -> ModuleType:
    """The third held-out set (``agent_traces_heldout3.py`` imports ``agent_traces``)."""
    sys.modules.setdefault("agent_traces", _traces())
    return _load("agent_traces_heldout3.py", "agent_traces_heldout3_for_tests")


@pytest.mark.parametrize("kind", ["synthetic", "heldout", "heldout2", "heldout3"])
def test_trace_tool_results_and_calls_are_identical(kind: str) -> None:
    traces = _traces()
    convs = (traces.synthetic_traces(6, offset=500) if kind == "synthetic"
             else traces.heldout_traces(4, offset=500) if kind == "heldout"
             else _traces2().heldout2_traces(6, offset=500) if kind == "heldout2"
             else _traces3().heldout3_traces(5, offset=500))
    seen = 0
    for conv in convs:
        for message in conv:
            for call in message.get("tool_calls") or ():
                _same(call["function"]["arguments"], fast.SCAN_CHARS)
            if message["role"] == "tool":
                for scan in (fast.VIEW_SCAN_CHARS, fast.SCAN_CHARS):
                    _same(message["content"], scan)
                seen += 1
    assert seen > 50


def test_heldout3_traces_are_deterministic_and_reuse_earlier_values() -> None:
    """Set 3 is the same on every run (its figures compare across releases), and its later
    calls reuse values seen earlier in the conversation (what recall measures)."""
    module = _traces3()
    first = module.heldout3_traces(5, offset=7)
    assert first == module.heldout3_traces(5, offset=7)
    assert first != module.heldout3_traces(5, offset=8)
    for conv in first:
        seen, reused = "", 0
        for message in conv:
            for call in message.get("tool_calls") or ():
                args = json.loads(call["function"]["arguments"])
                reused += sum(1 for v in args.values() if isinstance(v, str) and len(v) >= 6
                              and v in seen)
            seen += json.dumps(message)
        assert reused >= 5
