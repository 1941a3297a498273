"""Persona documents from what users have: Markdown, a profile.json, a wiki page, a CoSER book.

Every importer returns a :class:`~personae.memory.amadeus.persona_doc.PersonaDoc` with a real section
hierarchy, because ACTS appends each chunk's heading path to it:

- Markdown: headings are the hierarchy (``# Title`` then ``##``/``###``);
- ``profile.json`` (the profiler's output): the first-person profile prose, the canon note and
  one section per profiling dimension whose facts are its paragraphs;
- a wiki page (article URL, or a saved ``.html``): the project's wiki parser; ``h2`` sections,
  ``h3`` subsections, the lead as ``Overview`` and the infobox as ``Infobox``;
- a CoSER book (``final/<book>.json``): ``Profile``, ``Activity > <chapter>`` (the character's
  experience in each plot) and ``Motivations > <chapter>`` (its motivation in each scene).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from personae.errors import InputError, PersonaeError, RemoteError
from personae.files import parse_json, read_text
from personae.memory.amadeus.persona_doc import (
    PersonaDoc,
    PersonaSection,
    check_persona,
    parse_markdown,
    split_paragraphs,
)
from personae.settings import Settings
from personae.tools.wiki_page import WikiPage
from personae.tools.wiki_parser import parse_wiki_html

logger = logging.getLogger(__name__)

SourceKind = Literal["markdown", "profile", "wiki", "coser"]
_FIX = "pass a .md persona, a profile.json, a wiki page URL or saved .html, or a CoSER book .json"


def _read(path: Path) -> str:
    if not path.is_file():
        raise InputError(f"persona source {path} does not exist", _FIX)
    return read_text(path)


def _sections(pairs: Sequence[tuple[tuple[str, ...], Sequence[str]]]) -> tuple[PersonaSection, ...]:
    kept = []
    for path, paragraphs in pairs:
        clean = tuple(p.strip() for p in paragraphs if p and p.strip())
        if clean:
            kept.append(PersonaSection(path, clean))
    return tuple(kept)


def persona_from_profile(document: Mapping[str, Any], *, source: str = "") -> PersonaDoc:
    """A persona from a profiler ``profile.json``: prose, canon, then one section per dimension."""
    character = str(document.get("character") or "").strip()
    if not character or "dimensions" not in document:
        raise InputError(f"{source or 'the file'} is not a Personae profile.json", _FIX)
    pairs: list[tuple[tuple[str, ...], Sequence[str]]] = [
        (("Profile",), split_paragraphs(str(document.get("profile") or ""))),
        (("Canon",), split_paragraphs(str(document.get("canon") or ""))),
    ]
    for dimension, facts in dict(document.get("dimensions") or {}).items():
        texts = [str(fact.get("text", "")) for fact in facts if isinstance(fact, Mapping)]
        pairs.append(((str(dimension).replace("_", " ").capitalize(),), texts))
    doc = PersonaDoc(character, _sections(pairs), source=source, source_kind="profile")
    return check_persona(doc)


def persona_from_wiki_page(page: WikiPage, character: str | None = None) -> PersonaDoc:
    """A persona from a parsed wiki page: lead, ``h2`` sections with ``h3`` subsections, infobox."""
    pairs: list[tuple[tuple[str, ...], Sequence[str]]] = []
    infobox = [f"{row.label}: {row.value}" for row in page.infobox if row.label and row.value]
    pairs.append((("Infobox",), infobox))
    parent = ""
    for section in page.sections:
        if section.level <= 1 or not section.heading:
            path: tuple[str, ...] = ("Overview",)
        elif section.level == 2:
            parent = section.heading
            path = (section.heading,)
        else:
            path = (parent, section.heading) if parent else (section.heading,)
        pairs.append((path, section.text.split("\n")))
    name = (character or page.title).strip()
    doc = PersonaDoc(name, _sections(pairs), source=page.url, source_kind="wiki")
    return check_persona(doc)


def coser_characters(book: Mapping[str, Any]) -> list[str]:
    """The characters of a CoSER ``final/<book>.json``."""
    return sorted(dict(book.get("character_datasets") or {}))


def persona_from_coser(
    book: Mapping[str, Any], character: str | None, *, source: str = ""
) -> PersonaDoc:
    """A CoSER book character as a persona: profile, activity and motivations per chapter."""
    datasets = dict(book.get("character_datasets") or {})
    names = coser_characters(book)
    match = next((n for n in names if character and n.casefold() == character.casefold()), None)
    if match is None:
        raise InputError(
            f"{character!r} is not a character of {source or 'this CoSER book'}"
            if character
            else f"{source or 'this CoSER book'} holds several characters",
            f"pass --character with one of: {', '.join(names)}",
        )
    data = dict(datasets[match])
    plots = list(book.get("plots") or [])

    def chapter(i_p: Any) -> str:
        index = int(i_p) if str(i_p).isdigit() else -1
        name = str(plots[index].get("chapter") or "") if 0 <= index < len(plots) else ""
        return name if name and name != "None" else f"Plot {index + 1}"

    pairs: list[tuple[tuple[str, ...], Sequence[str]]] = [
        (("Profile",), split_paragraphs(str(data.get("profile") or "").replace("**", "")))
    ]
    for plot in data.get("plots") or []:
        texts = [str(plot.get("description") or ""), str(plot.get("experience") or "")]
        pairs.append((("Activity", chapter(plot.get("i_p"))), texts))
    for scene in data.get("conversations") or []:
        pairs.append((("Motivations", chapter(scene.get("i_p"))), [str(scene.get("motivation"))]))
    doc = PersonaDoc(match, _sections(_merge_paths(pairs)), source=source, source_kind="coser")
    return check_persona(doc)


def _merge_paths(
    pairs: Sequence[tuple[tuple[str, ...], Sequence[str]]],
) -> list[tuple[tuple[str, ...], Sequence[str]]]:
    """Join entries that share a path (two scenes of one chapter) into one section."""
    merged: dict[tuple[str, ...], list[str]] = {}
    for path, paragraphs in pairs:
        merged.setdefault(path, []).extend(p for p in paragraphs if p and p != "None")
    return list(merged.items())


def _wiki_article(url: str) -> tuple[str, str] | None:
    parts = urlsplit(url)
    prefix, marker, rest = parts.path.partition("/wiki/")
    title = unquote(rest).replace("_", " ").strip()
    if not marker or not title:
        return None
    return f"{parts.scheme}://{parts.netloc}{prefix}", title


async def fetch_wiki_persona(url: str, character: str | None, *, settings: Settings) -> PersonaDoc:
    """Fetch a wiki article (MediaWiki ``action=parse``, else its HTML) and import it.

    Raises:
        InputError: The page does not exist.
        RemoteError: The site cannot be reached.
    """
    from personae.tools.http import HttpStatusError, PoliteHttpClient
    from personae.tools.wiki import MediaWikiClient, NotAMediaWikiSite, WikiPageNotFound

    host = urlsplit(url).netloc
    async with PoliteHttpClient.from_settings(settings, allowed_hosts=[host]) as http:
        article = _wiki_article(url)
        if article is not None:
            try:
                page = await MediaWikiClient(article[0], http=http).page(article[1])
                return persona_from_wiki_page(page, character)
            except WikiPageNotFound:
                raise InputError(f"the wiki page {url} does not exist", _FIX) from None
            except (NotAMediaWikiSite, RemoteError) as error:
                logger.info("no usable MediaWiki API, reading the article HTML: %s", error)
                pass  # no API, or a failing one: the article HTML may still be served
        try:
            fetched = await http.get_text(url)
        except HttpStatusError as error:
            if error.status in (404, 410):
                raise InputError(f"the wiki page {url} does not exist", _FIX) from None
            raise RemoteError(f"{url} answered HTTP {error.status}", "try again later") from None
        except PersonaeError as error:
            raise type(error)(f"cannot fetch {url}: {error.problem}", error.fix) from None
    return persona_from_wiki_page(parse_wiki_html(fetched.text, url=url), character)


def detect_kind(source: str) -> SourceKind:
    """Which importer reads ``source``: URL or ``.html`` → wiki, ``.md`` → markdown, ``.json``."""
    if urlsplit(source).scheme in ("http", "https"):
        return "wiki"
    suffix = Path(source).suffix.casefold()
    if suffix in (".md", ".markdown", ".txt"):
        return "markdown"
    if suffix in (".html", ".htm"):
        return "wiki"
    if suffix == ".json":
        return "profile"  # or a CoSER book: load_persona_file tells them apart by content
    raise InputError(f"cannot tell what kind of persona source {source} is", _FIX)


def load_persona_file(source: str, character: str | None) -> PersonaDoc:
    """A persona from a local file (Markdown, profile.json, saved wiki .html, CoSER book)."""
    kind = detect_kind(source)
    path = Path(source)
    if kind == "wiki":
        page = parse_wiki_html(_read(path), url=str(path))
        doc = persona_from_wiki_page(page, character)
        return PersonaDoc(doc.character, doc.sections, source=str(path), source_kind="wiki")
    if kind == "markdown":
        name = (character or path.stem).strip()
        doc = parse_markdown(_read(path), name, source=str(path))
        return PersonaDoc(doc.character, doc.sections, source=str(path), source_kind="markdown")
    data = parse_json(_read(path), str(path), _FIX)
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a profile.json or CoSER book", _FIX)
    if "character_datasets" in data:
        return persona_from_coser(data, character, source=str(path))
    return persona_from_profile(data, source=str(path))


async def load_persona(source: str, character: str | None, *, settings: Settings) -> PersonaDoc:
    """A persona from any supported ``source``; file reads run in a thread."""
    import asyncio

    if detect_kind(source) == "wiki" and urlsplit(source).scheme in ("http", "https"):
        return await fetch_wiki_persona(source, character, settings=settings)
    return await asyncio.to_thread(load_persona_file, source, character)
