"""A polite async HTTP client: honest User-Agent, one request at a time per host, backoff, cache.

Wikis (Fandom above all) block bots that hammer them or hide who they are, and a profiler run
fetches dozens of pages. Every outbound request of the web tools goes through this client, so
politeness, the size cap, the public-host policy and the on-disk cache hold everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import json
import logging
import socket
import time
import weakref
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from personae.backoff import backoff_delay
from personae.backoff import parse_retry_after as parse_retry_after  # re-exported
from personae.errors import InputError, RemoteError
from personae.files import write_json_atomic
from personae.process_caches import clears_on_reset
from personae.settings import Settings, user_agent
from personae.tls import shared_ssl_context as shared_ssl_context  # re-exported

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Statuses worth retrying: rate limits and transient server errors."""
KEPT_HEADERS = ("content-type", "last-modified", "etag", "link")
"""Response headers stored in the cache."""
MAX_REDIRECTS = 5
ORIGIN_SAFE_HEADERS = frozenset({"accept", "accept-language", "content-type"})
"""Caller headers kept on a redirect to another origin; all others (``Authorization`` with the
Tavily key, cookies, API keys) were meant for the origin the caller named and are dropped."""
BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(block)
    for block in (
        # IANA IPv4 special-purpose registry: nothing here is a public web host.
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
        "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
        "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
        # IANA IPv6 special-purpose registry, plus the ranges that tunnel to an IPv4 address
        # the check cannot see (NAT64, 6to4, Teredo) and the deprecated site-local range.
        "::/127", "::/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
        "2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10",
        "fec0::/10", "ff00::/8",
    )
)  # fmt: skip
"""Address ranges never fetched, whatever a host name resolves to (``ipaddress.is_global`` is
checked as well; this list covers what it misses, such as 100.64.0.0/10 and 2002::/16)."""

Resolver = Callable[[str, int], Awaitable[list[str]]]
Sleeper = Callable[[float], Awaitable[None]]


@dataclass
class _HostGates:
    """Per-host locks and last-request times, shared by every client of one event loop."""

    locks: dict[str, asyncio.Lock]
    last_request: dict[str, float]


_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _HostGates] = (
    weakref.WeakKeyDictionary()
)
clears_on_reset("tools.http.host_gates", _GATES.clear)


def _host_gates() -> _HostGates:
    """The gates of the running loop: politeness holds across clients, not per client.

    A graph fans out searches that each open their own client; a lock held by one client
    object would let them hit the same wiki at once.
    """
    return _GATES.setdefault(asyncio.get_running_loop(), _HostGates({}, {}))


class UnreachableError(RemoteError):
    """The host could not be reached at all (DNS, refused, timeout): the network, not the URL.

    Kept apart from :class:`HttpStatusError` so callers probing a URL (is this a wiki?) can tell
    "offline" (exit 3, try again) from "answered, but not what we need" (bad input, exit 2).
    """


class TooLargeError(RemoteError):
    """The response is over the size cap: the page is skipped, never read further.

    Kept apart so callers skip that one page with a notice saying why, instead of failing a
    whole run with "try again later" (a retry gets the same page).
    """

    def __init__(self, url: str, max_bytes: int) -> None:
        super().__init__(
            f"{url} is larger than the {max_bytes:,}-byte size cap", "skipped this page"
        )
        self.url = url


class HttpStatusError(RemoteError):
    """The server answered with an error status (after retries, when retryable)."""

    def __init__(self, problem: str, fix: str | None, *, status: int, url: str) -> None:
        super().__init__(problem, fix)
        self.status = status
        self.url = url


@dataclass(frozen=True, slots=True)
class _Limits:
    """One request's size cap, attempt deadline and retry budget, and where its body goes."""

    max_bytes: int
    timeout: float
    retry_budget: float
    sink: BinaryIO | None = None
    """A file the body of a 2xx answer is streamed into (rewound for each attempt)."""


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """A successful response body with where it finally came from."""

    url: str
    """Final URL after redirects."""
    status: int
    headers: dict[str, str]
    """The kept subset of response headers (lower-case names)."""
    text: str
    from_cache: bool = False

    def json(self) -> Any:
        """The body parsed as JSON; a clear error when the server sent something else."""
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as error:
            raise RemoteError(
                f"{self.url} did not return JSON ({error.msg})",
                "check that the URL is an API endpoint",
            ) from None


async def _system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _is_public_ip(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip.version == net.version and ip in net for net in BLOCKED_NETWORKS):
        return False
    return ip.is_global and not ip.is_multicast


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), _port(parts.scheme, parts.port)


