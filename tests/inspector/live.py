"""Running servers for the inspector's tests: a real ``contextfold serve`` process, or an
app object served by uvicorn in a thread (when a test must configure the app first)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

from .seed import Seeded


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




@contextmanager
def serve_in_thread(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` over real HTTP on 127.0.0.1 (uvicorn in a thread); yields the base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(),
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(10)
