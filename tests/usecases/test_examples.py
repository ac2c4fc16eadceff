"""Every use-case example runs offline as documented, and against the local fake
OpenAI-compatible server with ``--model openai-compatible:…@http://127.0.0.1:PORT/v1``."""

from __future__ import annotations

import importlib.util
import os
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
#: examples built on a framework: example → the extra they need. They run in
#: tests/integrations/ with the framework installed; from a plain install they must stop
#: with the one install line they state at their top.
FRAMEWORK_EXAMPLES = {"langgraph_agent": "langchain"}


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


#: Top-level modules of every optional dependency (extras and the dev extra's test tools):
#: a plain ``pip install -e .`` has none of them.
EXTRA_MODULES = ("tiktoken", "psycopg", "psycopg_pool", "openai", "anthropic", "google.genai",
                 "phonenumbers", "presidio_analyzer", "hypothesis", "pytest", "fastapi",
                 "fastapi_offline", "uvicorn", "prometheus_client", "httpx", "schemathesis",
                 "playwright", "langchain", "langgraph", "pydantic_ai", "agents", "llama_index",
                 "redis", "orjson")
_PLAIN_INSTALL = """
import importlib.abc, runpy, sys
BLOCKED = {blocked!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"{{name}} is not part of a plain install")
        return None
sys.meta_path.insert(0, Block())
sys.argv = [{path!r}, *{args!r}]
runpy.run_path({path!r}, run_name="__main__")
"""


def test_every_example_has_a_case() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == sorted([*CASES, *FRAMEWORK_EXAMPLES])


def test_extra_modules_cover_every_optional_dependency() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((EXAMPLES.parent / "pyproject.toml").read_text())["project"]
    modules = {"tiktoken": "tiktoken", "psycopg": "psycopg", "psycopg-pool": "psycopg_pool",
               "openai": "openai", "anthropic": "anthropic", "google-genai": "google.genai",
               "phonenumbers": "phonenumbers", "presidio-analyzer": "presidio_analyzer",
               "pytest": "pytest", "hypothesis": "hypothesis", "fastapi": "fastapi",
               "fastapi-offline": "fastapi_offline",
               "uvicorn": "uvicorn", "prometheus-client": "prometheus_client", "orjson": "orjson",
               "httpx": "httpx",
               "schemathesis": "schemathesis", "playwright": "playwright",
               "langchain": "langchain", "langgraph": "langgraph",
               "langgraph-checkpoint-sqlite": "langgraph", "pydantic-ai-slim": "pydantic_ai",
               "openai-agents": "agents", "llama-index-core": "llama_index", "redis": "redis"}
    core = {r.split(">")[0].split("[")[0] for r in project["dependencies"]}
    for extra, reqs in project["optional-dependencies"].items():
        for req in reqs:
            dist = req.split(">")[0].split("[")[0].split("=")[0]
            if dist in core or dist.startswith(("types-", "pytest-")) or dist in ("ruff", "mypy"):
                continue
            assert dist in modules and modules[dist] in EXTRA_MODULES, (extra, dist)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_example_runs_from_a_plain_install(name: str, tmp_path: Path) -> None:
    """Run as the README says after ``pip install -e .``: a fresh process in which every
    optional dependency is missing (importing one fails), nothing but the core install."""
    args, expected = CASES[name]
    path = str(EXAMPLES / f"{name}.py")
    code = _PLAIN_INSTALL.format(blocked=EXTRA_MODULES, path=path, args=args)
    env = {**os.environ, "CONTEXTFOLD_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for text in expected:
        assert text in proc.stdout, f"{name}: {text!r} missing"


@pytest.mark.parametrize("name", sorted(FRAMEWORK_EXAMPLES))
def test_framework_examples_name_what_is_missing_from_a_plain_install(
    name: str, tmp_path: Path
) -> None:
    path = str(EXAMPLES / f"{name}.py")
    code = _PLAIN_INSTALL.format(blocked=EXTRA_MODULES, path=path, args=[])
    env = {**os.environ, "CONTEXTFOLD_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path, env=env)
    assert proc.returncode == 1
    # one line, the install line the example states at its top; no traceback
    extra = FRAMEWORK_EXAMPLES[name]
    assert proc.stderr.strip().splitlines() == [
        f'this example needs LangGraph: pip install "contextfold[{extra}]"']


@pytest.mark.parametrize("name", sorted([*CASES, *FRAMEWORK_EXAMPLES]))
def test_every_example_states_its_install_line_at_the_top(name: str) -> None:
    first = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8").splitlines()[0]
    extra = FRAMEWORK_EXAMPLES.get(name)
    if extra is None:
        assert first.startswith("# Install: pip install contextfold "), first
    else:
        assert first == f'# Install: pip install "contextfold[{extra}]"', first
