"""One deadline per request, connect to last byte: a server that drips bytes cannot hold a run.

httpx's timeouts bound each read; a page that sends 15 bytes every few seconds never trips
them. The drip server below is a real socket server on loopback that answers a status line and
headers at once, then a few body bytes at a time, for much longer than the deadline.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from personae.tools.http import PoliteHttpClient, UnreachableError

UA = "Personae/0.1 (+https://example.org/contact)"


class DripServer:
    """Accepts connections and drips ``chunk`` every ``every`` seconds for ``total`` seconds."""

    def __init__(self, chunk: bytes = b"x" * 15, every: float = 0.2, total: float = 30.0) -> None:
        self.chunk, self.every, self.total = chunk, every, total
        self.connections = 0
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen()
        self._stop = threading.Event()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self._socket.getsockname()[1]}"

    def _drip(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            length = int(self.total / self.every) * len(self.chunk)
            head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {length}\r\n\r\n"
            try:
                connection.sendall(head.encode())
                end = time.monotonic() + self.total
                while time.monotonic() < end and not self._stop.is_set():
                    connection.sendall(self.chunk)
                    self._stop.wait(self.every)
            except OSError:
                return  # the client gave up: what the test wants

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def __enter__(self) -> DripServer:
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._socket.close()


@pytest.fixture
def drip() -> Iterator[DripServer]:
    with DripServer() as server:
        yield server


async def _no_sleep(seconds: float) -> None:
    return None


async def test_a_dripping_page_ends_at_its_deadline(drip: DripServer) -> None:
    client = PoliteHttpClient(
        user_agent=UA, cache_dir=None, allowed_hosts=[drip.host], timeout=1.0, max_retries=0
    )
    started = time.monotonic()
    async with client:
        with pytest.raises(UnreachableError, match=r"no complete answer within 1 s"):
            await client.get_text(f"http://{drip.host}/page")
    elapsed = time.monotonic() - started
    assert elapsed < 5, elapsed  # the server would have dripped for 30 s
    assert client.bytes_downloaded > 0  # it did send bytes: each read was within httpx's limit


async def test_retries_of_a_dripping_page_stay_inside_the_retry_budget(drip: DripServer) -> None:
    client = PoliteHttpClient(
        user_agent=UA,
        cache_dir=None,
        allowed_hosts=[drip.host],
        timeout=1.0,
        retry_budget=2.5,
        max_retries=10,
        backoff_base=0.01,
        sleep=_no_sleep,
    )
    started = time.monotonic()
    async with client:
        with pytest.raises(UnreachableError, match=r"after 3 attempts"):
            await client.get_text(f"http://{drip.host}/page")
    assert time.monotonic() - started < 6
    assert drip.connections == 3  # 1 s, 1 s, then the 0.5 s the budget had left
