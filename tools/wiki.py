"""A MediaWiki/Fandom client: find a character's page and search for passages.

Character wikis are the best source for a profile, but pages move (redirects), names collide
(disambiguation pages) and Fandom and Wikipedia put their API in different places. This client
hides those differences behind two calls the profiler needs, talking to the Action API through
``PoliteHttpClient`` (serial per host, cached) and parsing pages with ``wiki_parser``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from personae.errors import InputError, PersonaeError, RemoteError
from personae.tools.evidence import Evidence
from personae.tools.http import (
    HttpStatusError,
    PoliteHttpClient,
    TooLargeError,
    UnreachableError,
)
from personae.tools.page_text import cut_at_word
from personae.tools.web_search import normalize_url
from personae.tools.wiki_page import WikiPage, WikiSection
from personae.tools.wiki_parser import (
    DisambiguationCandidate,
    disambiguation_candidates_async,
    parse_wiki_html_async,
)

logger = logging.getLogger(__name__)

API_PATHS = ("/api.php", "/w/api.php")
"""Where the Action API lives: Fandom (``<wiki>/api.php``), then Wikipedia-style wikis."""
MAX_SEARCH_PAGES = 5
"""Continuation pages followed at most when listing search hits."""
_WORD = re.compile(r"\w+")
APPARATUS_SECTIONS = frozenset(
    {
        "references",
        "notes and references",
        "notes",
        "external links",
        "see also",
        "gallery",
        "sources",
        "navigation",
    }
)
"""Sections that never make a good passage (citations, links, images)."""
_STOPWORDS = frozenset(
    {"the", "of", "a", "an", "and", "in", "on", "to", "is", "his", "her", "what", "who"}
)


class WikiPageNotFound(InputError):
    """The wiki has no page by that title (nor, for a character, a search hit that matches)."""


class NotAMediaWikiSite(InputError):
    """The URL answers no ``meta=siteinfo``: callers may fall back to fetching plain HTML."""


class AmbiguousCharacterError(InputError):
    """The name leads to a disambiguation page and the franchise does not pick one entry."""

    def __init__(self, name: str, wiki: str, candidates: list[str]) -> None:
        listed = ", ".join(candidates[:8]) or "none found"
        super().__init__(
            f"{name!r} is ambiguous on {wiki} (candidates: {listed})",
            "pass the exact page title as the name, or a franchise that matches one candidate",
        )
        self.candidates = candidates


@dataclass(frozen=True, slots=True)
class SiteInfo:
    """What ``meta=siteinfo`` told us about a wiki."""

    api_url: str
    article_url: str
    """Article URL template with ``$1`` for the title."""
    sitename: str


async def probe_mediawiki(
    http: PoliteHttpClient, base_url: str, api_path: str | None = None
) -> SiteInfo | None:
    """``SiteInfo`` when ``base_url`` is a reachable MediaWiki (checked with ``meta=siteinfo``).

    Raises:
        InputError: The URL itself is unusable (not http(s), or a refused private host).
        UnreachableError: The host cannot be reached (offline, DNS): not a verdict on the URL.
        RemoteError: No layout answered, and one answered a server error (HTTP 5xx after
            retries): the wiki is failing, which says nothing about the URL either.
    """
    root = base_url.rstrip("/")
    failing: HttpStatusError | None = None
    for path in (api_path,) if api_path else API_PATHS:
        api_url = root + path
        try:
            answer = await http.get_json(
                api_url, _api_params({"action": "query", "meta": "siteinfo"})
            )
        except UnreachableError:
            raise
        except HttpStatusError as error:
            logger.info("no MediaWiki API at this layout: %s", error)
            if error.status >= 500 and failing is None:
                failing = error  # the server is failing: no verdict on the URL
            continue
        except RemoteError as error:
            logger.info("no MediaWiki API at this layout: %s", error)
            continue  # not there (404, HTML instead of JSON): try the next layout
        general = answer.get("query", {}).get("general") if isinstance(answer, dict) else None
        if isinstance(general, dict) and str(general.get("generator", "")).startswith("MediaWiki"):
            server = str(general.get("server") or root)
            if server.startswith("//"):
                server = f"{urlsplit(root).scheme}:{server}"
            article = server + str(general.get("articlepath") or "/wiki/$1")
            return SiteInfo(
                api_url=api_url, article_url=article, sitename=str(general.get("sitename", ""))
            )
    if failing is not None:
        raise RemoteError(
            f"{root} is failing: {failing.problem}",
            "try again later (the wiki's server answered with an error), or pass another --wiki",
        )
    return None


def wiki_article(url: str) -> tuple[str, str] | None:
    """``(wiki root, page title)`` for a ``…/wiki/Title`` article URL, else ``None``."""
    parts = urlsplit(url)
    prefix, marker, rest = parts.path.partition("/wiki/")
    title = unquote(rest).replace("_", " ").strip()
    if not marker or not title:
        return None
    return f"{parts.scheme}://{parts.netloc}{prefix}", title


def _api_params(params: dict[str, str]) -> dict[str, str]:
    return {**params, "format": "json", "formatversion": "2"}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.casefold()) if w not in _STOPWORDS}


class MediaWikiClient:
    """One MediaWiki (Fandom or any other)."""

    def __init__(
        self,
        base_url: str,
        *,
        http: PoliteHttpClient,
        api_path: str | None = None,
        passage_chars: int = 6000,
        sections_per_page: int = 2,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http
        self.api_path = api_path
        self.passage_chars = passage_chars
        """Cap of one passage's text (a whole section with its subsections)."""
        self.sections_per_page = sections_per_page
        """Most relevant sections kept per hit page, each whole."""
        self.notices: list[str] = []
        """Pages this client's searches skipped, and why (over the size cap)."""
        self._site: SiteInfo | None = None
        self._site_lock = asyncio.Lock()

    async def site(self) -> SiteInfo:
        """The wiki's API endpoint and article URLs, detected once; ``NotAMediaWikiSite`` if not."""
        async with self._site_lock:
            if self._site is None:
                self._site = await probe_mediawiki(self.http, self.base_url, self.api_path)
            if self._site is None:
                raise NotAMediaWikiSite(
                    f"{self.base_url} is not a MediaWiki site (no answer to meta=siteinfo)",
                    "check --wiki URL (e.g. https://hokuto.fandom.com)",
                )
            return self._site

    async def page_url(self, title: str) -> str:
        """The article URL of ``title``."""
        site = await self.site()
        return site.article_url.replace("$1", quote(title.replace(" ", "_"), safe="/:()'!,"))

    async def page(self, title: str) -> WikiPage:
        """Parse the page ``title`` (redirects followed); ``WikiPageNotFound`` if there is none."""
        page, _ = await self._parse(title)
        return page

    async def search_titles(self, query: str, limit: int = 10) -> list[str]:
        """Titles of article pages matching ``query`` (full-text search, continuation followed)."""
        params = _api_params(
            {
                "action": "query",
                "list": "search",
                "srsearch": query,
                "srnamespace": "0",
                "srlimit": str(min(limit, 50)),
            }
        )
        titles: list[str] = []
        for _ in range(MAX_SEARCH_PAGES):
            answer = await self._api(params)
            titles.extend(str(hit["title"]) for hit in answer.get("query", {}).get("search", []))
            more = answer.get("continue")
            if len(titles) >= limit or not isinstance(more, dict):
                break
            params = {**params, **{k: str(v) for k, v in more.items()}}
        return list(dict.fromkeys(titles))[:limit]

    async def search(
        self, query: str, *, limit: int = 3, exclude_urls: Collection[str] = ()
    ) -> list[Evidence]:
        """Full-text search; each hit page gives its most relevant section, plus its infobox."""
        excluded = {_exclusion_key(u) for u in exclude_urls}
        titles = await self.search_titles(query, limit=limit + 2)
        pages = await asyncio.gather(*(self._parse_or_none(t) for t in titles))
        passages: list[Evidence] = []
        hits = 0
        for page in pages:
            if page is None or page.is_disambiguation or hits >= limit:
                continue
            found = [e for e in self._passages(page, query) if not _is_excluded(e.url, excluded)]
            if found:
                hits += 1
                passages.extend(found)
        return passages

    async def find_character_page(self, name: str, franchise: str | None = None) -> WikiPage:
        """The character's parsed page: exact title first, then search; disambiguation resolved."""
        if not name.strip():
            raise InputError("the character name is empty", "pass a character name")
        try:
            page, html = await self._parse(name)
        except WikiPageNotFound as error:
            logger.info("wiki page not found: %s", error)
            page, html = await self._first_search_hit(name, franchise)
        if page.is_disambiguation:
            return await self._resolve_disambiguation(name, franchise, html)
        return page

    async def _first_search_hit(self, name: str, franchise: str | None) -> tuple[WikiPage, str]:
        name_words = _words(name)
        for title in await self.search_titles(name, limit=5):
            if name_words & _words(title):
                return await self._parse(title)
        raise WikiPageNotFound(
            f"no page for {name!r} on {self.base_url}",
            "check the spelling, or pass --wiki for the franchise's wiki",
        )

    async def _resolve_disambiguation(
        self, name: str, franchise: str | None, html: str
    ) -> WikiPage:
        candidates = await disambiguation_candidates_async(html)
        chosen = _pick_candidate(candidates, franchise)
        if chosen is None:
            raise AmbiguousCharacterError(name, self.base_url, [c.title for c in candidates])
        page, _ = await self._parse(chosen.title)
        if page.is_disambiguation:
            raise AmbiguousCharacterError(name, self.base_url, [c.title for c in candidates])
        return page

    async def _parse_or_none(self, title: str) -> WikiPage | None:
        try:
            return await self.page(title)
        except WikiPageNotFound as error:
            logger.info("wiki page not found: %s", error)
            return None  # a hit deleted since indexing is simply skipped
        except TooLargeError as error:
            self.notices.append(f"skipped the wiki page {title!r}: {error.problem}")
            return None

    async def _parse(self, title: str) -> tuple[WikiPage, str]:
        answer = await self._api(
            _api_params(
                {
                    "action": "parse",
                    "page": title,
                    "prop": "text|sections|displaytitle",
                    "redirects": "1",
                }
            )
        )
        error = answer.get("error")
        if isinstance(error, dict):
            if error.get("code") in ("missingtitle", "invalidtitle", "pagecannotexist"):
                raise WikiPageNotFound(
                    f"no page {title!r} on {self.base_url}", "check the page title or the wiki"
                )
            raise RemoteError(
                f"{self.base_url} API error {error.get('code')}: {error.get('info')}",
                "check the wiki",
            )
        parsed = answer.get("parse")
        if not isinstance(parsed, dict) or not isinstance(parsed.get("text"), str):
            raise RemoteError(
                f"{self.base_url} returned no page text for {title!r}", "check --wiki URL"
            )
        resolved = str(parsed.get("title") or title)
        html = str(parsed["text"])
        url = await self.page_url(resolved)
        return await parse_wiki_html_async(html, url=url, title=resolved), html

    async def _api(self, params: dict[str, str]) -> dict[str, Any]:
        site = await self.site()
        try:
            answer = await self.http.get_json(site.api_url, params)
        except (InputError, TooLargeError):
            raise  # bad input, or a page a retry would not shrink: never "try again later"
        except PersonaeError as error:
            raise RemoteError(
                f"{self.base_url} API request failed: {error.problem}", "try again later"
            ) from None
        if not isinstance(answer, dict):
            raise RemoteError(
                f"{self.base_url} returned an unexpected API answer", "check --wiki URL"
            )
        return answer

    def _passages(self, page: WikiPage, query: str) -> list[Evidence]:
        """The page's most relevant sections, each whole (with its subsections), and its infobox."""
        passages = []
        for index in _best_sections(page.sections, query, self.sections_per_page):
            section = page.sections[index]
            url = _section_url(page, section)
            heading = section.heading or page.title
            body = section_with_subsections(page.sections, index)
            content = cut_at_word(f"{heading}\n{body}", self.passage_chars)
            passages.append(
                Evidence(url=url, title=page.title, content=content, origin="wiki", query=query)
            )
        if page.infobox:
            lines = [f"{row.label}: {row.value}" for row in page.infobox]
            content = cut_at_word(
                f"Infobox of {page.title}\n" + "\n".join(lines), self.passage_chars
            )
            passages.append(
                Evidence(
                    url=page.url, title=page.title, content=content, origin="wiki", query=query
                )
            )
        return passages


