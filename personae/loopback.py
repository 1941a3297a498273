"""A real HTTP server on loopback that plays the remote web in tests and benchmarks."""

from __future__ import annotations

import json as _json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class WebRequest:
    """A request the loopback server received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return _json.loads(self.body or b"null")


@dataclass
class WebResponse:
    """What a route answers."""

    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        """Body bytes and headers with a content type."""
        headers = dict(self.headers)
        if isinstance(self.body, dict | list):
            headers.setdefault("Content-Type", "application/json")
            return _json.dumps(self.body).encode(), headers
        if isinstance(self.body, str):
            headers.setdefault("Content-Type", "text/html; charset=utf-8")
            return self.body.encode(), headers
        return self.body, headers


Route = Callable[[WebRequest], WebResponse]


class _QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that says nothing when a client hangs up.

    Clients that give up on a page (size caps, deadlines, kill -9 tests) are what the tests
    are about, not a fixture error.
    """

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def free_port() -> int:
    """A loopback port nothing listens on: for a server a test starts, or an unreachable URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LoopbackWebServer:
    """A real HTTP server on 127.0.0.1 that plays the remote web (Tavily, wikis, pages).

    ``route(request)`` answers every request; all requests are recorded in ``requests`` so
    tests can assert what the client sent (User-Agent, serial access, cache hits). ``latency``
    adds a delay per request for benchmarks; ``port`` 0 takes a free one. Use as a context
    manager.
    """

    def __init__(self, route: Route, *, latency: float = 0.0, port: int = 0) -> None:
        self.route = route
        self.latency = latency
        self.requests: list[WebRequest] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                request = WebRequest(self.command, parts.path, query, dict(self.headers), body)
                with server._lock:
                    server.requests.append(request)
                if server.latency:
                    time.sleep(server.latency)
                try:
                    response = server.route(request)
                except Exception as error:  # a broken fixture must be visible, not a hang
                    response = WebResponse(500, f"fixture error: {error!r}")
                payload, headers = response.encoded()
                try:
                    self.send_response(response.status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client died (kill -9 tests): not ours

            do_GET = _serve
            do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = _QuietServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> LoopbackWebServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
