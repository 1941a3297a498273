"""Persona documents from what users have: Markdown, a profile.json, a wiki page, a CoSER book.

Every importer returns a :class:`~personae.memory.amadeus.persona_doc.PersonaDoc` with a real section
hierarchy, because ACTS appends each chunk's heading path to it:

- Markdown: headings are the hierarchy (``# Title`` then ``##``/``###``);
- ``profile.json`` (the profiler's output): the first-person profile prose and one section per
  profiling dimension whose facts are its paragraphs (the canon rule is an instruction, not
  knowledge: it is not indexed);
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
from urllib.parse import urlsplit

from personae.errors import InputError, PersonaeError, RemoteError
from personae.files import parse_json, read_text, require_file
from personae.memory.amadeus.persona_doc import (
    PersonaDoc,
    PersonaSection,
    check_persona,
    parse_markdown,
    split_paragraphs,
)
from personae.settings import Settings
from personae.tools.page_text import cut_at_word
from personae.tools.wiki import wiki_article
from personae.tools.wiki_page import WikiPage
from personae.tools.wiki_parser import parse_wiki_html, parse_wiki_html_async
from personae.urls import source_url

logger = logging.getLogger(__name__)
notices = logging.getLogger("personae.notices")
"""What the user must see while the command goes on (the CLI prints it as a notice)."""
MAX_SECTION_CHARS = 200_000
"""Longest section indexed (about 50,000 tokens; a long wiki section is 20,000 characters).

