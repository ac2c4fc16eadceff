"""A TCP proxy the tests can cut and restore (fault injection between the server and
PostgreSQL), and a fresh PostgreSQL database per test."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from tests.pg_database import fresh_database, host_and_port


@contextlib.contextmanager
def fresh_pg_database() -> Iterator[tuple[str, str, int]]:
    """(url, host, port) of a database created for the test and dropped after it."""
    with fresh_database("contextfold_srv") as url:
        yield (url, *host_and_port(url))


class TcpProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = int(self._server.getsockname()[1])
        self._up = True
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()
        self._server.close()

    def cut(self) -> None:
        """Refuse new connections and break every open one."""
        with self._lock:
            self._up = False
            for s in list(self._open):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self._open.clear()

    def restore(self) -> None:
        with self._lock:
            self._up = True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                up = self._up
            if not up:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