def _port(scheme: str, port: int | None) -> int:
    return port if port is not None else (443 if scheme == "https" else 80)


def _host_port_entries(hosts: Collection[str]) -> frozenset[tuple[str, int]]:
    """``(host, port)`` pairs a configured host list allows.

    ``"wiki.lan:8080"`` allows that port only; a host without a port allows the default web
    ports (80 and 443), never every port of that machine.
    """
    entries: set[tuple[str, int]] = set()
    for entry in hosts:
        parts = urlsplit(f"//{entry.strip().lower()}")
        host = parts.hostname or ""
        try:
            port = parts.port
        except ValueError:
            raise InputError(
                f"the configured host {entry!r} has an invalid port", "write it as host:port"
            ) from None
        if port is None:
            entries.update({(host, 80), (host, 443)})
        else:
            entries.add((host, port))
    return frozenset(entries)


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects to the addresses the public-host check approved, never to a fresh DNS answer.

    Resolving the name again at connect time would let a DNS server answer a public address to
    the check and a private one to the connection (DNS rebinding). TLS still verifies the
    certificate against the host name: only the TCP connection is pinned.
    """

    def __init__(self, pins: Mapping[str, list[str]]) -> None:
        self._pins = pins
        # httpcore declares AnyIOBackend twice, the second a method-less stand-in for when
        # anyio is missing (it is a dependency here); pyright reads the stand-in, mypy the class.
        backend = httpcore.AnyIOBackend()
        self._inner: httpcore.AsyncNetworkBackend = backend  # pyright: ignore[reportAttributeAccessIssue]

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.AsyncNetworkStream:
        failure: Exception | None = None
        for address in self._pins.get(host.lower(), [host]):
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                logger.info("connect failed, trying the next address: %s", error)
                failure = error
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with the connection pool on a :class:`_PinnedBackend`."""

    def __init__(self, pins: Mapping[str, list[str]]) -> None:
        context = shared_ssl_context()
        super().__init__(verify=context)  # given a context, httpx builds none of its own
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context, network_backend=_PinnedBackend(pins)
        )


