"""PoliteHttpClient against real loopback servers: politeness, retries, size cap, cache, hosts."""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from personae.errors import InputError, RemoteError
from personae.loopback import LoopbackWebServer, WebRequest, WebResponse
from personae.tools import http
from personae.tools.http import HttpStatusError, PoliteHttpClient, parse_retry_after

UA = "Personae/0.1 (+https://example.org/contact)"


class InFlight:
    """A route that records the most concurrent requests it saw, and when each ran."""

    def __init__(self, hold: float = 0.05) -> None:
        self.hold = hold
        self.current = 0
        self.peak = 0
        self.spans: list[tuple[float, float]] = []
        self._lock = threading.Lock()

    def route(self, request: WebRequest) -> WebResponse:
        with self._lock:
            self.current += 1
            self.peak = max(self.peak, self.current)
        start = time.monotonic()
        time.sleep(self.hold)
        with self._lock:
            self.current -= 1
            self.spans.append((start, time.monotonic()))
        return WebResponse(200, f"<p>{request.path}</p>")


def make_client(
    server: LoopbackWebServer, cache: Path | None = None, **kw: Any
) -> PoliteHttpClient:
    host = server.url.split("//", 1)[1]
    return PoliteHttpClient(user_agent=UA, cache_dir=cache, allowed_hosts=[host], **kw)


async def test_user_agent_sent_and_body_decoded() -> None:
    with LoopbackWebServer(lambda r: WebResponse(200, "<p>héllo</p>")) as server:
        async with make_client(server) as client:
            page = await client.get_text(server.url + "/a", {"x": "1"})
    assert page.text == "<p>héllo</p>"
    assert server.requests[0].headers["User-Agent"] == UA
    assert server.requests[0].query == {"x": "1"}


async def test_serial_per_host_parallel_across_hosts() -> None:
    first, second = InFlight(), InFlight()
    with LoopbackWebServer(first.route) as one, LoopbackWebServer(second.route) as two:
        hosts = [one.url.split("//")[1], two.url.split("//")[1]]
        async with PoliteHttpClient(user_agent=UA, cache_dir=None, allowed_hosts=hosts) as client:
            urls = [f"{one.url}/p{i}" for i in range(4)] + [f"{two.url}/p{i}" for i in range(4)]
            pages = await asyncio.gather(*(client.get_text(u) for u in urls))
    assert [p.text for p in pages[:2]] == ["<p>/p0</p>", "<p>/p1</p>"]
    assert first.peak == 1 and second.peak == 1  # never two requests in flight on one host
    # the two hosts overlapped in time: some request on host two ran while host one was busy
    assert any(a0 < b1 and b0 < a1 for a0, a1 in first.spans for b0, b1 in second.spans)


async def test_host_stays_serial_across_clients_except_parallel_api_hosts() -> None:
    """A graph's fan-out opens one client per search: politeness must hold across them."""
    wiki, api = InFlight(), InFlight()
    with LoopbackWebServer(wiki.route) as one, LoopbackWebServer(api.route) as two:
        hosts = [one.url.split("//")[1], two.url.split("//")[1]]

        async def fetch(url: str) -> str:
            async with PoliteHttpClient(
                user_agent=UA, cache_dir=None, allowed_hosts=hosts, parallel_hosts=hosts[1:]
            ) as client:
                return (await client.get_text(url)).text

        urls = [f"{one.url}/w{i}" for i in range(4)] + [f"{two.url}/a{i}" for i in range(4)]
        texts = await asyncio.gather(*(fetch(u) for u in urls))
    assert texts[0] == "<p>/w0</p>" and texts[4] == "<p>/a0</p>"
    assert wiki.peak == 1  # four clients, still one request at a time on the wiki
    assert api.peak > 1  # the API host is declared parallel


def failing(
    times: int, status: int, headers: dict[str, str] | None = None
) -> Callable[[WebRequest], WebResponse]:
    count = {"n": 0}

    def route(request: WebRequest) -> WebResponse:
        count["n"] += 1
        if count["n"] <= times:
            return WebResponse(status, "busy", headers or {})
        return WebResponse(200, {"ok": True})

    return route