def page_passages(
    page: WikiPage,
    *,
    passage_chars: int,
    max_chars: int,
    exclude_urls: Collection[str] = (),
) -> list[Evidence]:
    """The character's own page as passages: its infobox, then each top-level section whole.

    The page the profiler found is its best evidence, read before any search: a run whose
    queries find nothing still has it. Cut by section (a section with its subsections, each
    at most ``passage_chars``; the lead and apparatus sections such as references left out
    when empty or useless), in page order until ``max_chars`` of text; each passage carries
    its section's URL (``page#Section``) so it is a source of its own. A page or section
    listed in ``exclude_urls`` is left out, as a search hit would be.
    """
    excluded = {_exclusion_key(u) for u in exclude_urls}
    if _is_excluded(page.url, excluded):
        return []
    passages: list[Evidence] = []
    if page.infobox:
        lines = [f"{row.label}: {row.value}" for row in page.infobox]
        content = cut_at_word(f"Infobox of {page.title}\n" + "\n".join(lines), passage_chars)
        passages.append(
            Evidence(url=page.url, title=page.title, content=content, origin="wiki", query="")
        )
    for index, section in enumerate(page.sections):
        if section.level > 2 or section.heading.casefold() in APPARATUS_SECTIONS:
            continue  # deeper sections are read with their parent
        body = section_with_subsections(page.sections, index)
        if not body.strip():
            continue
        url = _section_url(page, section)
        if _is_excluded(url, excluded):
            continue
        heading = section.heading or page.title
        content = cut_at_word(f"{heading}\n{body}", passage_chars)
        passages.append(
            Evidence(url=url, title=page.title, content=content, origin="wiki", query="")
        )
    kept: list[Evidence] = []
    total = 0
    for passage in passages:
        total += len(passage.content)
        if total > max_chars and kept:
            break
        kept.append(passage)
    return kept


