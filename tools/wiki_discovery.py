"""Find a franchise's Fandom wiki when the user did not pin one with ``--wiki``.

A guessed wiki is only accepted once ``meta=siteinfo`` confirms it is a MediaWiki, so a wrong
guess costs one cached request and never sends the profiler to an unrelated site. Candidates
come from Fandom hosts seen in web search results (most reliable) and from slugs of the franchise
name. The domain template is a setting so tests can point it at a loopback server.
"""

from __future__ import annotations

import html
import logging
import re
import unicodedata
from urllib.parse import urljoin, urlsplit

from personae.errors import InputError, PersonaeError, RemoteError
from personae.tools.http import PoliteHttpClient, UnreachableError
from personae.tools.sources import WebSearcher
from personae.tools.wiki import MediaWikiClient, NotAMediaWikiSite, probe_mediawiki
from personae.urls import web_url

logger = logging.getLogger(__name__)

WIKI_EXAMPLE = "https://hokuto.fandom.com"
"""The wiki address error messages show as an example."""
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
    # "JoJo's Bizarre Adventure" -> jojo, "Type-Moon" -> typemoon, "Fist of the North Star" ->
    # fotns: the short names many Fandom wikis use, tried after the full-name slugs.
    possessive = re.sub(r"'s\b", "", folded.lower())
    short_words = re.findall(r"[a-z0-9]+", possessive)
    variants = [
        "".join(words),
        "".join(without_article),
        "".join(major),
        "-".join(words),
        "-".join(without_article),
        short_words[0] if short_words else "",
        "".join(w[0] for w in words) if len(words) > 2 else "",
    ]
    return list(dict.fromkeys(v for v in variants if len(v) > 1))


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
    max_candidates: int = 8,
    character: str | None = None,
) -> str:
    """The base URL of the franchise's wiki, confirmed with ``meta=siteinfo``.

    When the franchise name does not slug to its wiki (hokuto.fandom.com for Fist of the North
    Star), web search finds it: Fandom hosts in the results for "<franchise> wiki fandom" (and
    "<character> <franchise> fandom") are tried first. Without web search, every candidate wiki
    that exists is asked, through its own search, for the ``character``; the first that knows
    the character wins, else the first that exists.

    Args:
        franchise: Franchise name as the user gave it.
        http: Client used for the probes (cached, polite).
        searcher: Optional web search (Tavily).
        domain_template: Fandom URL template with ``{slug}``.
        max_candidates: Probes sent at most.
        character: The character the wiki must know (picks among existing candidates).

    Raises:
        InputError: No candidate is a MediaWiki; the user must pass ``--wiki URL``.
    """
    if "{slug}" not in domain_template:
        raise InputError(
            f"wiki domain template {domain_template!r} has no {{slug}}",
            "use e.g. https://{slug}.fandom.com",
        )
    seen_in_search = await _slugs_in_search(searcher, franchise, character)
    slugs = list(dict.fromkeys([*seen_in_search, *fandom_slugs(franchise)]))[:max_candidates]
    unreachable: list[RemoteError] = []
    existing: list[str] = []
    for slug in slugs:
        base = domain_template.format(slug=slug).rstrip("/")
        if not await _is_mediawiki(http, base, unreachable):
            continue
        if slug in seen_in_search or not character:
            return base
        existing.append(base)
        if await knows_character(http, base, character):
            return base
    if existing:
        return existing[0]
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


async def _slugs_in_search(
    searcher: WebSearcher | None, franchise: str, character: str | None
) -> list[str]:
    """Fandom subdomains in the first web search that shows any (none without a searcher)."""
    if searcher is None:
        return []
    queries = [f"{franchise} wiki fandom"]
    if character:
        queries.append(f"{character} {franchise} fandom")
    for query in queries:
        try:
            results = await searcher.search(query, max_results=5)
        except PersonaeError as error:
            logger.info("wiki search failed during discovery: %s", error)
            return []  # discovery falls back to name slugs; the search error resurfaces later
        found = slugs_from_urls([r.url for r in results])
        if found:
            return found
    return []


async def _is_mediawiki(http: PoliteHttpClient, base: str, unreachable: list[RemoteError]) -> bool:
    """Whether ``base`` answers ``meta=siteinfo``; a network or server failure is recorded.

    It goes to ``unreachable``: a guessed wiki answering 503 says nothing about the franchise.
    """
    try:
        return await probe_mediawiki(http, base) is not None
    except InputError as error:
        logger.info("candidate wiki refused: %s", error)
        return False  # a refused host is just a wrong guess
    except RemoteError as error:
        unreachable.append(error)
        return False


async def knows_character(http: PoliteHttpClient, base: str, character: str) -> bool:
    """True when the wiki's own search finds a page titled with the character's name words."""
    wanted = {w for w in re.findall(r"\w+", character.casefold()) if len(w) > 1}
    try:
        titles = await MediaWikiClient(base, http=http).search_titles(character, limit=5)
    except PersonaeError:
        return False
    return any(wanted & set(re.findall(r"\w+", t.casefold())) for t in titles)


