"""Fixtures for the HTTP service tests: a real ``contextfold serve`` process on a free
127.0.0.1 port, its store in a temporary directory, and API keys made with the real
``contextfold keys create``. Tests talk real HTTP to it with httpx."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason='the server tests need: pip install -e ".[dev]"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "contextfold.cli", *args],
        capture_output=True, text=True, env=env, timeout=60,
    )


@dataclass
class Served:
    """A running ``contextfold serve``."""

    url: str
    store: str
    home: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    env: dict[str, str]
    keys: dict[str, str] = field(default_factory=dict)

    def key(self, tenant: str) -> str:
        """A key for ``tenant`` (made in-process, as ``contextfold keys create`` does; the
        command itself is tested in test_errors)."""
        if tenant not in self.keys:
            from contextfold.server.catalog import open_catalog
            from contextfold.server.keys import create_key

            catalog = open_catalog(self.store)
            try:
                self.keys[tenant] = create_key(catalog, tenant)[0]
            finally:
                catalog.close()
        return self.keys[tenant]

    def client(self, tenant: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.key(tenant)}"} if tenant else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(
    tmp: Path, *, store: str | None = None, config: dict[str, Any] | None = None,
    workers: int = 1, extra_args: tuple[str, ...] = (), extra_env: dict[str, str] | None = None,
) -> Served:
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CONTEXTFOLD_HOME": str(home), **(extra_env or {})}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    store = store or f"sqlite:///{home / 'contextfold.db'}"
    args = ["serve", "--port", str(port := free_port()), "--db", store,
            "--workers", str(workers), "--log-level", "info", *extra_args]
    # These tests read each fold in the append's answer, so they fold inline unless they
    # say otherwise; the default (background fold workers) is tested in test_fold_workers.
    config = {"fold": "inline", **(config or {})}
    path = tmp / "server.json"
    path.write_text(json.dumps(config))
    args += ["--config", str(path)]
    log_path = tmp / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "contextfold.cli", *args], stdout=log,
            stderr=subprocess.STDOUT, env=env,
        )
    served = Served(f"http://127.0.0.1:{port}", store, home, process, log_path, env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"contextfold serve exited:\n{served.log()}")
        try:
            if httpx.get(f"{served.url}/healthz", timeout=1).status_code == 200:
                return served
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    served.stop()
    raise RuntimeError(f"contextfold serve did not come up:\n{served.log()}")


#: Limits for the shared server: small enough to test, large enough not to get in the way.
TEST_LIMITS = {
    "max_body_bytes": 200_000,
    "max_messages_per_request": 100,
    "requests_per_second": 0,
}


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the whole test session (SQLite store), no rate limit."""
    served = start_server(
        tmp_path_factory.mktemp("serve"),
        config={"limits": TEST_LIMITS, "defaults": {"budget": 400, "keep_last": 2}},
    )
    yield served
    served.stop()


@pytest.fixture()
def alice(server: Served) -> Iterator[httpx.Client]:
    with server.client("alice") as client:
        yield client


@pytest.fixture()
def mallory(server: Served) -> Iterator[httpx.Client]:
    with server.client("mallory") as client:
        yield client


def user(text: str, mid: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "user", "content": text}
    if mid is not None:
        message["id"] = mid
    return message


def assistant(text: str, mid: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if mid is not None:
        message["id"] = mid
    return message


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["code"] == code, body
    assert body["type"] == f"urn:contextfold:problem:{code}"
    assert "Traceback" not in response.text
    return body