async def test_retry_after_is_honoured() -> None:
    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    with LoopbackWebServer(failing(2, 429, {"Retry-After": "7"})) as server:
        async with make_client(server, sleep=record, max_backoff=60.0) as client:
            assert await client.get_json(server.url + "/api") == {"ok": True}
    assert slept == [7.0, 7.0]
    assert len(server.requests) == 3 and client.requests_made == 3


async def test_retry_after_http_date_and_cap() -> None:
    assert parse_retry_after("120") == 120.0
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert parse_retry_after(date, now=1445412480.0 - 30) == pytest.approx(30.0)
    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    with LoopbackWebServer(failing(1, 503, {"Retry-After": "3600"})) as server:
        async with make_client(server, sleep=record, max_backoff=2.0) as client:
            await client.get_text(server.url + "/x")
    assert slept == [2.0]


async def test_5xx_retried_with_backoff_then_raised() -> None:
    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    with LoopbackWebServer(failing(99, 502)) as server:
        async with make_client(server, sleep=record, max_retries=3, backoff_base=0.1) as client:
            with pytest.raises(HttpStatusError) as caught:
                await client.get_text(server.url + "/x")
    assert caught.value.status == 502
    assert "answered HTTP 502" in str(caught.value) and "after 4 attempts" in str(caught.value)
    assert len(server.requests) == 4
    # exponential: 0.1, 0.2, 0.4 plus up to 50% jitter
    assert [
        round(d, 3) >= b and d <= b * 1.5 for d, b in zip(slept, (0.1, 0.2, 0.4), strict=True)
    ] == [True] * 3


async def test_404_is_not_retried() -> None:
    with LoopbackWebServer(lambda r: WebResponse(404, "gone")) as server:
        async with make_client(server) as client:
            with pytest.raises(HttpStatusError, match="answered HTTP 404"):
                await client.get_text(server.url + "/x")
    assert len(server.requests) == 1


async def test_size_cap_aborts() -> None:
    with LoopbackWebServer(lambda r: WebResponse(200, "x" * 5000)) as server:
        async with make_client(server, max_bytes=1000, cache=None) as client:
            with pytest.raises(RemoteError, match="larger than the 1,000-byte size cap"):
                await client.get_text(server.url + "/big")


async def test_size_cap_on_streamed_body_without_length() -> None:
    async def stream() -> object:
        for _ in range(10):
            yield b"y" * 500

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=stream())  # type: ignore[arg-type]

    transport = httpx.MockTransport(handler)
    async with PoliteHttpClient(
        user_agent=UA,
        cache_dir=None,
        allowed_hosts=["wiki.test"],
        max_bytes=1200,
        transport=transport,
    ) as client:
        with pytest.raises(RemoteError, match="larger than"):
            await client.get_text("https://wiki.test/x")
    assert client.bytes_downloaded <= 1500


async def test_cache_makes_second_run_send_nothing(tmp_path: Path) -> None:
    with LoopbackWebServer(lambda r: WebResponse(200, {"q": r.query})) as server:

        async def run() -> tuple[Any, Any, PoliteHttpClient]:
            async with make_client(server, cache=tmp_path) as client:
                first = await client.get_json(server.url + "/api.php", {"a": "1"})
                return first, await client.get_json(server.url + "/api.php", {"a": "2"}), client

        await run()
        first, second, client = await run()
        assert first == {"q": {"a": "1"}} and second == {"q": {"a": "2"}}
        assert len(server.requests) == 2  # the second client answered both from disk
        assert client.cache_hits == 2 and client.requests_made == 0


async def test_errors_are_not_cached(tmp_path: Path) -> None:
    with LoopbackWebServer(failing(1, 404)) as server:
        async with make_client(server, cache=tmp_path) as client:
            with pytest.raises(HttpStatusError):
                await client.get_text(server.url + "/x")
            assert (await client.get_text(server.url + "/x")).text == '{"ok": true}'
    assert len(server.requests) == 2


