"""Find a franchise's Fandom wiki when the user did not pin one with ``--wiki``.

A guessed wiki is only accepted once ``meta=siteinfo`` confirms it is a MediaWiki, so a wrong
guess costs one cached request and never sends the profiler to an unrelated site. Candidates
come from Fandom hosts seen in web search results (most reliable) and from slugs of the franchise
name. The domain template is a setting so tests can point it at a loopback server.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

from personae.errors import InputError, PersonaeError
from personae.tools.http import PoliteHttpClient, UnreachableError
from personae.tools.sources import WebSearcher
from personae.tools.wiki import MediaWikiClient, probe_mediawiki

DEFAULT_FANDOM_TEMPLATE = "https://{slug}.fandom.com"
"""Where a Fandom wiki with subdomain ``slug`` lives."""
FANDOM_SUFFIX = ".fandom.com"
_MINOR_WORDS = frozenset({"the", "of", "a", "an", "and", "no", "to", "in"})


def fandom_slugs(franchise: str) -> list[str]:
    """Candidate Fandom subdomains for ``franchise``, most likely first.

    "Fist of the North Star" gives ``fistofthenorthstar``, ``fistnorthstar``,
    ``fist-of-the-north-star``; accents are folded and punctuation dropped.
    """
    folded = unicodedata.normalize("NFKD", franchise).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", folded.lower())
    if not words:
        return []
    major = [w for w in words if w not in _MINOR_WORDS] or words
    without_article = words[1:] if words[0] == "the" and len(words) > 1 else words
    variants = [
        "".join(words),
        "".join(without_article),
        "".join(major),
        "-".join(words),
        "-".join(without_article),
    ]
    return list(dict.fromkeys(v for v in variants if v))


def slugs_from_urls(urls: list[str]) -> list[str]:
    """Fandom subdomains of ``urls`` (``https://hokuto.fandom.com/wiki/Toki`` gives ``hokuto``)."""
    found = []
    for url in urls:
        host = (urlsplit(url).hostname or "").lower()
        if host.endswith(FANDOM_SUFFIX):
            slug = host[: -len(FANDOM_SUFFIX)].split(".")[-1]
            if slug and slug not in ("www", "community", "auth"):
                found.append(slug)
    return list(dict.fromkeys(found))


async def discover_wiki(
    franchise: str,
    *,
    http: PoliteHttpClient,
    searcher: WebSearcher | None = None,
    domain_template: str = DEFAULT_FANDOM_TEMPLATE,
    max_candidates: int = 6,
) -> str:
    """The base URL of the franchise's wiki, confirmed with ``meta=siteinfo``.

    Args:
        franchise: Franchise name as the user gave it.
        http: Client used for the probes (cached, polite).
        searcher: Optional web search; Fandom hosts in its results for
            "<franchise> wiki fandom" are tried first.
        domain_template: Fandom URL template with ``{slug}``.
        max_candidates: Probes sent at most.

    Raises:
        InputError: No candidate is a MediaWiki; the user must pass ``--wiki URL``.
    """
    if "{slug}" not in domain_template:
        raise InputError(
            f"wiki domain template {domain_template!r} has no {{slug}}",
            "use e.g. https://{slug}.fandom.com",
        )
    seen_in_search: list[str] = []
    if searcher is not None:
        try:
            results = await searcher.search(f"{franchise} wiki fandom", max_results=5)
            seen_in_search = slugs_from_urls([r.url for r in results])
        except PersonaeError:
            seen_in_search = []  # discovery falls back to name slugs; the search error resurfaces later
    slugs = list(dict.fromkeys([*seen_in_search, *fandom_slugs(franchise)]))[:max_candidates]
    unreachable: list[UnreachableError] = []
    for slug in slugs:
        base = domain_template.format(slug=slug).rstrip("/")
        try:
            site = await probe_mediawiki(http, base)
        except InputError:
            continue  # a refused host is just a wrong guess
        except UnreachableError as error:
            unreachable.append(error)
            continue
        if site is not None:
            return base
    if unreachable and len(unreachable) == len(slugs):
        # Every guess failed at the network level: that says nothing about the franchise.
        raise UnreachableError(
            f"cannot reach any candidate wiki for {franchise!r} ({unreachable[0].problem})",
            "check the network, or pass --wiki URL",
        )
    tried = ", ".join(slugs) or "none"
    raise InputError(
        f"found no wiki for {franchise!r} (tried Fandom slugs: {tried})", "pass --wiki URL"
    )


def wiki_root(url: str) -> str:
    """The wiki root of ``url``: an article URL (``.../wiki/Kenshiro``) gives its site root.

    Users often paste the page they are looking at; the Action API lives at the root
    (``/api.php`` on Fandom, ``/w/api.php`` on Wikipedia-style wikis), never under ``/wiki/``.
    """
    parts = urlsplit(url.strip())
    path = parts.path
    for marker in ("/wiki/", "/index.php", "/api.php", "/w/"):
        if marker in path:
            path = path[: path.index(marker)]
            break
    return f"{parts.scheme}://{parts.netloc}{path}".rstrip("/")


async def open_wiki(
    *,
    http: PoliteHttpClient,
    wiki_url: str | None = None,
    franchise: str | None = None,
    searcher: WebSearcher | None = None,
    domain_template: str = DEFAULT_FANDOM_TEMPLATE,
) -> MediaWikiClient:
    """A confirmed ``MediaWikiClient``: the pinned ``wiki_url``, else the discovered franchise wiki.

    An article URL given as ``wiki_url`` is accepted: its wiki root is used.

    Raises:
        InputError: Neither a wiki URL nor a franchise was given, the pinned URL is not a
            MediaWiki, or no wiki was found for the franchise.
        UnreachableError: The pinned wiki (or every candidate) cannot be reached.
    """
    if wiki_url:
        client = MediaWikiClient(wiki_root(wiki_url), http=http)
        await client.site()
        return client
    if not franchise:
        raise InputError(
            "no wiki to search: neither a wiki URL nor a franchise was given", "pass --wiki URL"
        )
    base = await discover_wiki(
        franchise, http=http, searcher=searcher, domain_template=domain_template
    )
    return MediaWikiClient(base, http=http)
