"""The chapter store: an imported novel on disk, read one chapter at a time.

Layout: ``DATA/novels/<slug>/{chapters.jsonl, meta.json}`` (plus the ARCANE artefacts other
modules put beside them). Every read of chapter text goes through :meth:`Novel.chapter`, so a
test can wrap it in a read spy and prove that a role-play at chapter ``qc`` never touched a
later chapter (ARCANE's no-future-read invariant, as the BOOKMARKS tests do for storylines).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from personae.errors import InputError
from personae.files import (
    read_json,
    read_jsonl,
    require_file,
    write_json_atomic,
    write_text_atomic,
)
from personae.process_caches import clears_on_reset

FORMATS = ("novel", "play")


@dataclass(frozen=True)
class Chapter:
    """One chapter as stored: global index (1-based), original label, text."""

    idx: int
    label: str
    text: str


def slugify(title: str) -> str:
    """``Pride and Prejudice`` -> ``pride_and_prejudice`` (valid in Chroma collection names)."""
    slug = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
    return slug[:80] or "novel"


class SegmentedText(Protocol):
    """What ``save_novel`` needs of a segmentation (``tools.novel_text.Segmentation``)."""

    @property
    def chapters(self) -> Sequence[ChapterLike]:
        """The chapters in order."""
        ...

    @property
    def pattern(self) -> str:
        """The heading pattern used."""
        ...

    @property
    def front_chars_dropped(self) -> int:
        """Characters cut before the first chapter."""
        ...

    @property
    def back_chars_dropped(self) -> int:
        """Characters cut after the last chapter."""
        ...

    @property
    def toc_entries_dropped(self) -> int:
        """Table-of-contents headings ignored."""
        ...

    @property
    def notes(self) -> Sequence[str]:
        """Remarks on the cut."""
        ...


class ChapterLike(Protocol):
    """A segmented chapter: global index, label, text."""

    @property
    def idx(self) -> int:
        """Global 1-based index."""
        ...

    @property
    def label(self) -> str:
        """Original heading."""
        ...

    @property
    def text(self) -> str:
        """Cleaned text."""
        ...


class Novel:
    """An imported novel: metadata plus chapters 1..C, text read through :meth:`chapter`."""

    def __init__(self, folder: Path, meta: dict[str, Any], chapters: list[Chapter]) -> None:
        self.folder = folder
        self.meta = meta
        self._chapters = tuple(chapters)

    @property
    def slug(self) -> str:
        """Folder name and id of the novel."""
        return str(self.meta["slug"])

    @property
    def title(self) -> str:
        """Title as given at import."""
        return str(self.meta["title"])

    @property
    def count(self) -> int:
        """C, the number of chapters."""
        return len(self._chapters)

    def labels(self) -> list[tuple[int, str, int]]:
        """``(idx, label, chars)`` for every chapter, without reading any text."""
        return [(c.idx, c.label, int(self.meta["chars"][c.idx - 1])) for c in self._chapters]

    def check_chapter(self, idx: int) -> int:
        """``idx`` if it is a chapter of this novel, else a one-line :class:`InputError`."""
        if not 1 <= idx <= self.count:
            raise InputError(
                f"chapter {idx} is out of range for {self.title!r}",
                f"use a chapter between 1 and {self.count} (personae arcane chapters {self.slug})",
            )
        return idx

    def chapter(self, idx: int) -> Chapter:
        """Chapter ``idx`` (1-based). The one way chapter text is read."""
        return self._chapters[self.check_chapter(idx) - 1]

    def mentions(self, name: str, through: int | None = None) -> int:
        """How often ``name`` or its first word occurs in chapters 1..``through`` (default all).

        "Elizabeth Bennet" also counts "Elizabeth": novels mostly use first names.
        """
        words = [name] + ([name.split()[0]] if " " in name else [])
        pattern = re.compile("|".join(rf"\b{re.escape(w)}\b" for w in words))
        last = self.count if through is None else through
        return sum(len(pattern.findall(self.chapter(i).text)) for i in range(1, last + 1))

    def check_character(self, name: str, through: int | None = None) -> str:
        """``name`` if chapters 1..``through`` mention it, else a one-line :class:`InputError`.

        Role-play passes its query chapter, so the check itself reads nothing from later on.
        """
        where = "" if through is None else f" in chapters 1-{through}"
        if not name.strip() or self.mentions(name.strip(), through) == 0:
            raise InputError(
                f"character {name!r} is never mentioned in {self.title!r}{where}",
                "check the spelling (names are case-sensitive, e.g. 'Elizabeth Bennet')",
            )
        return name.strip()


def novels_root(data_dir: Path) -> Path:
    """Where novels live under the data folder."""
    return data_dir / "novels"


def save_novel(
    data_dir: Path,
    *,
    title: str,
    segmentation: SegmentedText,
    source: str,
    form: str = "novel",
    raw_sha256: str,
) -> Path:
    """Write ``chapters.jsonl`` then ``meta.json`` (atomically; meta last marks completeness)."""
    folder = novels_root(data_dir) / slugify(title)
    lines = [
        json.dumps({"idx": c.idx, "label": c.label, "text": c.text}, ensure_ascii=False)
        for c in segmentation.chapters
    ]
    text = "\n".join(lines) + "\n"
    write_text_atomic(folder / "chapters.jsonl", text)
    meta = {
        "slug": slugify(title),
        "title": title,
        "form": form,
        "source": source,
        "raw_sha256": raw_sha256,
        "chapters_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "pattern": segmentation.pattern,
        "chapters": len(segmentation.chapters),
        "labels": [c.label for c in segmentation.chapters],
        "chars": [len(c.text) for c in segmentation.chapters],
        "front_chars_dropped": segmentation.front_chars_dropped,
        "back_chars_dropped": segmentation.back_chars_dropped,
        "toc_entries_dropped": segmentation.toc_entries_dropped,
        "notes": list(segmentation.notes),
    }
    write_json_atomic(folder / "meta.json", meta)
    return folder


def known_novels(data_dir: Path) -> list[str]:
    """Slugs of the complete novels under ``data_dir``."""
    root = novels_root(data_dir)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "meta.json").is_file())


def open_novel(data_dir: Path, book: str) -> Novel:
    """The novel named ``book`` (slug or title) under ``data_dir``; one-line error if unknown.

    Parsed once per version of its files: graphs open the novel in every node, and a long
    novel's chapters.jsonl takes milliseconds of CPU to parse.
    """
    folder = novels_root(data_dir) / slugify(book)
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        known = ", ".join(known_novels(data_dir)) or "none"
        raise InputError(
            f"unknown book {book!r} in {data_dir} (imported: {known})",
            "import it first with personae arcane import FILE --title TITLE",
        )
    chapters_path = folder / "chapters.jsonl"
    require_file(chapters_path, f"the chapters of {book!r},", REIMPORT_FIX)
    stamp = (meta_path.stat().st_mtime_ns, chapters_path.stat().st_mtime_ns)
    return _parsed(str(folder), stamp)


REIMPORT_FIX = "import the book again (personae arcane import)"
"""The fix for a damaged novel folder: the files are Personae's own, rebuilt by an import."""


