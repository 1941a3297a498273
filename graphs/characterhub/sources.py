"""Builds the profiler's web and wiki clients from its run context (and the settings it holds).

The only place the profiler graph touches the outside world. Hosts the user configured
explicitly (a pinned ``--wiki`` URL, ``TAVILY_BASE_URL``) are allowed even on a private network;
everything else goes through ``PoliteHttpClient``'s public-host policy. Keys come from the
settings the context was built with, never from graph state (so they never land in a
checkpoint).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from personae.errors import InputError, RemoteError
from personae.process_caches import clears_on_reset
from personae.settings import user_agent
from personae.tools.evidence import Evidence
from personae.tools.http import PoliteHttpClient, TooLargeError
from personae.tools.web_search import TavilySearch
from personae.tools.wiki import MediaWikiClient, WikiPageNotFound
from personae.tools.wiki_discovery import open_wiki
from personae.tools.wiki_page import WikiPage
from personae.urls import web_url

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from personae.graphs.characterhub.state import ProfilerContext, SearchTool

WEB_DISABLED_NOTICE = (
    "web search disabled: TAVILY_API_KEY is not set; profiling from the wiki alone"
)
NO_WEB_NOTICE = "web search disabled by --no-web (web_search=false); profiling from the wiki alone"


def web_disabled_notice(context: ProfilerContext) -> str:
    """Why web search is off: the user asked (``--no-web``) or there is no Tavily key."""
    return WEB_DISABLED_NOTICE if context.web_search else NO_WEB_NOTICE


_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)
clears_on_reset("graphs.characterhub.sources.search_slots", _SLOTS.clear)


@dataclass
class SearchOutcome:
    """What one (query, tool) search returned and cost."""

    evidence: list[Evidence] = field(default_factory=list)
    searches: int = 0
    credits: int = 0
    pages_fetched: int = 0
    results_dropped: int = 0
    """Web results that were not an object or had no usable http(s) URL."""
    notices: list[str] = field(default_factory=list)
    """Pages skipped, and why (over the size cap)."""
    error: str | None = None


def web_search_enabled(context: ProfilerContext) -> bool:
    """True when web search is wanted and ``TAVILY_API_KEY`` is set."""
    return context.web_search and bool(context.tavily_api_key)


def _configured_hosts(*urls: str | None) -> list[str]:
    return [urlsplit(u).netloc for u in urls if u and urlsplit(u).netloc]


def make_http(context: ProfilerContext, wiki_url: str | None) -> PoliteHttpClient:
    """A polite HTTP client allowing the hosts the user configured explicitly.

    Wiki and result-page hosts get one request at a time across all the run's searches; the
    Tavily API, built for concurrent clients, does not.
    """
    template_host = web_url(
        context.fandom_template.replace("{slug}", "x"),
        "PERSONAE_FANDOM_TEMPLATE",
        "https://{slug}.fandom.com",
    )
    return PoliteHttpClient(
        user_agent=user_agent(context.contact),
        cache_dir=Path(context.cache_dir) if context.cache_dir else None,
        cache_ttl=context.cache_ttl_seconds,
        allowed_hosts=_configured_hosts(wiki_url, context.tavily_base_url, template_host),
        parallel_hosts=_configured_hosts(context.tavily_base_url),
    )


def search_slots(concurrency: int) -> asyncio.Semaphore:
    """The semaphore bounding concurrent searches of this event loop at ``concurrency``."""
    per_loop = _SLOTS.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault(max(1, concurrency), asyncio.Semaphore(max(1, concurrency)))


async def search_once(
    tool: SearchTool, query: str, wiki_url: str | None, context: ProfilerContext
) -> SearchOutcome:
    """Run one search through the real client; remote failures are recorded, not raised."""
    async with search_slots(context.search_concurrency), make_http(context, wiki_url) as http:
        try:
            if tool == "web":
                web = TavilySearch(
                    api_key=context.tavily_api_key,
                    http=http,
                    base_url=context.tavily_base_url,
                    search_depth=context.search_depth,
                    raw_content_results=context.raw_content_results,
                    max_content_chars=context.passage_chars,
                )
                try:
                    found = await web.search(
                        query, max_results=context.max_results, exclude_urls=context.exclude_urls
                    )
                finally:
                    dropped, notices = web.results_dropped, web.notices
                return SearchOutcome(
                    found,
                    web.searches,
                    web.credits_used,
                    web.pages_fetched,
                    results_dropped=dropped,
                    notices=notices,
                )
            if wiki_url is None:
                return SearchOutcome()
            wiki = MediaWikiClient(wiki_url, http=http, passage_chars=context.passage_chars)
            found = await wiki.search(
                query, limit=context.max_results, exclude_urls=context.exclude_urls
            )
            return SearchOutcome(found, searches=1, notices=wiki.notices)
        except (RemoteError, InputError) as error:
            # Offline, HTTP 5xx/432/429 after retries, a rejected query: the round goes on
            # with what the other searches found, and the failure is reported (never silent).
            logger.info("search failed: %s", error)
            return SearchOutcome(searches=1, error=str(error))


async def find_character(
    name: str, franchise: str | None, wiki_url: str | None, context: ProfilerContext
) -> tuple[str | None, WikiPage | None, list[str]]:
    """The wiki base URL, the character's page and notices; ambiguity and bad wikis raise.

    Without a pinned wiki the franchise's Fandom wiki is discovered; when none is found, or the
    wiki has no page for the character, and web search is on, profiling goes on from the web
    alone (and says so). With web search off, profiling goes on from the wiki alone (and says
    so too). An article URL pinned as the wiki is accepted (its wiki root is used, with a
    notice). An unreachable wiki is a :class:`RemoteError` (exit 3), not bad input.
    """
    if not name.strip():
        raise InputError("the character name is empty", "pass a character name")
    web = web_search_enabled(context)
    if not wiki_url and not franchise and not web:
        raise InputError(
            "nothing to search: no wiki, no franchise and web search disabled",
            "pass --wiki URL or --franchise, or set TAVILY_API_KEY",
        )
    notices = [] if web else [web_disabled_notice(context)]
    async with make_http(context, wiki_url) as http:
        searcher = (
            TavilySearch(
                api_key=context.tavily_api_key, http=http, base_url=context.tavily_base_url
            )
            if web
            else None
        )
        try:
            wiki = await open_wiki(
                http=http,
                wiki_url=wiki_url,
                franchise=franchise,
                searcher=searcher,
                domain_template=context.fandom_template,
                character=name,
            )
        except InputError as error:
            if wiki_url or not web:
                raise
            return None, None, [f"no wiki used ({error.problem}); profiling from the web alone"]
        notices += wiki.notices  # e.g. an announced API that could not be used
        given = (wiki_url or "").strip().rstrip("/").removesuffix("/api.php")
        if wiki_url and wiki.base_url != given:
            notices.append(f"--wiki {wiki_url} is an article; using its wiki {wiki.base_url}")
        try:
            page = await wiki.find_character_page(name, franchise)
        except WikiPageNotFound as error:
            if not web:
                raise
            notice = f"no wiki used ({error.problem}); profiling from the web alone"
            return None, None, [*notices, notice]
        except TooLargeError as error:
            # A retry gets the same page: search the wiki (and the web) without it, saying why.
            notice = f"skipped {name}'s wiki page: {error.problem}; profiling from searches"
            return wiki.base_url, None, [*notices, notice]
    return wiki.base_url, page, notices
