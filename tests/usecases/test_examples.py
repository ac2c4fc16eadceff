"""Every use-case example runs offline as documented, and against the local fake
OpenAI-compatible server with ``--model openai-compatible:…@http://127.0.0.1:PORT/v1``."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from contextfold.testing import OpenAIServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: example → (extra arguments, lines its output must contain)
CASES: dict[str, tuple[list[str], list[str]]] = {
    "simulation_memory": (["--k", "3", "--ticks", "5"],
                          ["tick 4:", "folded: mira", "ledger keys: memory:anya"]),
    "assistant_digests": ([], ["Turn 1", "DIALOG_SUMMARY", "PII in the store: none"]),
    "assistant_rolling_summary": (
        ["--messages", "34"], ["after message 31: folded 20 messages (m1..m20",
                               "summary block: yes"]),
    "agent_autofold": ([], ["folded 8 messages, kept the last exchange", "history untouched",
                            "cancelled", "cleared", "session exists: False"]),
    "agent_pruner": (["--show-prompt"], ["## Active Task Context", "folded", "model call"]),
}


def load(name: str) -> Callable[[list[str]], int]:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    main: Callable[[list[str]], int] = module.main
    return main


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs_offline(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    args, expected = CASES[name]
    assert load(name)(args) == 0
    out = capsys.readouterr().out
    for text in expected:
        assert text in out, f"{name}: {text!r} missing from:\n{out}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs_against_the_fake_provider_server(
    name: str, capsys: pytest.CaptureFixture[str],
) -> None:
    args, _ = CASES[name]
    with OpenAIServer() as server:
        model = f"openai-compatible:fake-model@{server.url}"
        assert load(name)([*args, "--model", model]) == 0
        assert server.requests, f"{name} made no request to the fake server"
        assert all(r.path.endswith("/chat/completions") for r in server.requests)
    assert capsys.readouterr().out


def test_examples_run_as_scripts(tmp_path: Path) -> None:
    """The documented command line works (one example; the others share the shape)."""
    db = f"sqlite:///{tmp_path / 'w.db'}"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_autofold.py"), "worker", "--db", db],
        capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "worker: 0 due sessions" in proc.stdout
