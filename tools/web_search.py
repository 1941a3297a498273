"""Tavily web search returning clean passages (``WebSearcher``), with the API's sharp edges handled.

Tavily rejects queries over 400 characters, ignores ``site:`` operators (domains go in
``include_domains``), bills per search and sometimes returns results without content. The
profiler should not have to know any of that: it asks a question and gets citable passages.
Requests go through ``PoliteHttpClient`` (retries on 429/5xx, public hosts only for page fetches).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Collection, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from personae.errors import ConfigurationError, InputError, PersonaeError, RemoteError
from personae.settings import DEFAULT_TAVILY_BASE_URL, Settings
from personae.tools.evidence import Evidence, is_web_url
from personae.tools.http import HttpStatusError, PoliteHttpClient, TooLargeError
from personae.tools.page_text import cut_at_word, extract_main_text

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 400
"""Tavily rejects longer queries."""
CREDITS = {"basic": 1, "advanced": 2}
"""Credits billed per search, by depth."""
_SITE = re.compile(r"(?<!\S)-?site:(\S+)", re.IGNORECASE)

SearchDepth = Literal["basic", "advanced"]


def normalize_url(url: str) -> str:
    """A comparable form of ``url``: lower-case scheme and host, no default port, fragment or trailing slash."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is not None and (scheme, port) not in {("http", 80), ("https", 443)}:
        host = f"{host}:{port}"
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, host, path, parts.query, ""))


def split_site_operators(query: str) -> tuple[str, list[str]]:
    """Move ``site:domain`` operators out of ``query``; returns the query and the domains."""
    domains = [
        m.group(1).strip("/").lower()
        for m in _SITE.finditer(query)
        if not m.group(0).startswith("-")
    ]
    cleaned = re.sub(r"\s+", " ", _SITE.sub(" ", query)).strip()
    return cleaned, domains


def prepare_query(query: str) -> tuple[str, list[str]]:
    """The query as Tavily accepts it (no ``site:``, at most 400 chars) and its domains."""
    cleaned, domains = split_site_operators(query)
    if not cleaned:
        raise InputError(f"the search query {query!r} is empty", "give the search some words")
    return cut_at_word(cleaned, MAX_QUERY_CHARS), domains