def _section_url(page: WikiPage, section: WikiSection) -> str:
    """``page#Section`` (the page's own URL for the lead)."""
    if not section.heading:
        return page.url
    anchor = quote(section.heading.replace(" ", "_"), safe="()'!,:")
    return f"{page.url}#{anchor}"


def section_with_subsections(sections: tuple[WikiSection, ...], index: int) -> str:
    """The text of ``sections[index]`` and of every deeper section below it, with headings."""
    own = sections[index]
    parts = [own.text] if own.text.strip() else []
    if own.level > 1:
        for deeper in sections[index + 1 :]:
            if deeper.level <= own.level:
                break
            if deeper.text.strip():
                parts.append(f"{deeper.heading}\n{deeper.text}")
    return "\n\n".join(parts)


def _best_sections(sections: tuple[WikiSection, ...], query: str, count: int) -> list[int]:
    """Indexes of the ``count`` best-matching sections (with text of their own or below)."""
    wanted = _words(query)
    scored: list[tuple[float, int]] = []
    for position, section in enumerate(sections):
        if section.heading.casefold() in APPARATUS_SECTIONS:
            continue
        body = section_with_subsections(sections, position)
        if not body.strip():
            continue
        words = _words(body)
        score = 3 * len(wanted & _words(section.heading)) + len(wanted & words) - position * 0.01
        scored.append((score, position))
    best = sorted(scored, key=lambda pair: (-pair[0], pair[1]))[: max(1, count)]
    return sorted(position for _, position in best)


def _pick_candidate(
    candidates: list[DisambiguationCandidate], franchise: str | None
) -> DisambiguationCandidate | None:
    if not franchise:
        return None
    wanted = _words(franchise)
    scored = sorted(
        ((len(wanted & _words(f"{c.title} {c.description}")), i) for i, c in enumerate(candidates)),
        reverse=True,
    )
    if not scored or scored[0][0] == 0 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return candidates[scored[0][1]]


def _exclusion_key(url: str) -> str:
    """Normalised URL that keeps its fragment (a fragment names one passage of a page)."""
    page, _, fragment = url.partition("#")
    return f"{normalize_url(page)}#{fragment}" if fragment else normalize_url(page)


def _is_excluded(url: str, excluded: set[str]) -> bool:
    """Excluded when the exact passage URL, or its whole page (URL without fragment), is listed."""
    return _exclusion_key(url) in excluded or normalize_url(url.partition("#")[0]) in excluded
