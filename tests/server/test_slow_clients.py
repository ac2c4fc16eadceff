"""Clients that stop mid-request cannot hold the server: the key is checked before the
body is read, slow headers and slow bodies time out, connections are capped per process,
and the memory stalled uploads took is given back. Over real HTTP to ``contextfold serve``
(bounded: a few hundred sockets, seconds)."""

from __future__ import annotations

import resource
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .conftest import Served, assert_problem, start_server
from .slow_clients import open_sockets, read_until_closed, rss_mb, stalled, upload_head

STALLED = 150  # of each kind: 300 sockets in all


@pytest.fixture(scope="module", autouse=True)
def enough_descriptors() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048 and hard >= 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))


@pytest.fixture(scope="module")
def quick_timeouts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    served = start_server(tmp_path_factory.mktemp("slow"), config={"limits": {
        "requests_per_second": 0, "header_timeout_seconds": 1, "body_timeout_seconds": 2,
        "max_connections": 400, "heavy_request_bytes": 4_000_000}})
    yield served
    served.stop()


def test_key_is_checked_before_the_body(server: Served) -> None:
    r = httpx.post(f"{server.url}/v1/sessions/s/messages", content=b"{not json",
                   headers={"content-type": "application/json"})
    assert_problem(r, 401, "unauthorized")  # was 400: the body was parsed first
    # a body that never comes: the 401 does not wait for it, and the connection closes
    sock = stalled(server.url, upload_head("/v1/sessions/s/messages", 100_000), b'{"mess')
    got = read_until_closed([sock], within=5)
    sock.close()
    assert sock in got and got[sock].startswith(b"HTTP/1.1 401")


def test_stalled_headers_and_bodies_are_closed_and_memory_returns(
    quick_timeouts: Served,
) -> None:
    served, pid = quick_timeouts, quick_timeouts.process.pid
    key = served.key("uploader")
    httpx.get(f"{served.url}/healthz")
    before_rss, before_sockets = rss_mb(pid), open_sockets(pid)
    heads = [stalled(served.url, b"POST /v1/sessions/s/messages HTTP/1.1\r\nHost: 1")
             for _ in range(STALLED)]
    bodies = [stalled(served.url, upload_head("/v1/sessions/s/messages", 1_000_000, key),
                      b'{"messages": [{"role": "user", "content": "' + b"x" * 400_000)
              for _ in range(STALLED)]
    time.sleep(0.5)
    peak = rss_mb(pid)
    got = read_until_closed(heads + bodies, within=10)
    for s in heads + bodies:
        s.close()
    assert len(got) == 2 * STALLED, f"{2 * STALLED - len(got)} connections still open"
    assert all(got[s] == b"" for s in heads)  # closed without a word: no request yet
    assert all(got[s].startswith(b"HTTP/1.1 408") for s in bodies)
    assert peak - before_rss > 50  # the bodies were held while they came in
    time.sleep(2.5)  # the collection and trim run a second after the connections close
    after = rss_mb(pid)
    assert after - before_rss < 0.3 * (peak - before_rss), (before_rss, peak, after)
    assert open_sockets(pid) <= before_sockets
    assert httpx.get(f"{served.url}/healthz").status_code == 200


def test_connections_are_capped_per_process(tmp_path: Path) -> None:
    served = start_server(tmp_path, config={"limits": {
        "requests_per_second": 0, "max_connections": 20, "header_timeout_seconds": 30}})
    try:
        idle = [socket.create_connection(("127.0.0.1", int(served.url.rsplit(":", 1)[1])))
                for _ in range(25)]
        time.sleep(0.3)
        assert httpx.get(f"{served.url}/healthz").status_code == 503
        for s in idle:
            s.close()
        time.sleep(0.3)
        assert httpx.get(f"{served.url}/healthz").status_code == 200
    finally:
        served.stop()


def test_sockets_bound_by_uvicorn_itself_get_nodelay() -> None:
    """``--workers N``: uvicorn binds the listening socket (proto 0), so asyncio does not
    set TCP_NODELAY on accepted sockets; the service's protocol does (Nagle plus delayed
    ACK held each response on a kept-alive connection ~40 ms)."""
    import uvicorn

    from contextfold.server.protocol import ServiceProtocol

    seen: list[int] = []

    class Recording(ServiceProtocol):
        def connection_made(self, transport):  # type: ignore[no-untyped-def]
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=Recording, log_level="error",
                            lifespan="off")
    sock = config.bind_socket()  # as uvicorn's multiprocess supervisor does
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        port = sock.getsockname()[1]
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.05)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
            assert [http.get("/").status_code for _ in range(3)] == [200] * 3
        assert seen == [1]  # one kept-alive connection, Nagle off
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