async def test_post_not_cached_unless_asked(tmp_path: Path) -> None:
    with LoopbackWebServer(lambda r: WebResponse(200, {"echo": r.json()})) as server:
        async with make_client(server, cache=tmp_path) as client:
            for _ in range(2):
                assert await client.post_json(server.url + "/s", {"q": 1}) == {"echo": {"q": 1}}
            for _ in range(2):
                await client.post_json(server.url + "/s", {"q": 2}, cache=True)
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:9/x",
        "http://127.0.0.1:9/x",
        "http://10.0.0.5/x",
        "http://192.168.1.1/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://100.64.0.1/x",  # shared address space (carrier NAT)
        "http://100.100.100.200/latest/meta-data",  # a cloud metadata address lives there
        "http://[2002:a9fe:a9fe::1]/x",  # 6to4 wrapping 169.254.169.254
        "http://[64:ff9b::a9fe:a9fe]/x",  # NAT64 of the same
        "http://[2001:0:a9fe:a9fe::1]/x",  # Teredo
        "http://[fd00:ec2::254]/x",  # unique-local (a cloud's IPv6 metadata address)
        "http://198.18.0.1/x",  # benchmarking
        "http://192.0.0.170/x",
        "http://0.0.0.0/x",
        "http://240.0.0.1/x",
    ],
)
async def test_private_hosts_refused(url: str) -> None:
    async with PoliteHttpClient(user_agent=UA, cache_dir=None) as client:
        with pytest.raises(InputError, match="is not a public host"):
            await client.get_text(url)
    assert client.requests_made == 0


async def test_hostname_resolving_to_private_address_refused() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "10.1.2.3"]  # one private address is enough to refuse

    async with PoliteHttpClient(user_agent=UA, cache_dir=None, resolver=resolver) as client:
        with pytest.raises(InputError, match="internal.example.com is not a public host"):
            await client.get_text("https://internal.example.com/")


async def test_public_host_allowed_and_redirect_rechecked() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return {"public.example": ["93.184.215.14"], "evil.example": ["127.0.0.1"]}[host]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/ok":
            return httpx.Response(200, text="fine")
        return httpx.Response(302, headers={"Location": "http://evil.example/steal"})

    transport = httpx.MockTransport(handler)
    async with PoliteHttpClient(
        user_agent=UA, cache_dir=None, resolver=resolver, transport=transport
    ) as client:
        assert (await client.get_text("https://public.example/ok")).text == "fine"
        # The site redirected there, not the user: a remote failure (exit 3) saying which hop.
        with pytest.raises(
            RemoteError, match="redirected to http://evil.example/steal, which is refused"
        ) as refused:
            await client.get_text("https://public.example/redirect")
    assert "evil.example is not a public host" in str(refused.value)


async def test_bad_scheme_rejected() -> None:
    async with PoliteHttpClient(user_agent=UA, cache_dir=None) as client:
        with pytest.raises(InputError, match="is not an http\\(s\\) URL"):
            await client.get_text("file:///etc/passwd")


async def test_connection_error_becomes_remote_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    transport = httpx.MockTransport(handler)
    async with PoliteHttpClient(
        user_agent=UA,
        cache_dir=None,
        allowed_hosts=["wiki.test"],
        transport=transport,
        sleep=record,
        max_retries=2,
    ) as client:
        with pytest.raises(
            RemoteError, match="cannot reach wiki.test \\(ConnectError\\) after 3 attempts"
        ):
            await client.get_text("https://wiki.test/x")
    assert len(slept) == 2


async def test_from_settings_and_min_delay(tmp_path: Path) -> None:
    from personae.settings import load_settings

    settings = load_settings(
        {"PERSONAE_CONTACT": "mailto:ops@example.org", "PERSONAE_CACHE_DIR": str(tmp_path)}
    )
    slept: list[float] = []

    async def record(delay: float) -> None:
        slept.append(delay)

    with LoopbackWebServer(lambda r: WebResponse(200, "ok")) as server:
        async with PoliteHttpClient.from_settings(
            settings, allowed_hosts=[server.url.split("//")[1]], min_delay=30.0, sleep=record
        ) as client:
            await client.get_text(server.url + "/a")
            await client.get_text(server.url + "/b")
    agent = server.requests[0].headers["User-Agent"]
    assert "mailto:ops@example.org" in agent and agent.startswith("Personae/")
    assert len(slept) == 1 and 29.0 < slept[0] <= 30.0  # the second request waited for the gap
    assert any((tmp_path / "http").rglob("*.json"))


