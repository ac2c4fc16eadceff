"""The HTTP protocol ``contextfold serve`` runs: uvicorn's h11 protocol with two changes.

- **A deadline for request headers.** uvicorn times out a connection only while it is idle
  between requests; one that sends part of a request line or headers and stops was held
  for good. Here a request's headers must be complete ``header_timeout`` seconds after
  the connection opens or after its first byte arrives; otherwise the connection closes.
  (The body's deadline is :class:`~contextfold.server.guards.BodyDeadlineMiddleware`.)
- **TCP_NODELAY on every connection.** asyncio sets it only on sockets whose ``proto`` is
  TCP; with ``--workers N`` uvicorn binds the listening socket itself with ``proto`` 0, so
  the accepted sockets kept Nagle's algorithm on, and a response written as headers then
  body waited for the client's delayed ACK: ~40 ms per request on a kept-alive connection.

- **A response in one write.** uvicorn writes a response's head and its body with two
  ``send`` calls, so the client took two wake-ups per response and the server two system
  calls; the head is held until the body follows (in the same loop turn, or alone at the
  end of it: a streamed response's head is not delayed past that), then both go out in one.

- **Memory given back.** A closed connection's buffers sit in reference cycles (protocol,
  request cycle, request) until a full garbage collection, and glibc keeps freed heap. When
  connections that carried 8 MiB or more in all have closed, the process collects and
  asks glibc to return free memory to the system (``malloc_trim``) a second later, at
  most once a second: after 300 stalled 500 KB uploads time out, RSS goes back from
  ~280 MB to ~135 MB (it stayed at ~280 MB). Small requests never trigger it.

``contextfold serve`` sets the deadline in ``CONTEXTFOLD_SERVER_HEADER_TIMEOUT`` (every
worker process reads it).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import socket
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT_ENV", "ServiceProtocol"]

HEADER_TIMEOUT_ENV = "CONTEXTFOLD_SERVER_HEADER_TIMEOUT"


def _header_timeout() -> float:
    try:
        return float(os.environ.get(HEADER_TIMEOUT_ENV, "10"))
    except ValueError:
        return 10.0


class ServiceProtocol(H11Protocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = _header_timeout()
        self._headers_due: asyncio.TimerHandle | None = None
        self._received = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = _OneWrite(transport, self.loop)  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):  # a socket that refuses it keeps Nagle
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._arm_headers_deadline()

    def data_received(self, data: bytes) -> None:
        self._received += len(data)
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self._arm_headers_deadline()  # (part of) a request line or headers so far
        else:
            self._disarm_headers_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is not h11.IDLE:
            return
        # idle between requests: uvicorn's keep-alive timeout applies until data arrives
        self._disarm_headers_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_headers_deadline()
        super().connection_lost(exc)
        _released(self.loop, self._received)

    def _arm_headers_deadline(self) -> None:
        if self._headers_due is None:
            self._headers_due = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm_headers_deadline(self) -> None:
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None

    def _headers_late(self) -> None:
        self._headers_due = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            with contextlib.suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
            self.transport.close()


class _OneWrite:
    """The connection's transport, with a response head held until its body is written
    (at most until the end of the loop turn), so the two leave in one ``send``."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def write(self, data: bytes) -> None:
        if self._held is not None:
            data, self._held = self._held + data, None
        elif data.startswith(b"HTTP/1.1 "):  # a response head (h11's serialisation)
            self._held = data
            self._loop.call_soon(self._flush)
            return
        if data:
            self._transport.write(data)

    def _flush(self) -> None:
        if self._held is not None:
            data, self._held = self._held, None
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()


_RELEASE_EVERY = 8 << 20
_released_bytes = 0
_trim_pending = False


def _released(loop: asyncio.AbstractEventLoop, received: int) -> None:
    """Count what a closed connection received; past :data:`_RELEASE_EVERY`, schedule a
    collection and a trim (one pending at a time)."""
    global _released_bytes, _trim_pending
    _released_bytes += received
    if _released_bytes >= _RELEASE_EVERY and not _trim_pending:
        _trim_pending = True
        loop.call_later(1.0, _give_back)


def _give_back() -> None:
    global _released_bytes, _trim_pending
    _released_bytes = 0
    _trim_pending = False
    gc.collect()
    if _malloc_trim is not None:
        _malloc_trim(0)


def _load_malloc_trim() -> Any:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


_malloc_trim = _load_malloc_trim()
