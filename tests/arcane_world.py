"""A tiny synthetic novel with every cleaning hazard, for the ARCANE tests (ours, committed).

Chapter ``n`` carries the token ``MARK<n>`` in every paragraph, so any prompt holding text of
a chapter after the query chapter is caught by looking for ``MARK<m>`` with ``m > qc``.
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.messages import BaseMessage

from personae.memory.arcane.novel_chunks import ChunkIndex
from personae.memory.arcane.novel_store import Novel, novels_root, open_novel, save_novel
from personae.memory.arcane.records import (
    ArcRecord,
    PhaseResponse,
    ProbeRecord,
    TrajectoryPhase,
    write_jsonl_atomic,
)
from personae.memory.embeddings import DEFAULT_EMBEDDINGS, TextEmbedding, open_embedding
from personae.testing import prompt_text
from personae.tools.arcane.novel_text import segment_novel

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


def result_record(
    character: str, mode: str, score: float, probe: str, novel: str = "the_river"
) -> dict[str, Any]:
    """One line of an ARCANE eval's results.jsonl: a judged one-phase probe, every score equal."""
    return {
        "probe_id": probe,
        "novel": novel,
        "character": character,
        "probe_type": "in_world",
        "model": "m",
        "mode": mode,
        "judge": "j",
        "phases": [{"phase_idx": 0, "scores": {"apf": score, "rpf": score, "rae": score}}],
        "ptf": {"ptf": score},
    }


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


_PREPARED: dict[TextEmbedding, Path] = {}
"""The embedding in effect (by identity: an override is another object) -> a folder holding
the prepared novel, built once per process."""


def prepared_novel(data: Path) -> Novel:
    """The synthetic novel with summaries, the chunk index, one arc and one probe.

    Built once per process and embedding, then copied (Chroma's files included): 38 tests
    start from it, and building its chunk index is most of their CPU.
    """
    embedding = open_embedding(DEFAULT_EMBEDDINGS)
    if embedding not in _PREPARED:
        template = Path(tempfile.mkdtemp(prefix="arcane-world-"))
        atexit.register(shutil.rmtree, template, ignore_errors=True)
        _build_prepared_novel(template)
        _PREPARED[embedding] = template
    folder = open_novel(_PREPARED[embedding], "The River").folder
    shutil.copytree(folder, novels_root(data) / folder.name)
    return open_novel(data, "The River")


