"""A real ``contextfold serve`` process over a seeded SQLite file, for the inspector's
API and browser tests (one server per test module)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from .seed import Seeded, seed


@dataclass
class Served:
    base: str
    seeded: Seeded
    proc: subprocess.Popen[bytes]

    def client(self, key: str | None = "demo") -> httpx.Client:
        token = {"demo": self.seeded.key, "other": self.seeded.other_key}.get(key or "", key)
        headers = {"Authorization": f"Bearer {token}"} if key else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(db: Path, *, dev: bool = False, log: Path | None = None) -> tuple[
        str, subprocess.Popen[bytes]]:
    port = free_port()
    args = [sys.executable, "-m", "contextfold.cli", "serve", "--db", str(db), "--port", str(port),
            "--log-level", "warning"]
    if dev:
        args.append("--dev")
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"contextfold serve exited with {proc.returncode}")
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return base, proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.terminate()
    raise RuntimeError("contextfold serve did not answer /healthz within 60 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("inspector")
    seeded = seed(folder / "contextfold.db")
    base, proc = start_server(seeded.db, log=folder / "server.log")
    try:
        yield Served(base, seeded, proc)
    finally:
        stop(proc)
