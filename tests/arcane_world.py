"""A tiny synthetic novel with every cleaning hazard, for the ARCANE tests (ours, committed).

Chapter ``n`` carries the token ``MARK<n>`` in every paragraph, so any prompt holding text of
a chapter after the query chapter is caught by looking for ``MARK<m>`` with ``m > qc``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from personae.memory.arcane_records import (
    ArcRecord,
    PhaseResponse,
    ProbeRecord,
    TrajectoryPhase,
    write_jsonl_atomic,
)
from personae.memory.novel_chunks import ChunkIndex
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


ARC_PHASES = ((1, 2), (3, 4), (5, 6))


def arc_record(character: str = "Ada", axis_id: str = "final_intra_01") -> ArcRecord:
    """A three-phase arc whose phase texts carry the marks of their own chapters."""
    trajectory = [
        TrajectoryPhase(
            phase=f"Phase {i}",
            chapter_range=rng,
            position_description=f"{character} at MARK{rng[0]} to MARK{rng[1]}",
            key_moments=[f"moment MARK{rng[1]}"],
        )
        for i, rng in enumerate(ARC_PHASES)
    ]
    return ArcRecord(
        axis_id=axis_id,
        novel="the_river",
        character=character,
        axis_type="intrapersonal",
        dimension_label="Agency vs communion",
        axis_name="From self-reliance to trust",
        pole_start="alone",
        pole_end="together MARK6",
        arc_direction="positive",
        confidence="high",
        source="both",
        trajectory=trajectory,
        evidence_summary="ending MARK6",
    )


def probe_record() -> ProbeRecord:
    """An In-World probe over ``arc_record``'s three phases (query chapters 2, 4, 6)."""
    responses = [
        PhaseResponse(
            phase_idx=i,
            phase_label=f"Phase {i}",
            query_chapter=rng[1],
            gt_action=f"acts {i}",
            gt_thought=f"thinks {i}",
        )
        for i, rng in enumerate(ARC_PHASES)
    ]
    return ProbeRecord(
        probe_id="the_river_ada_final_intra_01_iw_a1",
        probe_type="in_world",
        novel="the_river",
        character="Ada",
        axis_id="final_intra_01",
        anchor_phase_idx=1,
        anchor_query_chapter=4,
        scenario="Bram asks Ada to cross the river with him at night.",
        question="How does Ada respond when Bram asks?",
        phase_responses=responses,
    )


def prepared_novel(data: Path) -> Novel:
    """The synthetic novel with summaries, the chunk index, one arc and one probe."""
    novel = imported_novel(data)
    lines = [
        json.dumps({"chapter": i, "summary": f"Summary of chapter {i}: MARK{i} events."})
        for i in range(1, novel.count + 1)
    ]
    (novel.folder / "summaries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_jsonl_atomic(novel.folder / "arcs.jsonl", [arc_record()])
    write_jsonl_atomic(novel.folder / "probes.jsonl", [probe_record()])
    ChunkIndex.open(novel.folder, novel.slug).build(novel)
    return novel
