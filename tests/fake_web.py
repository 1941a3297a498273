"""Fake Tavily and MediaWiki services for ``LoopbackWebServer``, so our real clients run in tests.

The remote web is faked at the HTTP boundary only: the Tavily client, the MediaWiki client and
the polite HTTP client all run unchanged against these routes. Responses copy the real shapes
(Tavily ``POST /search``; MediaWiki Action API with ``formatversion=2``).

Example::

    from fake_web import FakeMediaWiki, FakeTavily, FakeWeb
    from personae.loopback import LoopbackWebServer

    wiki = FakeMediaWiki({"Toki": "<p>Toki is the second brother.</p>"},
                         redirects={"Toki (Hokuto)": "Toki"})
    tavily = FakeTavily({"Toki fist of the north star": [
        {"url": "https://example.org/toki", "title": "Toki", "content": "A healer."}]})
    with LoopbackWebServer(FakeWeb(tavily=tavily, wiki=wiki).route) as server:
        ...  # Tavily at server.url, the wiki at server.url (API: /api.php, pages: /wiki/Toki)

Kept importable without pytest (benchmarks use it too).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from personae.loopback import WebRequest, WebResponse
from personae.sample_wiki import MediaWikiSite

TavilyResults = (
    Mapping[str, list[dict[str, Any]]] | Callable[[dict[str, Any]], list[dict[str, Any]]]
)


class _Failures:
    """Answer the next ``n`` requests with an error status (for retry tests)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[tuple[int, dict[str, str]]] = []

    def fail_next(self, times: int, status: int = 500, retry_after: str | None = None) -> None:
        """Make the next ``times`` requests fail with ``status`` (optional ``Retry-After``)."""
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        with self._lock:
            self._pending.extend([(status, headers)] * times)

    def take(self) -> WebResponse | None:
        """The queued failure for this request, if any."""
        with self._lock:
            if not self._pending:
                return None
            status, headers = self._pending.pop(0)
        return WebResponse(status, {"detail": {"error": f"fake failure {status}"}}, headers)


def _host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _domain_matches(url: str, domains: list[str]) -> bool:
    host = _host_of(url)
    return any(host == d.lower() or host.endswith("." + d.lower()) for d in domains)


class FakeTavily:
    """Answers ``POST /search`` like the Tavily API and records every payload in ``queries``.

    ``results`` maps a query string to its results (each ``{"url","title","content"}`` plus
    optional ``score``/``raw_content``), or is a function of the request payload. The fake applies
    ``include_domains``, ``exclude_domains`` and ``max_results`` like the real service. With
    ``api_key`` set, requests without ``Authorization: Bearer <api_key>`` (or a matching
    ``api_key`` field) get a 401. ``fail_next(n, status)`` queues failures (429/432/5xx).
    """

    def __init__(self, results: TavilyResults, *, api_key: str | None = None) -> None:
        self.results = results
        self.api_key = api_key
        self.queries: list[dict[str, Any]] = []
        self._failures = _Failures()

    def fail_next(self, times: int, status: int = 429, retry_after: str | None = None) -> None:
        """Make the next ``times`` searches fail with ``status``."""
        self._failures.fail_next(times, status, retry_after)

    def route(self, request: WebRequest) -> WebResponse:
        """Serve one request (only ``POST /search``)."""
        if request.method != "POST" or request.path.rstrip("/") != "/search":
            return WebResponse(404, {"detail": {"error": "Not Found"}})
        failure = self._failures.take()
        if failure is not None:
            return failure
        payload = request.json() or {}
        if self.api_key is not None and not self._authorised(request, payload):
            return WebResponse(
                401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}
            )
        if len(str(payload.get("query", ""))) > 400:
            return WebResponse(
                400, {"detail": {"error": "Query is too long. Max query length is 400 characters."}}
            )
        self.queries.append(payload)
        return WebResponse(200, self._answer(payload))

    def _authorised(self, request: WebRequest, payload: dict[str, Any]) -> bool:
        headers = {k.lower(): v for k, v in request.headers.items()}
        return (
            headers.get("authorization") == f"Bearer {self.api_key}"
            or payload.get("api_key") == self.api_key
        )

    def _answer(self, payload: dict[str, Any]) -> dict[str, Any]:
        query = str(payload.get("query", ""))
        if callable(self.results):
            found = list(self.results(payload))
        else:
            found = list(self.results.get(query, []))
        include = list(payload.get("include_domains") or [])
        exclude = list(payload.get("exclude_domains") or [])
        if include:
            found = [r for r in found if _domain_matches(r["url"], include)]
        if exclude:
            found = [r for r in found if not _domain_matches(r["url"], exclude)]
        found = found[: int(payload.get("max_results") or 5)]
        results = []
        for rank, item in enumerate(found):
            result = {
                "url": item["url"],
                "title": item.get("title", ""),
                "content": item.get("content", ""),
                "score": item.get("score", round(0.9 - 0.05 * rank, 3)),
                "raw_content": item.get("raw_content")
                if payload.get("include_raw_content")
                else None,
            }
            results.append(result)
        return {
            "query": query,
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": results,
            "response_time": 0.01,
        }


class FakeMediaWiki(MediaWikiSite):
    """:class:`~personae.sample_wiki.MediaWikiSite` with failures on demand (retry tests)."""

    def __init__(self, pages: Mapping[str, str], **options: Any) -> None:
        super().__init__(pages, **options)
        self._failures = _Failures()

    def fail_next(self, times: int, status: int = 500, retry_after: str | None = None) -> None:
        """Make the next ``times`` requests fail with ``status``."""
        self._failures.fail_next(times, status, retry_after)

    def route(self, request: WebRequest) -> WebResponse:
        """Serve one request, or the queued failure."""
        failure = self._failures.take()
        return failure if failure is not None else super().route(request)


class FakeWeb:
    """One route serving Tavily, any number of wikis and arbitrary pages from one loopback server.

    ``wiki`` is served at the server root; ``wikis`` maps path prefixes (``"/hokuto"``) to more
    wikis (their base URL is ``server.url + prefix``); ``pages`` maps exact paths to HTML or to a
    ``WebResponse``. ``POST /search`` goes to ``tavily``. Anything else is a 404.
    """

    def __init__(
        self,
        *,
        tavily: FakeTavily | None = None,
        wiki: FakeMediaWiki | None = None,
        wikis: Mapping[str, FakeMediaWiki] | None = None,
        pages: Mapping[str, str | WebResponse] | None = None,
    ) -> None:
        self.tavily = tavily
        self.wiki = wiki
        self.wikis = {"/" + prefix.strip("/"): w for prefix, w in (wikis or {}).items()}
        for prefix, mounted in self.wikis.items():
            mounted.mount = prefix
        self.pages = dict(pages or {})

    def route(self, request: WebRequest) -> WebResponse:
        """Dispatch one request to the service that owns its path."""
        if (
            self.tavily is not None
            and request.method == "POST"
            and request.path.rstrip("/") == "/search"
        ):
            return self.tavily.route(request)
        if request.path in self.pages:
            page = self.pages[request.path]
            return page if isinstance(page, WebResponse) else WebResponse(200, page)
        for prefix, mounted in self.wikis.items():
            if request.path.startswith(prefix + "/"):
                inner = WebRequest(
                    request.method,
                    request.path[len(prefix) :],
                    request.query,
                    request.headers,
                    request.body,
                )
                return mounted.route(inner)
        if self.wiki is not None:
            return self.wiki.route(request)
        return WebResponse(404, "<html><body><h1>Not Found</h1></body></html>")