@functools.lru_cache(maxsize=8)
def _parsed(folder_name: str, stamp: tuple[int, int]) -> Novel:
    """The novel in ``folder_name``, its files read as input: checked field by field.

    Files Personae wrote can still be damaged (edited by hand, cut by a full disk); a wrong
    field is one line naming the file, never a ``KeyError`` later.
    """
    folder = Path(folder_name)
    meta_path, chapters_path = folder / "meta.json", folder / "chapters.jsonl"
    meta = read_json(meta_path, REIMPORT_FIX)
    chapters: list[Chapter] = []
    for row in read_jsonl(chapters_path, strict=True, fix=REIMPORT_FIX):
        number = len(chapters) + 1
        idx, label, text = row.get("idx"), row.get("label"), row.get("text")
        if idx != number or not isinstance(label, str) or not isinstance(text, str):
            raise InputError(
                f"{chapters_path}: chapter {number} is damaged "
                "(idx, label and text must be the chapter number and two strings)",
                REIMPORT_FIX,
            )
        chapters.append(Chapter(number, label, text))
    chars = meta.get("chars") if isinstance(meta, dict) else None
    if not (
        isinstance(meta, dict)
        and all(isinstance(meta.get(key), str) for key in ("slug", "title", "form"))
        and isinstance(chars, list)
        and len(chars) == len(chapters)
        and all(isinstance(n, int) for n in chars)
    ):
        raise InputError(
            f"{meta_path} is damaged (slug, title, form and one character count per chapter)",
            REIMPORT_FIX,
        )
    if not chapters:
        raise InputError(f"{chapters_path} holds no chapter", REIMPORT_FIX)
    return Novel(folder, meta, chapters)


clears_on_reset("memory.arcane.novel_store.parsed", _parsed.cache_clear)
