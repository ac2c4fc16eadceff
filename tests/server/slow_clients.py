"""Clients that stop mid-request (stalled uploads, slow headers), and what they cost the
server process: its RSS and its open sockets (read from /proc; Linux only)."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from pathlib import Path


def host_port(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("http://").partition(":")
    return host, int(port)


def stalled(url: str, head: bytes, body: bytes = b"") -> socket.socket:
    """A connection that sent ``head`` (and ``body``) and then nothing more."""
    sock = socket.create_connection(host_port(url), timeout=10)
    sock.sendall(head + body)
    return sock


def upload_head(path: str, declared: int, key: str | None = None) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             f"Content-Length: {declared}"]
    if key:
        lines.append(f"Authorization: Bearer {key}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_until_closed(socks: list[socket.socket], within: float) -> dict[socket.socket, bytes]:
    """What each socket received until the server closed it; sockets still open after
    ``within`` seconds are left out."""
    received: dict[socket.socket, bytearray] = {s: bytearray() for s in socks}
    open_ = set(socks)
    deadline = time.monotonic() + within
    while open_ and time.monotonic() < deadline:
        ready, _, _ = select.select(list(open_), [], [], max(0.0, deadline - time.monotonic()))
        for s in ready:
            try:
                chunk = s.recv(65536)
            except OSError:
                chunk = b""
            if chunk:
                received[s] += chunk
            else:
                open_.discard(s)
    return {s: bytes(data) for s, data in received.items() if s not in open_}


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return out


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants, in MB."""
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def open_sockets(pid: int) -> int:
    """Sockets held open by ``pid`` and its descendants (listening ones included)."""
    count = 0
    for p in process_tree(pid):
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                try:
                    if os.readlink(f"/proc/{p}/fd/{fd}").startswith("socket:"):
                        count += 1
                except OSError:
                    pass
        except OSError:
            pass
    return count