def wiki_root(url: str) -> str:
    """The wiki root of ``url``: an article URL (``.../wiki/Kenshiro``) gives its site root.

    Users often paste the page they are looking at; the Action API lives at the root
    (``/api.php`` on Fandom, ``/w/api.php`` on Wikipedia-style wikis), never under ``/wiki/``.
    A URL without ``http(s)://`` and a host (``hokuto.fandom.com/wiki/Kenshiro``) is an
    :class:`InputError` naming it as given, not a garbled API address later.
    """
    parts = urlsplit(web_url(url, "the wiki URL", WIKI_EXAMPLE))
    path = parts.path
    for marker in ("/wiki/", "/index.php", "/api.php", "/w/"):
        if marker in path:
            path = path[: path.index(marker)]
            break
    return f"{parts.scheme}://{parts.netloc}{path}".rstrip("/")


_LINK_TAG = re.compile(r"<link\b[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"""([a-zA-Z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
HEAD_CHARS = 200_000
"""How much of a page is searched for its ``EditURI`` link (it sits in the ``<head>``)."""


def edit_uri_api(page: str, page_url: str) -> str | None:
    """The Action API URL an article page announces with ``<link rel="EditURI" ...>``.

    Every MediaWiki page links its API this way (``.../api.php?action=rsd``), wherever the
    wiki's script path is: the reliable way from an article URL to its wiki.
    """
    for tag in _LINK_TAG.finditer(page, 0, HEAD_CHARS):
        attributes = {
            m.group(1).lower(): html.unescape(m.group(2) or m.group(3) or m.group(4) or "")
            for m in _ATTRIBUTE.finditer(tag.group(0))
        }
        if attributes.get("rel", "").lower() == "edituri" and attributes.get("href"):
            api = urljoin(page_url, attributes["href"]).split("?", 1)[0].split("#", 1)[0]
            return api if api.endswith("/api.php") else None
    return None


async def open_pinned_wiki(http: PoliteHttpClient, wiki_url: str) -> MediaWikiClient:
    """The MediaWiki ``wiki_url`` names: as given first, then its ``EditURI``, then its root.

    Tried in order, each confirmed with ``meta=siteinfo``: the URL as given (its
    ``/api.php`` or ``/w/api.php``; an ``.../api.php`` URL itself), the API the page at the
    URL announces in its ``EditURI`` link (how MediaWiki itself says where its API is), and
    only then the root derived from an article URL. So a wiki whose script path contains
    ``/wiki/`` (``https://example.org/wiki/hokuto``) is found, and so is an article of it.

    Raises:
        InputError: The URL is not http(s), or none of the three is a MediaWiki.
        UnreachableError: The host cannot be reached.
    """
    given = web_url(wiki_url, "the wiki URL", WIKI_EXAMPLE).rstrip("/")
    if given.endswith("/api.php"):
        candidates: list[tuple[str, str | None]] = [(given.removesuffix("/api.php"), "/api.php")]
    else:
        candidates = [(given, None)]
    for base, api_path in candidates:
        if await probe_mediawiki(http, base, api_path) is not None:
            return MediaWikiClient(base, http=http, api_path=api_path)
    announced = await _announced_api(http, given)
    notices = []
    if announced is not None:
        base = announced.removesuffix("/api.php")
        try:
            if await probe_mediawiki(http, base, "/api.php") is not None:
                return MediaWikiClient(base, http=http, api_path="/api.php")
        except (InputError, RemoteError) as error:
            # The page names an API elsewhere (another host, a mirror's origin) that cannot be
            # used: the root derived from the URL may still be the wiki.
            notices.append(
                f"the API {announced} announced by {given} cannot be used ({error.problem}); "
                f"trying {wiki_root(given)}"
            )
    root = wiki_root(given)
    if root != given and await probe_mediawiki(http, root) is not None:
        client = MediaWikiClient(root, http=http)
        client.notices.extend(notices)
        return client
    raise NotAMediaWikiSite(
        f"{given} is not a MediaWiki site (no answer to meta=siteinfo at it, at an EditURI "
        f"link of its page, or at {root})",
        f"check --wiki URL (e.g. {WIKI_EXAMPLE})",
    )


async def _announced_api(http: PoliteHttpClient, url: str) -> str | None:
    """The API the page at ``url`` announces, if it is a page and announces one."""
    try:
        page = await http.get_text(url)
    except UnreachableError:
        raise
    except (InputError, RemoteError) as error:
        logger.info("no page to read an EditURI link from: %s", error)
        return None
    return edit_uri_api(page.text, page.url)


async def open_wiki(
    *,
    http: PoliteHttpClient,
    wiki_url: str | None = None,
    franchise: str | None = None,
    searcher: WebSearcher | None = None,
    domain_template: str = DEFAULT_FANDOM_TEMPLATE,
    character: str | None = None,
) -> MediaWikiClient:
    """A confirmed ``MediaWikiClient``: the pinned ``wiki_url``, else the discovered franchise wiki.

    An article URL given as ``wiki_url`` is accepted (see :func:`open_pinned_wiki`).

    Raises:
        InputError: Neither a wiki URL nor a franchise was given, the pinned URL is not a
            MediaWiki, or no wiki was found for the franchise.
        UnreachableError: The pinned wiki (or every candidate) cannot be reached.
    """
    if wiki_url:
        return await open_pinned_wiki(http, wiki_url)
    if not franchise:
        raise InputError(
            "no wiki to search: neither a wiki URL nor a franchise was given", "pass --wiki URL"
        )
    base = await discover_wiki(
        franchise,
        http=http,
        searcher=searcher,
        domain_template=domain_template,
        character=character,
    )
    return MediaWikiClient(base, http=http)
