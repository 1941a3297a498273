"""Finds a character's reference page when the user gives none: Fandom first, then web search.

The paper (§4.1) finds the reference with a search API, giving priority to Fandom pages. Here:
the franchise's Fandom wiki (discovered, with web search when a Tavily key is set) and the
character's page on it; otherwise a web search for the character's Fandom page, any result
on a Fandom host first. The report names the page found and how, so a reader can check it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from personae.errors import InputError, PersonaeError
from personae.tools.http import PoliteHttpClient
from personae.tools.sources import WebSearcher
from personae.tools.wiki_discovery import DEFAULT_FANDOM_TEMPLATE, FANDOM_SUFFIX, open_wiki

_FIX = "pass --reference URL_OR_FILE, or --references FILE.csv (columns character,reference)"


def _on_fandom(url: str) -> bool:
    return (urlsplit(url).hostname or "").endswith(FANDOM_SUFFIX)


async def find_reference(
    name: str,
    franchise: str | None,
    *,
    http: PoliteHttpClient,
    searcher: WebSearcher | None = None,
    wiki_url: str | None = None,
    fandom_template: str = DEFAULT_FANDOM_TEMPLATE,
) -> tuple[str, str]:
    """``(page URL, how it was found)`` for ``name``: ``fandom`` first, then ``web search``.

    ``wiki_url`` (a wiki root, e.g. the one the profiler used) stands in for Fandom discovery
    when there is no franchise.

    Raises:
        InputError: Neither Fandom nor web search found a page.
    """
    tried: list[str] = []
    if franchise or wiki_url:
        try:
            wiki = await open_wiki(
                http=http,
                wiki_url=None if franchise else wiki_url,
                franchise=franchise,
                searcher=searcher,
                domain_template=fandom_template,
            )
            page = await wiki.find_character_page(name, franchise)
            if page.url:
                return page.url, "fandom"
        except PersonaeError as error:
            tried.append(f"Fandom: {error.problem}")
    if searcher is not None:
        query = " ".join(p for p in (name, franchise, "fandom wiki") if p)
        try:
            results = await searcher.search(query, max_results=5)
        except PersonaeError as error:
            results = []
            tried.append(f"web search: {error.problem}")
        ranked = sorted(results, key=lambda r: not _on_fandom(r.url))
        if ranked:
            return ranked[0].url.partition("#")[0], "web search"
        tried.append("web search: no result")
    else:
        tried.append("web search: TAVILY_API_KEY is not set")
    raise InputError(f"found no reference page for {name!r} ({'; '.join(tried)})", _FIX)