def _build_prepared_novel(data: Path) -> Novel:
    novel = imported_novel(data)
    lines = [
        json.dumps({"chapter": i, "summary": f"Summary of chapter {i}: MARK{i} events."})
        for i in range(1, novel.count + 1)
    ]
    (novel.folder / "summaries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_jsonl_atomic(novel.folder / "arcs.jsonl", [arc_record()])
    write_jsonl_atomic(novel.folder / "probes.jsonl", [probe_record()])
    ChunkIndex.open(novel).build(novel)
    return novel


def _chapter_of(text: str) -> int:
    found = re.findall(r"CURRENT CHAPTER \((\d+)\)", text)
    return int(found[-1]) if found else 0


def _trajectory(key: str = "key_events") -> list[dict[str, Any]]:
    return [
        {
            "phase": f"Phase {i}",
            "chapter_range": list(rng),
            "position_description": f"Ada at MARK{rng[0]}",
            key: [f"Ada talks with Bram MARK{rng[1]}"],
        }
        for i, rng in enumerate(ARC_PHASES)
    ]


def events_answer(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """T12: one event per chapter; the summary names the chapter it is through."""
    n = _chapter_of(prompt_text(messages))
    event = {
        "event_id": f"ch{n}_evt01",
        "description": f"Ada and Bram argue by the river MARK{n}",
        "characters_involved": ["Ada", "Bram"],
        "psychological_impact": {"emotional_state": "torn", "sequence_type": "neutral"},
        "relationship_changes": [],
        "intensity": "medium",
    }
    return {
        "chapter": n,
        "character": "Ada",
        "events": [event],
        "updated_running_summary": f"event summary through {n}",
    }


def state_answer(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """T13: present every chapter; the profile names the chapter it is through."""
    n = _chapter_of(prompt_text(messages))
    return {
        "chapter": n,
        "character": "Ada",
        "present_in_chapter": True,
        "emotional_state": "torn",
        "change_magnitude": "subtle",
        "chapter_summary": f"Ada in chapter {n}",
        "updated_running_profile": f"state profile through {n}",
    }


def induction_answer(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """T14: an Agency-Communion first axis over three phases."""
    axis = {
        "axis_type": "intrapersonal",
        "axis_id": "intra_01",
        "dimension_label": "Agency vs communion",
        "axis_name": "From alone to together",
        "pole_start": "alone",
        "pole_end": "together",
        "confidence": "high",
        "trajectory": _trajectory(),
        "evidence_summary": "the river talks",
    }
    return {
        "character": "Ada",
        "arc_richness": "rich",
        "intrapersonal_axes": [axis],
        "relational_axes": [],
    }


def _merged(axis_id: str, name: str, source: str, kind: str = "intrapersonal") -> dict[str, Any]:
    return {
        "axis_type": kind,
        "axis_id": axis_id,
        "dimension_label": name,
        "axis_name": name,
        "pole_start": "start",
        "pole_end": "end",
        "confidence": "high",
        "source": source,
        "arc_direction": "positive",
        "trajectory": _trajectory("key_moments"),
        "evidence_summary": "evidence",
        "source_character": "Ada",
        "target_character": "Bram" if kind == "relational" else None,
    }


def reconcile_answer(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """T15: matched, an artifact, a borderline and a valid_missed relational axis."""
    return {
        "character": "Ada",
        "comparison": {
            "intrapersonal": {
                "matched": [{"set_a_axis": "intra_01", "set_b_axis": "intra_01"}],
                "unique_to_a": [{"axis": "Fear of water", "assessment": "artifact"}],
                "unique_to_b": [{"axis": "Finding a voice", "assessment": "borderline"}],
            },
            "relational": {"unique_to_a": [{"axis": "Ada and Bram", "assessment": "valid_missed"}]},
        },
        "intrapersonal_axes": [
            _merged("final_intra_01", "Agency vs communion", "both"),
            _merged("final_intra_02", "Fear of water", "event_only"),
            _merged("final_intra_03", "Finding a voice", "psych_only"),
        ],
        "relational_axes": [_merged("final_rel_01", "Ada and Bram", "event_only", "relational")],
    }


def critic_answer(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """T16: every critic validates, except that only the structuralist likes 'Finding a voice'."""
    text = prompt_text(messages)
    verdict = "Finding a voice" not in text or "structuralist" in text
    cites = [{"author": "Critic", "title": "On Ada", "year": 1990}] if verdict else []
    return {"verdict": verdict, "reasoning": "Because.", "citations": cites}


def arc_responders() -> dict[str, Any]:
    """Responders for the arc_build graph's structured calls."""
    return {
        "ChapterEvents": events_answer,
        "ChapterState": state_answer,
        "AxisInduction": induction_answer,
        "Reconciliation": reconcile_answer,
        "CriticAnswer": critic_answer,
    }


def write_event_stream(novel: Novel, character: str = "Ada") -> None:
    """The event stream an arc build would have left: one event per chapter."""
    rows = [
        events_answer([cast(BaseMessage, _Msg(f"CURRENT CHAPTER ({n}):"))])
        for n in range(1, novel.count + 1)
    ]
    folder = novel.folder / "streams" / character.lower()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


class _Msg:
    def __init__(self, content: str) -> None:
        self.content = content


class ProbeScript:
    """Responders for probe_build, with switches the tests flip."""

    def __init__(self) -> None:
        self.voice_fails: dict[int, int] = {}
        """phase -> how many Q-Voice calls on it fail (then pass)."""
        self.off_phase: set[int] = set()
        """phases whose PhaseFit answer is two phases away."""
        self.verbatim = True
        self.world = "pass"
        self.anchor = "pass"
        self.bad_locator_once = False

    def responders(self) -> dict[str, Any]:
        return {
            "DecisionVariable": self.decision,
            "LifeStages": self.life_stages,
            "Abstraction": self.abstraction,
            "SceneLocation": self.locate,
            "ExtractedPassage": self.extract,
            "ProbeDraft": self.draft,
            "DraftResponse": self.regenerate,
            "Verdict": self.verdict,
            "PhaseFit": self.phasefit,
            "Discrimination": self.discriminate,
        }

    def decision(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        pairs = [{"from_phase_idx": k, "to_phase_idx": k + 1, "contrast": "shifts"} for k in (0, 1)]
        return {"decision_variable": "trust Bram or go alone", "phase_contrasts": pairs}

    def life_stages(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        stages = ["adolescent", "young_adult", "adult"]
        return {
            "phases": [
                {"phase_idx": k, "life_stage": s, "approx_age": f"{15 + 10 * k}"}
                for k, s in enumerate(stages)
            ]
        }

    def abstraction(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        return {
            "abstract_axis": "self-reliance vs trust",
            "abstract_phases": ["alone", "wavering", "trusting"],
        }

    def locate(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        found = re.findall(r"Chapter (\d+) \. (ch\d+_evt\d+)", prompt_text(messages))
        if self.bad_locator_once:
            self.bad_locator_once = False
            return {"chapter": 99, "event_id": "ch99_evt01", "reasoning": "invented"}
        chapter, event = found[-1]
        return {"chapter": int(chapter), "event_id": event, "reasoning": "last in range"}

    def extract(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        text = prompt_text(messages).split("CHAPTER TEXT:\n", 1)[1].split("\n\nReturn JSON", 1)[0]
        passage = text[:300] if self.verbatim else "Ada said something that is not in the book."
        return {
            "verbatim_passage": passage,
            "first_words": passage[:20],
            "last_words": passage[-20:],
        }

    def _responses(self) -> list[dict[str, Any]]:
        return [
            {
                "phase_idx": k,
                "gt_action": f"Ada acts {k}",
                "gt_speech": None,
                "gt_thought": f"thinks {k}",
                "gt_typicality": "typical",
            }
            for k in range(3)
        ]

    def draft(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        return {
            "scenario": "Bram holds out a hand at the ferry.",
            "question": "How does Ada respond when Bram offers help?",
            "phase_responses": self._responses(),
        }

    def regenerate(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        k = int(re.findall(r"REGENERATE phase_idx=(\d+)", prompt_text(messages))[-1])
        return {"phase_idx": k, "gt_action": f"Ada acts {k} again", "gt_thought": f"thinks {k}"}

    def verdict(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        text = prompt_text(messages)
        if "editorial fact-checker" in text:
            return {"verdict": self.anchor, "note": "anchor"}
        if "worldbuilding reviewer" in text:
            return {"verdict": self.world, "note": "world"}
        k = int(re.findall(r"PHASE: idx=(\d+)", text)[0])
        if self.voice_fails.get(k, 0) > 0:
            self.voice_fails[k] -= 1
            return {"verdict": "fail", "note": "generic voice"}
        return {"verdict": "pass", "note": "in character"}

    def phasefit(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        k = int(re.findall(r"Response thought: thinks (\d+)", prompt_text(messages))[0])
        guess = (k + 2) % 3 if k in self.off_phase else k
        return {"most_likely_phase_idx": guess, "confidence": "high", "note": "thought"}

    def discriminate(self, messages: Sequence[BaseMessage]) -> dict[str, Any]:
        weak = [{"from_phase_idx": 0, "to_phase_idx": 1, "separation": "similar", "note": "close"}]
        return {"weak_pairs": weak, "note": "ok"}


EVAL_ANSWER = (
    "Ada looks at the dark water for a long moment, then at Bram. She says she will go, but "
    "only if they cross at the ford where the current is slow, and she takes the lantern "
    "herself. She thinks that a year ago she would have gone alone, or not at all. "
) * 2
"""A role-play answer of typical length (the cost estimate's ``ANSWER_TOKENS``, about 150)."""


def eval_world(data: Path, probes: int = 4) -> Novel:
    """The prepared novel with ``probes`` probes of the arc (scenarios of different lengths)."""
    novel = prepared_novel(data)
    base = probe_record()
    records = [
        base.model_copy(
            update={
                "probe_id": f"{base.probe_id[:-1]}{n}",
                "scenario": base.scenario + " The ferry is gone." * n,
            }
        )
        for n in range(1, probes + 1)
    ]
    write_jsonl_atomic(novel.folder / "probes.jsonl", records)
    return novel


def eval_responders() -> dict[str, Any]:
    """Scripted role-play, TimeChara experts (no hint) and both judges for ``eval arcane``.

    Each answer is numbered: no two role-play models answer alike, so no judgment is cached.
    """
    answers = iter(range(1, 10**9))

    def text(messages: Sequence[BaseMessage]) -> str:
        prompt = prompt_text(messages)
        if "Chapter: N" in prompt:
            return "Chapter: unknown"
        if "Presence:" in prompt:
            return "Presence: present"
        return f"{EVAL_ANSWER}({next(answers)})"

    return {
        "text": text,
        "PhaseJudgement": lambda m: {"scores": {"apf": 70, "rpf": 60, "rae": 50}},
        "TrajectoryJudgement": lambda m: {
            "scores": {"ptf_alignment": 40, "ptf_direction": 50, "ptf_shape": 60},
            "average": 50.0,
        },
    }