async def test_cache_ttl_expires_entries(tmp_path: Path) -> None:
    with LoopbackWebServer(lambda r: WebResponse(200, "fresh")) as server:
        async with make_client(server, cache=tmp_path, cache_ttl=3600) as client:
            await client.get_text(server.url + "/a")
            assert (await client.get_text(server.url + "/a")).from_cache
        async with make_client(server, cache=tmp_path, cache_ttl=0) as client:
            page = await client.get_text(server.url + "/a")
    assert not page.from_cache and len(server.requests) == 2


async def test_global_concurrency_bound() -> None:
    routes = [InFlight(hold=0.05) for _ in range(3)]
    servers = [LoopbackWebServer(r.route) for r in routes]
    for server in servers:
        server.__enter__()
    active = 0
    peak = 0

    class Counting(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            try:
                return await super().handle_async_request(request)
            finally:
                active -= 1

    try:
        hosts = [s.url.split("//")[1] for s in servers]
        async with PoliteHttpClient(
            user_agent=UA,
            cache_dir=None,
            allowed_hosts=hosts,
            max_concurrency=2,
            transport=Counting(),
        ) as client:
            await asyncio.gather(
                *(client.get_text(f"{s.url}/x{i}") for s in servers for i in range(2))
            )
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    assert peak == 2  # three hosts were ready, only two transfers ran at once


async def test_connection_goes_to_the_address_that_was_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the name is resolved once, for the check, and never again to connect."""
    monkeypatch.setattr(http, "_is_public_ip", lambda address: address == "127.0.0.1")
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]  # the checked answer; the system resolver knows no such name

    with LoopbackWebServer(lambda r: WebResponse(200, f"host={r.headers['Host']}")) as server:
        port = server.url.rsplit(":", 1)[1]
        async with PoliteHttpClient(user_agent=UA, cache_dir=None, resolver=resolver) as client:
            first = await client.get_text(f"http://rebind.invalid:{port}/a")
            second = await client.get_text(f"http://rebind.invalid:{port}/b")
    assert first.text == second.text == f"host=rebind.invalid:{port}"  # name kept for the server
    assert asked == ["rebind.invalid"]


async def test_caller_headers_are_not_sent_to_another_origin_on_redirect() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/search":
            return httpx.Response(307, headers={"Location": "/moved"})
        if request.url.path == "/moved":
            return httpx.Response(307, headers={"Location": "https://other.example/collect"})
        return httpx.Response(200, json={"results": []})

    async with PoliteHttpClient(
        user_agent=UA, cache_dir=None, resolver=resolver, transport=httpx.MockTransport(handler)
    ) as client:
        await client.post_json(
            "https://api.tavily.example/search", {"q": 1}, {"Authorization": "Bearer tvly-KEY"}
        )
    assert [r.url.host for r in seen] == ["api.tavily.example"] * 2 + ["other.example"]
    assert [r.headers.get("Authorization") for r in seen] == ["Bearer tvly-KEY"] * 2 + [None]
    assert seen[2].headers["Content-Type"] == "application/json"  # safe headers kept


async def test_configured_host_without_port_allows_only_the_web_ports() -> None:
    with LoopbackWebServer(lambda r: WebResponse(200, "private admin page")) as server:
        host, port = server.url.split("//")[1].split(":")
        async with PoliteHttpClient(user_agent=UA, cache_dir=None, allowed_hosts=[host]) as client:
            with pytest.raises(InputError, match=f"port {port} of {host} is not allowed"):
                await client.get_text(server.url + "/")
        async with PoliteHttpClient(
            user_agent=UA, cache_dir=None, allowed_hosts=[f"{host}:{port}"]
        ) as client:
            assert (await client.get_text(server.url + "/")).text == "private admin page"
    assert len(server.requests) == 1


def test_every_client_shares_the_process_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """One TLS context per process: a new client loads no CA bundle (25-55 ms of CPU each)."""
    context = http.shared_ssl_context()
    loads: list[Any] = []
    real_load = ssl.SSLContext.load_verify_locations

    def counting_load(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        real_load(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting_load)
    clients = [PoliteHttpClient(user_agent=UA, cache_dir=None) for _ in range(3)]
    assert loads == []
    pools = [client._client._transport._pool for client in clients]  # type: ignore[attr-defined]
    assert all(pool._ssl_context is context for pool in pools)
    assert http.shared_ssl_context() is context
