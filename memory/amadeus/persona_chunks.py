r"""ACTS, ATS and fixed splitting of a persona document into chunks (AMADEUS Eq. 3-5, Table 1).

ACTS (Adaptive Context-aware Text Splitter) sizes chunks to the persona: the chunk size is the
length of the longest paragraph, l_max (Eq. 3), the overlap l_o = l_max // 2 (integer division,
spec default), and each chunk c_i gets its hierarchical context H_i appended, ĉ_i = c_i + H_i
(Eq. 4-5), which is embedded with it. ATS is the ablation without H_i; ``fixed`` is the paper's
"Vanilla" splitter with one size for every character (1,000 / 200 characters, spec default).

Lengths are characters (the paper measures its data in "written characters"). ACTS and ATS
split each leaf section on its own, so a chunk never crosses a section boundary and has exactly
one H_i. Vanilla ignores the hierarchy, as the paper's Table 1 describes it ("splitting chunks
with a fixed length and overlap"): it cuts the whole document, headings included as the lines
they are in Markdown, so a chunk may run across a heading; its ``path`` (shown, never embedded)
is the section it starts in. The splitter is a recursive character splitter with LangChain's
``RecursiveCharacterTextSplitter`` merge rule (separators ``\n\n``, ``\n``, ``. ``, `` ``, ``""``;
a separator is dropped at a split and re-inserted when pieces merge), written here in a few
lines rather than adding a dependency. No LLM call.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from personae.errors import InputError
from personae.memory.amadeus.persona_doc import PersonaDoc, PersonaSection

Splitter = Literal["acts", "ats", "fixed"]
"""The three splitters of the paper's Table 1 ablation."""
SPLITTERS: tuple[Splitter, ...] = get_args(Splitter)
SEPARATORS = ("\n\n", "\n", ". ", " ", "")
FIXED_SIZE = 1000
"""Vanilla chunk size (characters); the paper gives none."""
FIXED_OVERLAP = 200
"""Vanilla overlap (characters); the paper gives none."""


@dataclass(frozen=True)
class PersonaChunk:
    """One chunk as stored and embedded."""

    id: str
    """sha1 of character, splitter, path, start offset and text: the same chunk keeps its id."""
    character: str
    path: tuple[str, ...]
    """Heading path of the chunk's section."""
    section_hash: str
    """:attr:`PersonaSection.section_hash` of its section."""
    ordinal: int
    """Position of the chunk in the whole document (0-based)."""
    start: int
    """Character offset of ``raw`` in its section's text."""
    raw: str
    """c_i: the chunk as cut from the section."""
    text: str
    """ĉ_i: what is stored and embedded (``raw`` plus H_i for ACTS)."""
    splitter: Splitter
    l_max: int
    """Chunk size used (ACTS/ATS: the longest paragraph)."""
    l_o: int
    """Overlap used."""


@dataclass(frozen=True)
class SplitSettings:
    """Chunk size and overlap of one split, and where they came from."""

    splitter: Splitter
    size: int
    overlap: int


def hierarchical_context(character: str, path: Sequence[str]) -> str:
    """H_i: ``[Context: character > section > subsection > ...]``."""
    return "[Context: " + " > ".join([character, *path]) + "]"