ACTS sizes every chunk by the longest paragraph, so one 20 MB paragraph would make 20 MB
chunks for the embedder; a longer section keeps its first paragraphs up to the cap, with a
notice naming it."""

SourceKind = Literal["markdown", "profile", "wiki", "coser"]
_FIX = "pass a .md persona, a profile.json, a wiki page URL or saved .html, or a CoSER book .json"


def _read(path: Path) -> str:
    require_file(path, "persona source", _FIX)
    return read_text(path)


def _sections(pairs: Sequence[tuple[tuple[str, ...], Sequence[str]]]) -> tuple[PersonaSection, ...]:
    kept = []
    for path, paragraphs in pairs:
        clean = tuple(p.strip() for p in paragraphs if p and p.strip())
        if clean:
            kept.append(PersonaSection(path, clean))
    return tuple(kept)


def persona_from_profile(document: Mapping[str, Any], *, source: str = "") -> PersonaDoc:
    """A persona from a profiler ``profile.json``: the prose, then one section per dimension.

    The ``canon`` field is left out: it is an instruction about which version of the story
    to follow ("the original manga"), not something the character knows, and indexed as a
    section it would be retrieved as persona knowledge. Every field is checked for its type
    (the file may be hand-edited): a wrong one is one line naming the field.
    """
    where = source or "the file"
    character = document.get("character")
    if not isinstance(character, str) or not character.strip() or "dimensions" not in document:
        raise InputError(f"{where} is not a Personae profile.json", _FIX)
    profile = document.get("profile")
    dimensions = document.get("dimensions")
    if not isinstance(profile, str | None):
        raise InputError(f"{where}: 'profile' is not text", _PROFILE_FIX)
    if not isinstance(dimensions, Mapping):
        raise InputError(f"{where}: 'dimensions' is not an object", _PROFILE_FIX)
    pairs: list[tuple[tuple[str, ...], Sequence[str]]] = [
        (("Profile",), split_paragraphs(profile or ""))
    ]
    for dimension, facts in dimensions.items():
        if not isinstance(facts, list) or not all(_is_fact(fact) for fact in facts):
            raise InputError(
                f"{where}: dimension {str(dimension)[:40]!r} is not a list of facts",
                _PROFILE_FIX,
            )
        texts = [str(fact["text"]) for fact in facts]
        pairs.append(((str(dimension).replace("_", " ").capitalize(),), texts))
    doc = PersonaDoc(character.strip(), _sections(pairs), source=source, source_kind="profile")
    return check_persona(doc)


_URL_EXAMPLE = "https://haruhi.fandom.com/wiki/Kyon"
_PROFILE_FIX = 'rewrite the profile with personae profile, or fix the field: {"text": "..."}'


def _is_fact(fact: object) -> bool:
    return isinstance(fact, Mapping) and isinstance(fact.get("text"), str)


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
    datasets = book.get("character_datasets")
    return sorted(str(name) for name in datasets) if isinstance(datasets, Mapping) else []


def persona_from_coser(
    book: Mapping[str, Any], character: str | None, *, source: str = ""
) -> PersonaDoc:
    """A CoSER book character as a persona: profile, activity and motivations per chapter."""
    where = source or "this CoSER book"
    datasets, plots = book.get("character_datasets"), book.get("plots") or []
    if not isinstance(datasets, Mapping) or not isinstance(plots, list):
        raise InputError(f"{where} is not a CoSER book (character_datasets, plots)", _FIX)
    names = coser_characters(book)
    match = next((n for n in names if character and n.casefold() == character.casefold()), None)
    if match is None:
        raise InputError(
            f"{character!r} is not a character of {where}"
            if character
            else f"{where} holds several characters",
            f"pass --character with one of: {', '.join(names)}",
        )
    data = datasets[match]
    if not isinstance(data, Mapping) or not all(
        isinstance(data.get(key) or [], list) for key in ("plots", "conversations")
    ):
        raise InputError(f"{where}: the record of {match!r} is not a CoSER character", _FIX)

    def chapter(i_p: Any) -> str:
        index = int(i_p) if str(i_p).isdigit() else -1
        found = plots[index] if 0 <= index < len(plots) else None
        name = str(found.get("chapter") or "") if isinstance(found, Mapping) else ""
        return name if name and name != "None" else f"Plot {index + 1}"

    pairs: list[tuple[tuple[str, ...], Sequence[str]]] = [
        (("Profile",), split_paragraphs(str(data.get("profile") or "").replace("**", "")))
    ]
    for plot in data.get("plots") or []:
        if isinstance(plot, Mapping):
            texts = [str(plot.get("description") or ""), str(plot.get("experience") or "")]
            pairs.append((("Activity", chapter(plot.get("i_p"))), texts))
    for scene in data.get("conversations") or []:
        if isinstance(scene, Mapping):
            motivation = [str(scene.get("motivation"))]
            pairs.append((("Motivations", chapter(scene.get("i_p"))), motivation))
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
        article = wiki_article(url)
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
    page = await parse_wiki_html_async(fetched.text, url=url)  # in a worker thread
    return persona_from_wiki_page(page, character)


def detect_kind(source: str) -> SourceKind:
    """Which importer reads ``source``: URL or ``.html`` → wiki, ``.md`` → markdown, ``.json``.

    Raises:
        InputError: ``source`` is written as a URL (``scheme://``) but is not a valid http(s) one.
    """
    if source_url(source, "the persona source", _URL_EXAMPLE):
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
    """A persona from any supported ``source``, sections capped; file reads run in a thread."""
    import asyncio

    if detect_kind(source) == "wiki" and urlsplit(source).scheme in ("http", "https"):
        doc = await fetch_wiki_persona(source, character, settings=settings)
    else:
        doc = await asyncio.to_thread(load_persona_file, source, character)
    return cap_sections(doc)


def cap_sections(doc: PersonaDoc, max_chars: int = MAX_SECTION_CHARS) -> PersonaDoc:
    """``doc`` with every section cut to ``max_chars`` (whole paragraphs first), each cut noticed."""
    sections = []
    for section in doc.sections:
        total = sum(len(p) for p in section.paragraphs) + 2 * (len(section.paragraphs) - 1)
        if total <= max_chars:
            sections.append(section)
            continue
        kept: list[str] = []
        used = 0
        for paragraph in section.paragraphs:
            room = max_chars - used - (2 if kept else 0)
            if room <= 0:
                break
            kept.append(paragraph if len(paragraph) <= room else cut_at_word(paragraph, room))
            used += len(kept[-1]) + (2 if len(kept) > 1 else 0)
        notices.warning(
            "the section %r of %s is %s characters; indexed its first %s (the section cap)",
            section.title,
            doc.source or doc.character,
            f"{total:,}",
            f"{used:,}",
        )
        sections.append(PersonaSection(section.path, tuple(kept)))
    return PersonaDoc(
        doc.character, tuple(sections), source=doc.source, source_kind=doc.source_kind
    )
