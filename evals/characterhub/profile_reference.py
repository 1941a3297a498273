"""The evaluation reference: a character's wiki page as normalised JSON, cut into chunks.

CharacterHub scores a profile against the knowledge of a reference page. The page arrives as
a wiki URL (fetched through the MediaWiki API, or as plain HTML when the site has no API), a
saved ``.html`` page, or an already-normalised ``.json``; all three become the same
``ProfileReference`` (``{title, url, infobox: {label: value}, sections: [{heading, level,
text}]}``), so the knowledge extractor sees one shape whatever the source. Chunks stay small
enough for an extraction prompt and carry ids (``C1``) the code assigned.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from urllib.parse import urlsplit

from bs4 import BeautifulSoup
from pydantic import BaseModel, Field, ValidationError

from personae.errors import InputError, PersonaeError, RemoteError
from personae.evals.characterhub.profile_metrics import count_tokens
from personae.files import parse_json, read_text, require_file
from personae.settings import Settings
from personae.tools.http import HttpStatusError, PoliteHttpClient
from personae.tools.wiki import (
    APPARATUS_SECTIONS,
    MediaWikiClient,
    NotAMediaWikiSite,
    WikiPageNotFound,
    wiki_article,
)
from personae.tools.wiki_page import WikiPage
from personae.tools.wiki_parser import parse_wiki_html, parse_wiki_html_async
from personae.urls import source_url

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_TOKENS = 700
"""Largest chunk handed to the extractor (about 2,800 characters)."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FIX = "pass a wiki article URL, a saved .html page or a reference .json"


class ReferenceSection(BaseModel):
    """One section of the reference page."""

    heading: str = Field(description="Section heading; empty for the lead.")
    level: int = Field(description="1 for the lead, 2 for h2, 3 for h3...")
    text: str = Field(description="Clean section text.")


class ProfileReference(BaseModel):
    """A wiki page normalised for evaluation."""

    title: str
    url: str = ""
    infobox: dict[str, str] = Field(default_factory=dict)
    sections: list[ReferenceSection] = Field(default_factory=list)


class ReferenceChunk(BaseModel):
    """A piece of the reference the extractor reads at once."""

    id: str
    """Code-assigned id (``C1``), shown to the model instead of positions."""
    heading: str
    """Where the chunk comes from (``Infobox``, ``History > Early Life``)."""
    text: str


def reference_from_page(page: WikiPage, *, url: str | None = None) -> ProfileReference:
    """The normalised reference of a parsed page, without apparatus sections (references...).

    Sections without text of their own (``History`` above its subsections) are kept: they give
    the subsections their heading path.

    Raises:
        InputError: The page is a disambiguation page or holds no text.
    """
    origin = url or page.url or page.title
    if page.is_disambiguation:
        raise InputError(f"the reference {origin} is a disambiguation page", _FIX)
    sections = [
        ReferenceSection(heading=s.heading, level=s.level, text=s.text.strip())
        for s in page.sections
        if s.heading.casefold() not in APPARATUS_SECTIONS
    ]
    reference = ProfileReference(
        title=page.title, url=url or page.url, infobox=page.infobox_dict(), sections=sections
    )
    require_content(reference, origin)
    return reference


def require_content(reference: ProfileReference, origin: str) -> None:
    """Raise ``InputError`` when the reference has neither infobox values nor section text."""
    has_infobox = any(value.strip() for value in reference.infobox.values())
    if not has_infobox and not any(s.text.strip() for s in reference.sections):
        raise InputError(f"the reference {origin} has no content (no infobox, no text)", _FIX)


def reference_text(reference: ProfileReference) -> str:
    """The reference as one plain text (infobox lines, then headed sections)."""
    parts = [f"{label}: {value}" for label, value in reference.infobox.items()]
    parts += [f"{s.heading}\n{s.text}" if s.heading else s.text for s in reference.sections]
    return "\n\n".join(parts)


def reference_content(reference: ProfileReference) -> dict[str, str]:
    """The page's main content as ``{heading path: text}`` (the paper's structured dictionary).

    Sections without text of their own give their heading to the subsections below them
    (``History > Early Life``); the lead is ``Introduction``.
    """
    content: dict[str, str] = {}
    path: dict[int, str] = {}
    for section in reference.sections:
        path = {lvl: h for lvl, h in path.items() if lvl < section.level}
        path[section.level] = section.heading
        heading = " > ".join(h for _, h in sorted(path.items()) if h) or "Introduction"
        if section.text.strip():
            previous = content.get(heading)
            content[heading] = f"{previous}\n{section.text}" if previous else section.text
    return content


def chunk_reference(
    reference: ProfileReference, *, max_tokens: int = DEFAULT_CHUNK_TOKENS
) -> list[ReferenceChunk]:
    """Cut the reference into chunks of at most about ``max_tokens``, ids ``C1..Cn`` in order.

    The infobox is its own chunk; sections are split on paragraphs, then sentences, then words,
    and carry their heading path (``History > Early Life``) so the extractor knows the context.
    """
    pieces: list[tuple[str, str]] = []
    if reference.infobox:
        lines = [f"{label}: {value}" for label, value in reference.infobox.items()]
        pieces += [("Infobox", text) for text in _pack(lines, max_tokens)]
    path: dict[int, str] = {}
    for section in reference.sections:
        path = {lvl: h for lvl, h in path.items() if lvl < section.level}
        path[section.level] = section.heading
        heading = " > ".join(h for _, h in sorted(path.items()) if h) or "Introduction"
        paragraphs = [p.strip() for p in section.text.split("\n") if p.strip()]
        pieces += [(heading, text) for text in _pack(paragraphs, max_tokens)]
    return [
        ReferenceChunk(id=f"C{number}", heading=heading, text=text)
        for number, (heading, text) in enumerate(pieces, start=1)
    ]