def split_settings(
    doc: PersonaDoc,
    splitter: Splitter,
    *,
    fixed_size: int = FIXED_SIZE,
    fixed_overlap: int = FIXED_OVERLAP,
    max_chunk_chars: int | None = None,
) -> SplitSettings:
    """l_max and l_o for ``doc`` (Eq. 3 and the half-overlap rule), or the fixed pair.

    ``max_chunk_chars`` caps l_max (and so l_o) for embedders with a short input limit; off by
    default, which is the paper's rule.
    """
    if splitter not in SPLITTERS:
        raise InputError(f"unknown splitter {splitter!r}", "use acts, ats or fixed")
    if splitter == "fixed":
        if fixed_size < 1 or not 0 <= fixed_overlap < fixed_size:
            raise InputError(
                f"fixed chunk size {fixed_size} / overlap {fixed_overlap} is unusable",
                "pass a size of at least 1 and an overlap smaller than it",
            )
        return SplitSettings(splitter, fixed_size, fixed_overlap)
    l_max = max((len(paragraph) for paragraph in doc.paragraphs), default=0)
    if l_max == 0:
        raise InputError(f"the persona {doc.source or doc.character} has no paragraphs", None)
    if max_chunk_chars is not None:
        if max_chunk_chars < 2:
            raise InputError("--max-chunk-chars must be at least 2", "pass a larger cap")
        l_max = min(l_max, max_chunk_chars)
    return SplitSettings(splitter, l_max, l_max // 2)


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """Recursive character splitting of ``text`` into pieces of at most ``size`` characters."""
    return _split(text, SEPARATORS, size, overlap)


def _split(text: str, separators: Sequence[str], size: int, overlap: int) -> list[str]:
    separator, rest = separators[-1], list[str]()
    for index, candidate in enumerate(separators):
        if candidate == "" or candidate in text:
            separator, rest = candidate, list(separators[index + 1 :])
            break
    pieces = [piece for piece in (text.split(separator) if separator else list(text)) if piece]
    chunks: list[str] = []
    small: list[str] = []
    for piece in pieces:
        if len(piece) < size:
            small.append(piece)
            continue
        if small:
            chunks += _merge(small, separator, size, overlap)
            small = []
        chunks += _split(piece, rest, size, overlap) if rest else [piece]
    if small:
        chunks += _merge(small, separator, size, overlap)
    return chunks


def _merge(pieces: Sequence[str], separator: str, size: int, overlap: int) -> list[str]:
    """LangChain's ``_merge_splits``: fill up to ``size``, carry up to ``overlap`` forward."""
    sep = len(separator)
    merged: list[str] = []
    window: list[str] = []
    total = 0
    for piece in pieces:
        joiner = sep if window else 0
        if total + len(piece) + joiner > size and window:
            text = separator.join(window).strip()
            if text:
                merged.append(text)
            while total > overlap or (total + len(piece) + (sep if window else 0) > size and total):
                total -= len(window[0]) + (sep if len(window) > 1 else 0)
                window.pop(0)
        window.append(piece)
        total += len(piece) + (sep if len(window) > 1 else 0)
    text = separator.join(window).strip()
    if text:
        merged.append(text)
    return merged


def _chunk_id(character: str, splitter: str, path: Sequence[str], start: int, text: str) -> str:
    key = "\x1f".join([character, splitter, *path, str(start), text])
    return hashlib.sha1(key.encode("utf-8")).hexdigest()


def _section_chunks(
    doc: PersonaDoc, section: PersonaSection, settings: SplitSettings, first: int
) -> list[PersonaChunk]:
    body = section.text
    context = hierarchical_context(doc.character, section.path)
    chunks: list[PersonaChunk] = []
    cursor = 0
    for offset, raw in enumerate(split_text(body, settings.size, settings.overlap)):
        found = body.find(raw, cursor)
        start = found if found >= 0 else cursor
        cursor = start + 1
        text = f"{raw}\n{context}" if settings.splitter == "acts" else raw
        chunks.append(
            PersonaChunk(
                id=_chunk_id(doc.character, settings.splitter, section.path, start, raw),
                character=doc.character,
                path=section.path,
                section_hash=section.section_hash,
                ordinal=first + offset,
                start=start,
                raw=raw,
                text=text,
                splitter=settings.splitter,
                l_max=settings.size,
                l_o=settings.overlap,
            )
        )
    return chunks


def split_persona(
    doc: PersonaDoc,
    splitter: Splitter = "acts",
    *,
    fixed_size: int = FIXED_SIZE,
    fixed_overlap: int = FIXED_OVERLAP,
    max_chunk_chars: int | None = None,
) -> list[PersonaChunk]:
    """Every chunk of ``doc`` in document order, split per leaf section."""
    settings = split_settings(
        doc,
        splitter,
        fixed_size=fixed_size,
        fixed_overlap=fixed_overlap,
        max_chunk_chars=max_chunk_chars,
    )
    if settings.splitter == "fixed":
        return _document_chunks(doc, settings)
    chunks: list[PersonaChunk] = []
    for section in doc.sections:
        chunks += _section_chunks(doc, section, settings, len(chunks))
    return chunks


def document_text(doc: PersonaDoc) -> tuple[str, list[tuple[int, PersonaSection]]]:
    """The persona as one Markdown text, and where each section starts in it.

    A heading line is written where the path changes (``##`` per level), as the document's
    Markdown has it; the Vanilla splitter cuts this text with no regard for the sections.
    """
    parts: list[str] = []
    starts: list[tuple[int, PersonaSection]] = []
    previous: tuple[str, ...] = ()
    offset = 0
    for section in doc.sections:
        shared = 0
        while shared < min(len(previous), len(section.path)):
            if previous[shared] != section.path[shared]:
                break
            shared += 1
        headings = [
            f"{'#' * (level + 2)} {section.path[level]}"
            for level in range(shared, len(section.path))
        ]
        text = "\n\n".join([*headings, section.text])
        starts.append((offset, section))
        parts.append(text)
        offset += len(text) + 2  # the blank line joining it to the next part
        previous = section.path
    return "\n\n".join(parts), starts


def _document_chunks(doc: PersonaDoc, settings: SplitSettings) -> list[PersonaChunk]:
    """Vanilla: fixed-size chunks of the whole document, across section boundaries."""
    body, starts = document_text(doc)
    offsets = [start for start, _ in starts]
    chunks: list[PersonaChunk] = []
    cursor = 0
    for ordinal, raw in enumerate(split_text(body, settings.size, settings.overlap)):
        found = body.find(raw, cursor)
        start = found if found >= 0 else cursor
        cursor = start + 1
        section = starts[max(0, bisect_right(offsets, start) - 1)][1]
        chunks.append(
            PersonaChunk(
                id=_chunk_id(doc.character, settings.splitter, (), start, raw),
                character=doc.character,
                path=section.path,
                section_hash=section.section_hash,
                ordinal=ordinal,
                start=start,
                raw=raw,
                text=raw,
                splitter=settings.splitter,
                l_max=settings.size,
                l_o=settings.overlap,
            )
        )
    return chunks