class TavilySearch:
    """Web search through the Tavily API, implementing ``personae.tools.sources.WebSearcher``.

    Counts ``searches`` and ``credits_used`` (basic 1, advanced 2; cached answers cost nothing).
    Results whose URL is in ``exclude_urls`` (compared normalised) are left out; results that
    are not an object, or whose URL is not http(s) with a host and a valid port, are dropped
    and counted (``results_dropped``); results without content get their page fetched and its
    main text extracted in a worker thread (public hosts only). A page over the size cap is
    skipped, with a line in ``notices`` saying so.
    """

    def __init__(
        self,
        *,
        api_key: str | None,
        http: PoliteHttpClient,
        base_url: str = DEFAULT_TAVILY_BASE_URL,
        search_depth: SearchDepth = "basic",
        fetch_missing_content: bool = True,
        max_content_chars: int = 4000,
        raw_content_results: int = 0,
        cache: bool = False,
    ) -> None:
        if not api_key:
            raise ConfigurationError(
                "TAVILY_API_KEY is not set", "set TAVILY_API_KEY or search wikis only"
            )
        if search_depth not in CREDITS:
            raise ConfigurationError(
                f"unknown Tavily search depth {search_depth!r}", "use basic or advanced"
            )
        self.api_key = api_key
        self.http = http
        self.base_url = base_url.rstrip("/")
        self.search_depth: SearchDepth = search_depth
        self.fetch_missing_content = fetch_missing_content
        self.max_content_chars = max_content_chars
        self.raw_content_results = raw_content_results
        """The top results whose full page text (``raw_content``) is kept instead of the
        snippet; the text, not the number of results, is what gets capped."""
        self.cache = cache
        self.searches = 0
        """Searches sent to Tavily (cached answers excluded)."""
        self.credits_used = 0
        """Tavily credits spent."""
        self.pages_fetched = 0
        """Result pages fetched because Tavily returned no content."""
        self.results_dropped = 0
        """Results dropped: not an object, or a URL that is not http(s) with a valid port."""
        self.notices: list[str] = []
        """What the user should know about this client's searches (pages skipped, and why)."""

    @classmethod
    def from_settings(
        cls, settings: Settings, *, http: PoliteHttpClient, **options: Any
    ) -> TavilySearch:
        """A client for ``TAVILY_API_KEY``/``TAVILY_BASE_URL`` from ``settings``."""
        return cls(
            api_key=settings.tavily_api_key, base_url=settings.tavily_base_url, http=http, **options
        )

    async def search(
        self,
        query: str,
        *,
        max_results: int = 5,
        include_domains: Sequence[str] = (),
        exclude_urls: Collection[str] = (),
    ) -> list[Evidence]:
        """Search the web; returns up to ``max_results`` passages not in ``exclude_urls``."""
        text, site_domains = prepare_query(query)
        domains = list(dict.fromkeys([*include_domains, *site_domains]))
        excluded = {normalize_url(u) for u in exclude_urls}
        payload: dict[str, Any] = {
            "query": text,
            "search_depth": self.search_depth,
            "max_results": min(20, max_results + min(len(excluded), 5)),
            "include_answer": False,
            "include_raw_content": self.raw_content_results > 0,
        }
        if domains:
            payload["include_domains"] = domains
        answer = await self._post(payload)
        fresh = self._keep_new(answer.get("results"), excluded)[:max_results]
        passages = await asyncio.gather(
            *(
                self._to_evidence(item, query, raw=rank < self.raw_content_results)
                for rank, item in enumerate(fresh)
            )
        )
        return [p for p in passages if p is not None]

    async def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        try:
            page = await self.http.request(
                "POST",
                f"{self.base_url}/search",
                json_body=payload,
                headers=headers,
                cache=self.cache,
            )
        except HttpStatusError as error:
            raise _tavily_error(error) from None
        if not page.from_cache:
            self.searches += 1
            self.credits_used += CREDITS[self.search_depth]
        answer = page.json()
        if not isinstance(answer, dict):
            raise RemoteError("Tavily returned an unexpected answer", "check TAVILY_BASE_URL")
        return answer

    def _keep_new(self, results: Any, excluded: set[str]) -> list[dict[str, Any]]:
        if results is None:
            return []
        if not isinstance(results, list):
            raise RemoteError("Tavily's answer holds no result list", "check TAVILY_BASE_URL")
        seen = set(excluded)
        kept = []
        for item in results:
            url = item.get("url") if isinstance(item, dict) else None
            if not (isinstance(url, str) and is_web_url(url)):
                # Not an object, javascript:/data:/file:, a port out of range: never a source.
                self.results_dropped += 1
                continue
            key = normalize_url(url)
            if key not in seen:
                seen.add(key)
                kept.append(item)
        return kept

    async def _to_evidence(
        self, item: dict[str, Any], query: str, *, raw: bool = False
    ) -> Evidence | None:
        url = str(item["url"])
        snippet = _text(item.get("content"))
        full = _text(item.get("raw_content"))
        content = (full or snippet) if raw else (snippet or full)
        if not content and self.fetch_missing_content:
            content = await self._fetch_text(url)
        if not content:
            return None
        title = _text(item.get("title")) or url
        return Evidence(
            url=url,
            title=title,
            content=cut_at_word(content, self.max_content_chars),
            origin="web",
            query=query,
        )

    async def _fetch_text(self, url: str) -> str:
        try:
            page = await self.http.get_text(url)
        except TooLargeError as error:
            self.notices.append(f"skipped a search result: {error.problem}")
            return ""
        except PersonaeError as error:
            logger.info("result page not fetched, no passage: %s", error)
            return ""  # an unreachable or refused page just yields no passage
        self.pages_fetched += 1
        # Parsing a page of a few MB takes seconds: never on the event loop.
        return await asyncio.to_thread(
            extract_main_text, page.text, max_chars=self.max_content_chars
        )


def _text(value: Any) -> str:
    """A result field as text: results are untrusted, and a number or object is not a passage."""
    return value.strip() if isinstance(value, str) else ""


def _tavily_error(error: HttpStatusError) -> PersonaeError:
    if error.status == 401:
        return ConfigurationError(
            "TAVILY_API_KEY is invalid (Tavily answered 401)", "check the key at app.tavily.com"
        )
    if error.status == 432:
        return RemoteError(
            "Tavily plan limit reached (HTTP 432)",
            "upgrade the Tavily plan or wait for the next cycle",
        )
    if error.status == 429:
        return RemoteError(
            "Tavily usage limit exceeded (HTTP 429) after retries",
            "wait and rerun, or lower the search budget",
        )
    if error.status == 400:
        return InputError(
            "Tavily rejected the search request (HTTP 400)", "check the query and domains"
        )
    return RemoteError(
        f"Tavily failed with HTTP {error.status}", "try again later or check TAVILY_BASE_URL"
    )