def _pack(blocks: list[str], max_tokens: int) -> list[str]:
    """Greedily join ``blocks`` with newlines into texts under ``max_tokens``."""
    units = [unit for block in blocks for unit in _split_long(block, max_tokens)]
    packed: list[str] = []
    current: list[str] = []
    for unit in units:
        if current and count_tokens("\n".join([*current, unit])) > max_tokens:
            packed.append("\n".join(current))
            current = []
        current.append(unit)
    if current:
        packed.append("\n".join(current))
    return packed


def _split_long(block: str, max_tokens: int) -> list[str]:
    if count_tokens(block) <= max_tokens:
        return [block]
    sentences = _SENTENCE_END.split(block)
    if len(sentences) > 1:
        return [unit for s in sentences for unit in _split_long(s, max_tokens)]
    words = block.split()
    if len(words) == 1:  # one unbroken run of characters (a URL, a table residue): cut it
        width = max(1, max_tokens * 4)
        return [block[i : i + width] for i in range(0, len(block), width)]
    half = len(words) // 2
    return _split_long(" ".join(words[:half]), max_tokens) + _split_long(
        " ".join(words[half:]), max_tokens
    )


def read_reference_file(path: Path) -> ProfileReference:
    """A reference from a saved ``.html`` page or a normalised ``.json``; ``InputError`` if bad."""
    require_file(path, "reference file", _FIX)
    suffix = path.suffix.casefold()
    if suffix not in (".html", ".htm", ".json"):
        raise InputError(f"reference file {path} is neither .html nor .json", _FIX)
    raw = read_text(path)
    if suffix == ".json":
        return _reference_from_json(raw, path)
    page = parse_wiki_html(raw, url=canonical_url(raw))
    return reference_from_page(page, url=page.url or None)


def _reference_from_json(raw: str, path: Path) -> ProfileReference:
    data = parse_json(raw, f"reference file {path}", _FIX)
    try:
        reference = ProfileReference.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "document"
        raise InputError(
            f"reference file {path} is not a normalised reference ({where}: {first['msg']})",
            "write {title, url, infobox: {label: value}, sections: [{heading, level, text}]}",
        ) from None
    require_content(reference, str(path))
    return reference


def canonical_url(html: str) -> str:
    """The page's own URL from ``<link rel=canonical>`` or ``og:url``; ``""`` if absent."""
    soup = BeautifulSoup(html[:200_000], "lxml")
    link = soup.find("link", rel="canonical")
    if link is not None and link.get("href"):
        return str(link["href"])
    meta = soup.find("meta", property="og:url")
    return str(meta["content"]) if meta is not None and meta.get("content") else ""


async def fetch_reference(url: str, *, http: PoliteHttpClient) -> ProfileReference:
    """Fetch and normalise the page at ``url``: MediaWiki ``action=parse`` first, else the HTML.

    Raises:
        InputError: The page does not exist or holds no content.
        RemoteError: The site cannot be reached.
    """
    article = wiki_article(url)
    if article is not None:
        root, title = article
        try:
            page = await MediaWikiClient(root, http=http).page(title)
            return reference_from_page(page, url=page.url or url)  # redirects resolved
        except WikiPageNotFound:
            raise InputError(f"the reference page {url} does not exist", _FIX) from None
        except (NotAMediaWikiSite, RemoteError) as error:
            logger.info("no usable MediaWiki API, reading the article HTML: %s", error)
            pass  # a site without an API, or whose API fails, may still serve the article HTML
    try:
        fetched = await http.get_text(url)
    except HttpStatusError as error:
        if error.status in (404, 410):
            raise InputError(
                f"the reference page {url} does not exist (HTTP {error.status})", _FIX
            ) from None
        raise RemoteError(f"the reference {url} answered HTTP {error.status}", _FIX) from None
    except PersonaeError as error:
        raise type(error)(f"cannot fetch the reference {url}: {error.problem}", _FIX) from None
    return reference_from_page(await parse_wiki_html_async(fetched.text, url=url), url=url)


async def load_reference(source: str, *, settings: Settings) -> ProfileReference:
    """The reference named by ``source``: an http(s) URL, a ``.html`` or a ``.json`` file.

    A URL's host is allowed even when private: the user named it explicitly.
    """
    text = source.strip()
    if not text:
        raise InputError("the reference is empty", _FIX)
    if source_url(text, "the reference", "https://hokuto.fandom.com/wiki/Toki") is None:
        return await asyncio.to_thread(read_reference_file, Path(text).expanduser())
    async with PoliteHttpClient.from_settings(
        settings, allowed_hosts=[urlsplit(text).netloc], max_retries=1, backoff_base=0.25
    ) as client:
        return await fetch_reference(text, http=client)
