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

import html as _html
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from bs4 import BeautifulSoup, Tag

from personae.loopback import WebRequest, WebResponse

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


def normalize_title(title: str) -> str:
    """MediaWiki title normalisation: underscores to spaces, collapsed spaces, first letter upper."""
    title = re.sub(r"[\s_]+", " ", unquote(title)).strip()
    return title[:1].upper() + title[1:]


class FakeMediaWiki:
    """A MediaWiki (Fandom-like) site: Action API at ``api_path`` and article pages at ``/wiki/``.

    ``pages`` maps titles to HTML: either an article fragment (what ``action=parse`` returns) or
    a full saved page (``<html>…``), whose ``.mw-parser-output`` becomes the parse text.
    ``redirects`` maps alias titles to targets. ``search_hits`` pins ``list=search`` results per
    query; otherwise search matches pages containing every query word (title or text), best
    first. Supported: ``meta=siteinfo``, ``list=search`` (with ``sroffset`` continuation),
    ``action=parse`` (``redirects=1``, ``error.code = missingtitle``), ``GET /wiki/<Title>``.
    ``mount`` is a path prefix when a combiner serves the wiki under a sub-path.
    """

    def __init__(
        self,
        pages: Mapping[str, str],
        *,
        api_path: str = "/api.php",
        redirects: Mapping[str, str] | None = None,
        search_hits: Mapping[str, list[str]] | None = None,
        sitename: str = "Fake Wiki",
    ) -> None:
        self.pages = {normalize_title(t): h for t, h in pages.items()}
        self.api_path = api_path
        self.redirects = {
            normalize_title(a): normalize_title(b) for a, b in (redirects or {}).items()
        }
        self.search_hits = dict(search_hits or {})
        self.sitename = sitename
        self.mount = ""
        self.search_batch = 50
        """Most hits per ``list=search`` answer (real wikis cap ``srlimit``); lower it to force continuation."""
        self.calls: list[dict[str, str]] = []
        self.announce_api = True
        """Article pages carry ``<link rel="EditURI">`` pointing at the API, as MediaWiki's do."""
        self.server_url = ""
        """Absolute origin put in the EditURI link (empty: a root-relative link)."""
        self._failures = _Failures()

    def fail_next(self, times: int, status: int = 500, retry_after: str | None = None) -> None:
        """Make the next ``times`` requests fail with ``status``."""
        self._failures.fail_next(times, status, retry_after)

    def route(self, request: WebRequest) -> WebResponse:
        """Serve one request addressed to this wiki (path without ``mount``)."""
        failure = self._failures.take()
        if failure is not None:
            return failure
        if request.path == self.api_path:
            self.calls.append(dict(request.query))
            return WebResponse(200, self._api(request))
        if request.path.startswith("/wiki/"):
            return self._article(normalize_title(request.path[len("/wiki/") :]))
        return WebResponse(404, "<html><body><h1>Not Found</h1></body></html>")

    def _server(self, request: WebRequest) -> str:
        headers = {k.lower(): v for k, v in request.headers.items()}
        return f"http://{headers.get('host', '127.0.0.1')}"

    def _api(self, request: WebRequest) -> dict[str, Any]:
        query = request.query
        action = query.get("action", "")
        if action == "query" and query.get("meta") == "siteinfo":
            return self._siteinfo(request)
        if action == "query" and query.get("list") == "search":
            return self._search(query)
        if action == "parse":
            return self._parse(query)
        return {
            "error": {
                "code": "badvalue",
                "info": f'Unrecognized value for parameter "action": {action}.',
            }
        }

    def _siteinfo(self, request: WebRequest) -> dict[str, Any]:
        server = self._server(request)
        script_dir = self.mount + self.api_path.rsplit("/", 1)[0]
        return {
            "batchcomplete": True,
            "query": {
                "general": {
                    "mainpage": "Main Page",
                    "base": f"{server}{self.mount}/wiki/Main_Page",
                    "sitename": self.sitename,
                    "generator": "MediaWiki 1.39.7",
                    "lang": "en",
                    "server": server,
                    "articlepath": f"{self.mount}/wiki/$1",
                    "scriptpath": script_dir,
                    "script": f"{script_dir}/index.php",
                }
            },
        }

    def _search(self, query: Mapping[str, str]) -> dict[str, Any]:
        text = query.get("srsearch", "")
        limit = min(int(query.get("srlimit") or 10), self.search_batch)
        offset = int(query.get("sroffset") or 0)
        titles = self._search_titles(text)
        page = titles[offset : offset + limit]
        hits = [
            {
                "ns": 0,
                "title": title,
                "pageid": self._pageid(title),
                "size": len(self.pages.get(title, "")),
                "wordcount": len(self._plain(title).split()),
                "snippet": self._snippet(title, text),
                "timestamp": "2024-01-01T00:00:00Z",
            }
            for title in page
        ]
        answer: dict[str, Any] = {
            "batchcomplete": True,
            "query": {"searchinfo": {"totalhits": len(titles)}, "search": hits},
        }
        if offset + limit < len(titles):
            answer["continue"] = {"sroffset": offset + limit, "continue": "-||"}
        return answer

    def _search_titles(self, text: str) -> list[str]:
        if text in self.search_hits:
            return [normalize_title(t) for t in self.search_hits[text]]
        words = [w.casefold() for w in re.findall(r"\w+", text)]
        scored = []
        for title in self.pages:
            haystack = f"{title} {self._plain(title)}".casefold()
            if words and all(w in haystack for w in words):
                in_title = sum(w in title.casefold() for w in words)
                scored.append((-in_title, -sum(haystack.count(w) for w in words), title))
        return [title for *_, title in sorted(scored)]

    def _parse(self, query: Mapping[str, str]) -> dict[str, Any]:
        title = normalize_title(query.get("page", ""))
        redirects = []
        if query.get("redirects") and title in self.redirects:
            redirects.append({"from": title, "to": self.redirects[title]})
            title = self.redirects[title]
        if title not in self.pages:
            return {
                "error": {
                    "code": "missingtitle",
                    "info": "The page you specified doesn't exist.",
                    "docref": "See /api.php for API usage.",
                }
            }
        fragment = self._fragment(title)
        parsed: dict[str, Any] = {
            "title": title,
            "pageid": self._pageid(title),
            "redirects": redirects,
        }
        props = set(query.get("prop", "text|sections|displaytitle").split("|"))
        if "text" in props:
            parsed["text"] = fragment
        if "sections" in props:
            parsed["sections"] = self._sections(title, fragment)
        if "displaytitle" in props:
            parsed["displaytitle"] = _html.escape(title)
        return {"parse": parsed}

    def _article(self, title: str) -> WebResponse:
        if title in self.redirects:
            target = quote(self.redirects[title].replace(" ", "_"))
            return WebResponse(301, "", {"Location": f"{self.mount}/wiki/{target}"})
        if title not in self.pages:
            return WebResponse(
                404, "<html><body><h1>There is currently no text in this page.</h1></body></html>"
            )
        raw = self.pages[title]
        if "<html" in raw[:2000].lower():
            return WebResponse(200, raw)
        api = f"{self.server_url}{self.mount}{self.api_path}?action=rsd"
        head = (
            f'<link rel="EditURI" type="application/rsd+xml" href="{_html.escape(api)}"/>'
            if self.announce_api
            else ""
        )
        page = (
            f"<!DOCTYPE html><html><head><title>{_html.escape(title)} | {_html.escape(self.sitename)}"
            f'</title>{head}</head><body><h1 id="firstHeading" class="page-header__title">'
            f'{_html.escape(title)}</h1><div id="mw-content-text">{self._fragment(title)}</div>'
            "</body></html>"
        )
        return WebResponse(200, page)

    def _fragment(self, title: str) -> str:
        raw = self.pages[title]
        if "<html" in raw[:2000].lower():
            soup = BeautifulSoup(raw, "lxml")
            output = soup.select_one("#mw-content-text .mw-parser-output") or soup.body
            return str(output) if output is not None else ""
        if "mw-parser-output" in raw[:500]:
            return raw
        return f'<div class="mw-parser-output">{raw}</div>'

    def _sections(self, title: str, fragment: str) -> list[dict[str, Any]]:
        soup = BeautifulSoup(fragment, "lxml")
        for box in soup.select("aside.portable-infobox"):
            box.decompose()
        sections = []
        for number, heading in enumerate(soup.find_all(["h2", "h3"]), start=1):
            assert isinstance(heading, Tag)
            line = heading.get_text(" ", strip=True).replace("[edit]", "").strip()
            anchor = line.replace(" ", "_")
            sections.append(
                {
                    "toclevel": 1 if heading.name == "h2" else 2,
                    "level": heading.name[1],
                    "line": line,
                    "number": str(number),
                    "index": str(number),
                    "fromtitle": title.replace(" ", "_"),
                    "byteoffset": None,
                    "anchor": anchor,
                    "linkAnchor": anchor,
                }
            )
        return sections

    def _plain(self, title: str) -> str:
        raw = self.pages.get(title, "")
        return BeautifulSoup(raw, "lxml").get_text(" ", strip=True) if raw else ""

    def _snippet(self, title: str, text: str) -> str:
        plain = _html.escape(self._plain(title)[:180])
        for word in set(re.findall(r"\w+", text)):
            plain = re.sub(
                rf"(?i)\b({re.escape(word)})\b", r'<span class="searchmatch">\1</span>', plain
            )
        return plain

    def _pageid(self, title: str) -> int:
        return 1000 + sorted(self.pages).index(title) if title in self.pages else 0


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
