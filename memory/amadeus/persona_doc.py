"""The persona document AMADEUS retrieves from: sections in a hierarchy, each holding paragraphs.

AMADEUS (Park et al. 2026) grounds a character in a *hierarchical* persona document
("Frieren's activities in the story > the journey to find Aureole > the First-Class Mage Exam"):
its splitter, ACTS, sizes chunks by the longest paragraph and appends each chunk's place in the
hierarchy. So the document keeps exactly that: an ordered list of leaf sections, each with its
heading path and its paragraphs. Markdown is the native format (``#``/``##``/``###`` headings,
blank-line-separated paragraphs); the importers in :mod:`personae.tools.amadeus.persona_import` turn a
``profile.json``, a wiki page and a CoSER book character into the same shape.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from personae.errors import InputError

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BLANK = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class PersonaSection:
    """One leaf section: its heading path below the character and its paragraphs."""

    path: tuple[str, ...]
    """Headings from the top section down, e.g. ``("Activity", "Act I, Scene 1")``."""
    paragraphs: tuple[str, ...]
    """Blank-line-separated blocks of the section body, headings excluded."""

    @property
    def text(self) -> str:
        """The body as the splitter sees it: paragraphs joined by a blank line."""
        return "\n\n".join(self.paragraphs)

    @property
    def section_hash(self) -> str:
        """Content hash of path and body: re-indexing re-embeds only sections whose hash moved."""
        payload = json.dumps([list(self.path), list(self.paragraphs)], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    @property
    def title(self) -> str:
        """The path joined with `` > `` (``(top)`` for text above the first heading)."""
        return " > ".join(self.path) or "(top)"


@dataclass(frozen=True)
class PersonaDoc:
    """A character's persona: ordered leaf sections, and where the document came from."""

    character: str
    """Display name of the character (the root of every chunk's hierarchical context)."""
    sections: tuple[PersonaSection, ...]
    """Leaf sections in document order; sections without paragraphs are dropped."""
    source: str = ""
    """Where the document came from (file path or URL), recorded in the index."""
    source_kind: str = "markdown"
    """Importer that built it: ``markdown``, ``profile``, ``wiki``, ``coser``."""
    language: str = "en"
    """Language of the text (the paper's personas are Korean; ours are English)."""
    notes: tuple[str, ...] = field(default=())
    """What the importer dropped or assumed, shown to the user."""

    @property
    def sha256(self) -> str:
        """Hash of the whole content (character, paths, paragraphs)."""
        payload = json.dumps(
            [self.character, [[list(s.path), list(s.paragraphs)] for s in self.sections]],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @property
    def paragraphs(self) -> list[str]:
        """Every paragraph of every section, in order."""
        return [paragraph for section in self.sections for paragraph in section.paragraphs]

    def to_markdown(self) -> str:
        """The document as Markdown that :func:`parse_markdown` reads back to the same sections."""
        lines = [f"# {self.character}", ""]
        previous: tuple[str, ...] = ()
        for section in self.sections:
            shared = 0
            while (
                shared < min(len(previous), len(section.path))
                and previous[shared] == section.path[shared]
            ):
                shared += 1
            if shared == len(section.path) and section.path:
                shared -= 1  # same path twice in a row: repeat its heading
            for depth in range(shared, len(section.path)):
                lines += ["#" * (depth + 2) + " " + section.path[depth], ""]
            for paragraph in section.paragraphs:
                lines += [paragraph, ""]
            previous = section.path
        return "\n".join(lines).rstrip() + "\n"


def split_paragraphs(text: str) -> list[str]:
    """Blank-line-separated blocks, stripped, empty ones dropped."""
    return [block.strip() for block in _BLANK.split(text.strip()) if block.strip()]


def check_persona(doc: PersonaDoc) -> PersonaDoc:
    """Reject a document AMADEUS cannot index: no text, or no paragraph in any section.

    Raises:
        InputError: One line naming the source and what a persona needs.
    """
    where = doc.source or doc.character
    if not doc.character.strip():
        raise InputError(f"the persona {where} names no character", "pass --character NAME")
    if not doc.sections:
        raise InputError(
            f"the persona {where} has no paragraphs",
            "write the persona as Markdown with text under its headings (a blank line "
            "between paragraphs)",
        )
    return doc


def parse_markdown(text: str, character: str, *, source: str = "") -> PersonaDoc:
    """A persona from Markdown: headings are the hierarchy, blank lines separate paragraphs.

    A single level-1 heading that opens the document is the document's title (the character),
    not a section, so ``# Iago`` / ``## Profile`` gives the path ``("Profile",)``. Text above
    the first section heading gets the empty path (its context is the character alone).

    Raises:
        InputError: The text is empty or has no paragraph.
    """
    if not text.strip():
        raise InputError(f"the persona {source or character} is empty", "write the persona text")
    lines = text.replace("\r\n", "\n").split("\n")
    headings = [(i, _HEADING.match(line)) for i, line in enumerate(lines)]
    found = [(i, m) for i, m in headings if m is not None]
    levels = [len(m.group(1)) for _, m in found]
    title_line = -1
    if found and levels[0] == 1 and levels.count(1) == 1:
        before = "\n".join(lines[: found[0][0]]).strip()
        if not before:
            title_line = found[0][0]
    offset = 1 if title_line >= 0 else 0
    sections: list[PersonaSection] = []
    stack: list[tuple[int, str]] = []
    body: list[str] = []

    def flush() -> None:
        paragraphs = split_paragraphs("\n".join(body))
        if paragraphs:
            path = tuple(heading for _, heading in stack)
            sections.append(PersonaSection(path, tuple(paragraphs)))
        body.clear()

    for index, line in enumerate(lines):
        match = _HEADING.match(line)
        if match is None:
            body.append(line)
            continue
        flush()
        if index == title_line:
            continue
        level = len(match.group(1)) - offset
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, match.group(2).strip()))
    flush()
    return check_persona(PersonaDoc(character, tuple(sections), source=source))