class PoliteHttpClient:
    """Async HTTP with per-host serial access, retries with backoff, a size cap and a disk cache.

    Requests to one host run one at a time (an ``asyncio.Lock`` per host shared by every
    client in the event loop, plus an optional ``min_delay`` between them); different hosts run
    in parallel, at most ``max_concurrency`` transfers at once per client. ``parallel_hosts``
    are APIs built for concurrent clients (the Tavily API): their requests skip the host lock.
    Each attempt has one deadline, ``timeout`` seconds from connecting to the last byte (a
    server dripping a few bytes at a time cannot hold it longer); 429/5xx, connection errors
    and missed deadlines are retried with exponential backoff and jitter, honouring
    ``Retry-After`` (capped at ``max_backoff``), while the request's ``retry_budget`` (seconds
    from its first attempt, backoff included) lasts. Only public hosts are reachable (connections go to the address that was
    checked), except hosts listed in ``allowed_hosts`` (``"127.0.0.1:8080"`` for one port;
    ``"wiki.lan"`` for ports 80 and 443). Redirects to another origin drop the caller's
    headers but ``ORIGIN_SAFE_HEADERS``. GET 200 responses are cached on disk under
    ``cache_dir``; a rerun with the same cache sends no request it already made.
    """

    def __init__(
        self,
        *,
        user_agent: str,
        cache_dir: Path | None,
        allowed_hosts: Collection[str] = (),
        timeout: float = 20.0,
        retry_budget: float = 60.0,
        max_bytes: int = 5_000_000,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        max_backoff: float = 30.0,
        min_delay: float = 0.0,
        max_concurrency: int = 8,
        parallel_hosts: Collection[str] = (),
        cache_ttl: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: Resolver | None = None,
        sleep: Sleeper | None = None,
    ) -> None:
        if not user_agent.strip():
            raise InputError(
                "the HTTP User-Agent is empty", "set PERSONAE_CONTACT to a URL or e-mail"
            )
        self.user_agent = user_agent
        self.cache_dir = cache_dir
        self.allowed_hosts = _host_port_entries(allowed_hosts)
        self.timeout = timeout
        """Deadline of one attempt, connect to last byte, in seconds."""
        self.retry_budget = retry_budget
        """Seconds one request may spend from its first attempt, retries and backoff included."""
        self.max_bytes = max_bytes
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.max_backoff = max_backoff
        self.min_delay = min_delay
        self._slots = asyncio.Semaphore(max_concurrency)
        self.parallel_hosts = frozenset(h.lower() for h in parallel_hosts)
        self.cache_ttl = cache_ttl
        self.requests_made = 0
        """Requests actually sent (retries included)."""
        self.cache_hits = 0
        """Responses served from the disk cache."""
        self.bytes_downloaded = 0
        """Body bytes received over the network."""
        self._resolve = resolver or _system_resolver
        self._sleep = sleep or asyncio.sleep
        self._checked_hosts: set[tuple[str, int]] = set()
        self._pins: dict[str, list[str]] = {}
        """Host name -> the public addresses its check approved (what connections use)."""
        self._client = httpx.AsyncClient(
            transport=transport or _PinnedTransport(self._pins),
            timeout=httpx.Timeout(timeout),
            headers={"User-Agent": user_agent},
            follow_redirects=False,
            verify=shared_ssl_context(),  # for any transport httpx adds (proxies from the env)
        )

    @classmethod
    def from_settings(
        cls, settings: Settings, *, allowed_hosts: Collection[str] = (), **options: Any
    ) -> PoliteHttpClient:
        """A client with the User-Agent, cache directory and cache lifetime from ``settings``.

        ``allowed_hosts`` should list hosts the user configured explicitly (a ``--wiki`` URL on
        a private network); ``options`` are the other constructor arguments.
        """
        options.setdefault("cache_ttl", settings.cache_ttl)
        return cls(
            user_agent=user_agent(settings),
            cache_dir=settings.cache_dir,
            allowed_hosts=allowed_hosts,
            **options,
        )

    async def __aenter__(self) -> PoliteHttpClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def get_text(self, url: str, params: Mapping[str, Any] | None = None) -> FetchedPage:
        """GET ``url`` (cached) and return its decoded body."""
        return await self.request("GET", url, params=params, cache=True)

    async def get_json(self, url: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET ``url`` (cached) and parse the body as JSON."""
        return (await self.get_text(url, params)).json()

    async def post_json(
        self,
        url: str,
        payload: Any,
        headers: Mapping[str, str] | None = None,
        *,
        cache: bool = False,
    ) -> Any:
        """POST ``payload`` as JSON and parse the JSON answer (cached only with ``cache=True``)."""
        page = await self.request("POST", url, json_body=payload, headers=headers, cache=cache)
        return page.json()

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        cache: bool = False,
        max_bytes: int | None = None,
        timeout: float | None = None,
    ) -> FetchedPage:
        """Send one request politely; raise ``RemoteError``/``InputError`` on failure.

        ``max_bytes`` and ``timeout`` replace the client's size cap and attempt deadline for
        this request (a file listing larger than a page, a slow API).
        """
        self._check_scheme(url)
        clean_params = {k: str(v) for k, v in (params or {}).items() if v is not None}
        body = json.dumps(json_body, sort_keys=True) if json_body is not None else None
        key = self._cache_key(method, url, clean_params, body)
        if cache:
            # Disk I/O off the event loop (`langgraph dev` rejects blocking calls in async code).
            cached = await asyncio.to_thread(self._read_cache, key)
            if cached is not None:
                self.cache_hits += 1
                return cached
        limits = self._limits(max_bytes, timeout)
        page = await self._fetch(method, url, clean_params, body, dict(headers or {}), limits)
        if cache and page.status == 200:
            await asyncio.to_thread(self._write_cache, key, page)
        return page

    async def download(
        self,
        url: str,
        handle: BinaryIO,
        *,
        headers: Mapping[str, str] | None = None,
        max_bytes: int,
        timeout: float,
    ) -> FetchedPage:
        """Stream a GET of ``url`` into ``handle`` under the same rules as every request.

        Hosts, redirects (checked at every hop, caller headers such as a token dropped across
        origins), retries and politeness are those of :meth:`request`; the body of the final
        answer goes to ``handle`` (rewound for each attempt), at most ``max_bytes``
        (:class:`TooLargeError` beyond), each attempt within ``timeout`` seconds. The returned
        page has an empty ``text``.
        """
        self._check_scheme(url)
        limits = _Limits(max_bytes, timeout, max(self.retry_budget, timeout), handle)
        return await self._fetch("GET", url, {}, None, dict(headers or {}), limits)

    def _limits(self, max_bytes: int | None, timeout: float | None) -> _Limits:
        seconds = self.timeout if timeout is None else timeout
        return _Limits(
            self.max_bytes if max_bytes is None else max_bytes,
            seconds,
            max(self.retry_budget, seconds),
        )

    async def _fetch(
        self,
        method: str,
        url: str,
        params: dict[str, str],
        body: str | None,
        headers: dict[str, str],
        limits: _Limits,
    ) -> FetchedPage:
        if body is not None:
            headers.setdefault("Content-Type", "application/json")
        target = str(httpx.URL(url, params=params)) if params else url
        for hop in range(MAX_REDIRECTS + 1):
            await self._check_hop(target, hop, url)
            status, response_headers, data = await self._send_with_retries(
                method, target, body, headers, limits
            )
            location = response_headers.get("location")
            if status in (301, 302, 303, 307, 308) and location:
                previous, target = target, urljoin(target, location)
                if _origin(previous) != _origin(target):
                    headers = {k: v for k, v in headers.items() if k.lower() in ORIGIN_SAFE_HEADERS}
                if status == 303:
                    method, body = "GET", None
                continue
            return self._finish(target, status, response_headers, data)
        raise RemoteError(f"{url} redirected more than {MAX_REDIRECTS} times", "check the URL")

    async def _check_hop(self, target: str, hop: int, asked: str) -> None:
        """The host check of one hop; a redirect to a refused host is the server's doing."""
        if hop == 0:
            await self._check_host(target)
            return
        try:
            await self._check_host(target)
        except InputError as refused:
            raise RemoteError(
                f"{asked} redirected to {target[:200]}, which is refused ({refused.problem})",
                "only public hosts are fetched; report the redirect to the site",
            ) from None

    def _finish(self, url: str, status: int, headers: dict[str, str], data: bytes) -> FetchedPage:
        if not 200 <= status < 300:
            host = urlsplit(url).netloc
            raise HttpStatusError(
                f"{host} answered HTTP {status} for {url}",
                "check the URL, or try again later",
                status=status,
                url=url,
            )
        kept = {name: headers[name] for name in KEPT_HEADERS if name in headers}
        return FetchedPage(url=url, status=status, headers=kept, text=_decode(data, headers))

    async def _send_with_retries(
        self, method: str, url: str, body: str | None, headers: dict[str, str], limits: _Limits
    ) -> tuple[int, dict[str, str], bytes]:
        host = urlsplit(url).netloc.lower()
        gate = self._host_gate(host)
        async with gate:
            attempt = 0
            started = time.monotonic()
            while True:
                await self._respect_min_delay(host)
                deadline = self._deadline(started, limits)
                try:
                    status, response_headers, data = await self._send_once(
                        method, url, body, headers, deadline, limits
                    )
                except (httpx.TransportError, TimeoutError) as error:
                    wait = self._backoff(attempt, None)
                    if attempt >= self.max_retries or not self._can_wait(started, wait, limits):
                        raise UnreachableError(
                            f"cannot reach {host} ({_failure(error, deadline)}) "
                            f"after {attempt + 1} attempts",
                            "check the network and the URL",
                        ) from None
                    await self._sleep(wait)
                    attempt += 1
                    continue
                if status in RETRY_STATUSES:
                    wait = self._backoff(attempt, response_headers.get("retry-after"))
                    if attempt < self.max_retries and self._can_wait(started, wait, limits):
                        await self._sleep(wait)
                        attempt += 1
                        continue
                    raise HttpStatusError(
                        f"{host} answered HTTP {status} for {url} after {attempt + 1} attempts",
                        "try again later",
                        status=status,
                        url=url,
                    )
                return status, response_headers, data

    def _deadline(self, started: float, limits: _Limits) -> float:
        """This attempt's deadline: ``timeout``, or less when the retry budget runs out first."""
        left = started + limits.retry_budget - time.monotonic()
        return max(0.001, min(limits.timeout, left))

    def _can_wait(self, started: float, wait: float, limits: _Limits) -> bool:
        """Whether a retry after ``wait`` seconds still starts inside the retry budget."""
        return time.monotonic() + wait < started + limits.retry_budget

    async def _send_once(
        self,
        method: str,
        url: str,
        body: str | None,
        headers: dict[str, str],
        deadline: float,
        limits: _Limits,
    ) -> tuple[int, dict[str, str], bytes]:
        async with self._slots:
            # One deadline from connect to the last byte: httpx's timeouts bound each read, so
            # a server sending a few bytes every few seconds would otherwise never time out.
            async with asyncio.timeout(deadline):
                return await self._transfer(method, url, body, headers, limits)

    async def _transfer(
        self, method: str, url: str, body: str | None, headers: dict[str, str], limits: _Limits
    ) -> tuple[int, dict[str, str], bytes]:
        self.requests_made += 1
        request = self._client.build_request(method, url, content=body, headers=headers)
        response = await self._client.send(request, stream=True)
        try:
            response_headers = {k.lower(): v for k, v in response.headers.items()}
            declared = response_headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limits.max_bytes:
                raise TooLargeError(url, limits.max_bytes)
            # Only a 2xx body is the file; a redirect's or an error's stays in memory.
            sink = limits.sink if 200 <= response.status_code < 300 else None
            if sink is not None:
                await asyncio.to_thread(_rewind, sink)  # a retry starts the file again
            chunks: list[bytes] = []
            total = 0
            async for chunk in response.aiter_bytes():
                total += len(chunk)
                self.bytes_downloaded += len(chunk)
                if total > limits.max_bytes:
                    raise TooLargeError(url, limits.max_bytes)
                if sink is None:
                    chunks.append(chunk)
                else:
                    await asyncio.to_thread(sink.write, chunk)
        finally:
            await response.aclose()
            _host_gates().last_request[urlsplit(url).netloc.lower()] = time.monotonic()
        return response.status_code, response_headers, b"".join(chunks)

    def _host_gate(self, host: str) -> contextlib.AbstractAsyncContextManager[Any]:
        """The host's shared lock; no lock for a parallel (API) host."""
        if host in self.parallel_hosts:
            return contextlib.nullcontext()
        return _host_gates().locks.setdefault(host, asyncio.Lock())

    async def _respect_min_delay(self, host: str) -> None:
        last = _host_gates().last_request.get(host)
        if self.min_delay and last is not None:
            wait = last + self.min_delay - time.monotonic()
            if wait > 0:
                await self._sleep(wait)

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        return backoff_delay(
            attempt, parse_retry_after(retry_after), base=self.backoff_base, cap=self.max_backoff
        )

    def _check_scheme(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"{url!r} is not an http(s) URL", "pass a URL starting with https://")

    async def _check_host(self, url: str) -> None:
        self._check_scheme(url)
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        try:
            port = _port(parts.scheme, parts.port)
        except ValueError:
            raise InputError(f"{url!r} has an invalid port", "check the URL") from None
        if (host, port) in self.allowed_hosts or (host, port) in self._checked_hosts:
            return
        if any(host == allowed for allowed, _ in self.allowed_hosts):
            raise InputError(
                f"port {port} of {host} is not allowed (the host is configured for other ports)",
                f"configure it as {host}:{port}",
            )
        refused = InputError(
            f"{host} is not a public host",
            "only public web hosts can be fetched (or configure the host explicitly)",
        )
        if host == "localhost" or host.endswith(".localhost"):
            raise refused
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            try:
                addresses = await self._resolve(host, port)
            except OSError:
                raise UnreachableError(
                    f"cannot resolve host {host}", "check the URL and the network"
                ) from None
        if not addresses or not all(_is_public_ip(address) for address in addresses):
            raise refused
        self._pins[host] = list(dict.fromkeys(addresses))
        self._checked_hosts.add((host, port))

    def _cache_key(self, method: str, url: str, params: dict[str, str], body: str | None) -> str:
        material = json.dumps([method.upper(), url, sorted(params.items()), body])
        return hashlib.sha256(material.encode()).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / "http" / key[:2] / f"{key}.json"

    def _read_cache(self, key: str) -> FetchedPage | None:
        path = self._cache_path(key)
        if path is None or not path.is_file():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            logger.info("HTTP cache entry unreadable, fetching again: %s", error)
            return None  # a damaged entry is refetched and overwritten
        if (
            self.cache_ttl is not None
            and time.time() - float(record["fetched_at"]) > self.cache_ttl
        ):
            return None
        return FetchedPage(
            url=record["url"],
            status=record["status"],
            headers=record["headers"],
            text=record["body"],
            from_cache=True,
        )

    def _write_cache(self, key: str, page: FetchedPage) -> None:
        path = self._cache_path(key)
        if path is not None:
            record = {
                "url": page.url,
                "status": page.status,
                "headers": page.headers,
                "body": page.text,
                "fetched_at": time.time(),
            }
            write_json_atomic(path, record)


def _rewind(handle: BinaryIO) -> None:
    handle.seek(0)
    handle.truncate()


def _failure(error: Exception, timeout: float) -> str:
    """What went wrong in a few words: the error class, or the missed deadline."""
    if isinstance(error, TimeoutError):
        return f"no complete answer within {timeout:.3g} s"
    return type(error).__name__


def _decode(data: bytes, headers: Mapping[str, str]) -> str:
    content_type = headers.get("content-type", "")
    charset = "utf-8"
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            charset = value.strip('"')
    try:
        return data.decode(charset, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")
