"""A tiny synthetic novel with every cleaning hazard, for the ARCANE tests (ours, committed).

Chapter ``n`` carries the token ``MARK<n>`` in every paragraph, so any prompt holding text of
a chapter after the query chapter is caught by looking for ``MARK<m>`` with ``m > qc``.
"""

from __future__ import annotations

import re
from pathlib import Path

from personae.memory.novel_store import Novel, open_novel, save_novel
from personae.tools.novel_text import segment_novel

MARK = re.compile(r"MARK(\d+)")
CHAPTERS_PER_BOOK = (3, 3)


def chapter_body(n: int) -> str:
    """Three paragraphs long enough for RAG windows, every one marked with ``MARK<n>``."""
    paragraphs = [
        f"Ada walked with Bram along the river in the season MARK{n}, and the talk turned "
        f"to what each of them wanted. " * 4,
        f"Bram argued, Ada listened, and the day MARK{n} ended in a long silence between "
        f"them that neither would break. " * 4,
        f"Later Ada wrote in her diary MARK{n} that she had changed her mind about Bram. " * 3,
    ]
    return "\n\n".join(paragraphs)


def novel_text() -> str:
    """Front matter with a contents list, two books whose numbering restarts, back matter."""
    parts = [
        "THE RIVER\n\nAn Introduction by a Modern Editor\n\nThis edition's notes are ours.\n",
        "CONTENTS\nChapter 1\nChapter 2\nChapter 3\nChapter 1\nChapter 2\nChapter 3\n",
    ]
    n = 0
    for book, count in enumerate(CHAPTERS_PER_BOOK, 1):
        parts.append(f"\nBOOK THE {'FIRST' if book == 1 else 'SECOND'}\n")
        for number in range(1, count + 1):
            n += 1
            body = chapter_body(n)
            if n == 1:
                body = "I t was " + body  # a split drop cap
            parts.append(
                f"\nChapter {number}.\n\n{body}\n \nE b d\n\nE - B o o k s D i r e c t o r y . c o m\n"
            )
    parts.append(
        "\nENDNOTES\n\n1 (p. 3) An editorial note that must not be stored. Chapter 4 of it.\n"
    )
    return "".join(parts)


def write_novel_file(folder: Path) -> Path:
    """The synthetic novel as a UTF-8 file."""
    path = folder / "the_river.txt"
    path.write_text(novel_text(), encoding="utf-8")
    return path


def imported_novel(data: Path) -> Novel:
    """The synthetic novel segmented and saved under ``data`` as ``the_river``."""
    segmentation = segment_novel(novel_text())
    save_novel(data, title="The River", segmentation=segmentation, source="test", raw_sha256="0")
    return open_novel(data, "The River")


def future_marks(text: str, qc: int) -> list[int]:
    """Chapter marks in ``text`` from after ``qc``."""
    return sorted({int(m) for m in MARK.findall(text) if int(m) > qc})
