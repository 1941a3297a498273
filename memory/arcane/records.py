"""ARCANE's persisted records: arcs (App. C) and probes (App. C, Fig. 7), and their files.

Files under ``DATA/novels/<slug>/``: ``arcs.jsonl`` (one Arc record per (character, axis)),
``probes.jsonl`` (one Probe record per line), ``summaries.jsonl`` (T34 chapter summaries).
Records are pydantic models with ``Literal`` enums, so a record a model or a hand edit broke
fails to load with the line named, instead of flowing into a prompt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from personae.errors import InputError
from personae.files import parse_jsonl, read_jsonl, read_text

AxisType = Literal["intrapersonal", "relational"]
ArcDirection = Literal["positive", "negative", "flat", "disillusionment", "ambivalent"]
AxisSource = Literal["both", "event_only", "psych_only"]
Confidence = Literal["high", "medium", "low"]
ProbeType = Literal["in_scenario", "in_world", "out_of_world"]
PROBE_TYPES: tuple[ProbeType, ...] = ("in_scenario", "in_world", "out_of_world")
PROBE_TYPE_CODES: dict[ProbeType, str] = {
    "in_scenario": "is",
    "in_world": "iw",
    "out_of_world": "oow",
}


class PhaseBase(BaseModel):
    """What every stage says of a trajectory phase: label, chapter range [start, end], position.

    The one declaration of a phase: T14's induced phase adds its key events, T15's merged phase
    (the one App. C stores, :class:`TrajectoryPhase`) its key moments.
    """

    phase: str
    chapter_range: tuple[int, int]
    position_description: str


class TrajectoryPhase(PhaseBase):
    """One phase of an axis as App. C stores it: label, chapter range, position, key moments."""

    key_moments: list[str] = Field(default_factory=list)


class AxisBase(BaseModel):
    """What every stage says of an axis: the one declaration of its identity and poles.

    T14's induced axis, T15's merged axis (``agents/arcane/axes.py``) and App. C's stored
    :class:`ArcRecord` extend it; the fields are in T14/T15's order, the order the models are
    asked to write them in.
    """

    axis_type: AxisType
    axis_id: str
    dimension_label: str
    axis_name: str
    pole_start: str
    pole_end: str
    confidence: Confidence


class Citation(BaseModel):
    """A critic's citation (T16), stored as given: it cannot be verified offline."""

    author: str
    title: str
    year: int | None = None
    publication: str | None = None
    url: str | None = None
    relevance: str = ""
    verified: bool = False


class CriticVerdict(BaseModel):
    """One critic's verdict on one axis (T16)."""

    verdict: bool
    reasoning: str
    citations: list[Citation] = Field(default_factory=list)


class AnnotatorVote(BaseModel):
    """One human annotator's ratings of one axis (eval split)."""

    annotator: str
    validity: bool
    novel_span: str = ""
    importance: str = ""
    confidence: str = ""


class ArcRecord(AxisBase):
    """One (character, axis) arc, App. C, plus our bookkeeping fields.

    Written in App. C's field order (``APP_C_ORDER``): in ``arcs.jsonl`` and in the Arc-mode
    payload the role-play model reads.
    """

    novel: str
    character: str
    arc_direction: ArcDirection
    source: AxisSource
    trajectory: list[TrajectoryPhase]
    target_character: str | None = None
    evidence_summary: str = ""
    literary_validation: dict[str, CriticVerdict] = Field(default_factory=dict)
    annotation: list[AnnotatorVote] = Field(default_factory=list)
    weak_pairs: list[dict[str, Any]] = Field(default_factory=list)
    reconciliation_tag: Literal["matched", "valid_missed", "borderline"] = "matched"
    split: Literal["train", "eval", "unvalidated"] = "train"
    validated_by: Literal["critics", "humans", "none"] = "critics"
    arc_richness: Literal["rich", "moderate", "flat"] = "moderate"

    @property
    def relational_target(self) -> str | None:
        """The second party of a relational axis; ``None`` for an intrapersonal one.

        What the prompts' "[If the axis is relational:]" blocks (T22-T24, T31) key on: the axis
        type, never a ``target_character`` an intrapersonal axis happens to carry.
        """
        return self.target_character if self.axis_type == "relational" else None

    @model_serializer(mode="wrap")
    def _in_app_c_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {name: data[name] for name in APP_C_ORDER if name in data}


BOOKKEEPING_FIELDS = (
    "annotation",
    "weak_pairs",
    "reconciliation_tag",
    "split",
    "validated_by",
    "arc_richness",
)
"""An arc record's fields that are ours, not App. C's (the gate's and the split's bookkeeping)."""

APP_C_ORDER = (
    "axis_id",
    "novel",
    "character",
    "axis_type",
    "dimension_label",
    "axis_name",
    "pole_start",
    "pole_end",
    "arc_direction",
    "confidence",
    "source",
    "trajectory",
    "target_character",
    "evidence_summary",
    "literary_validation",
    *BOOKKEEPING_FIELDS,
)
"""App. C's order of an arc record's fields (our bookkeeping fields last)."""


class PhaseQuality(BaseModel):
    """Validator results for one phase response (T26, T27)."""

    q_voice: Literal["pass", "fail"] | None = None
    q_phasefit: Literal["pass", "adjacent", "off_phase"] | None = None
    notes: list[str] = Field(default_factory=list)


class PhaseResponse(BaseModel):
    """A probe's reference response for one phase (App. C)."""

    phase_idx: int
    phase_label: str
    query_chapter: int
    gt_action: str
    gt_speech: str | None = None
    gt_thought: str
    gt_typicality: Literal["typical", "plausible_tail"] = "typical"
    quality: PhaseQuality = Field(default_factory=PhaseQuality)
    retry_count: int = 0
    unavailable: bool = False


class ProbeRecord(BaseModel):
    """One probe (App. C, Fig. 7) plus our fields: novel, character, axis, decision variable."""

    probe_id: str
    probe_type: ProbeType
    novel: str
    character: str
    axis_id: str
    anchor_phase_idx: int
    anchor_query_chapter: int
    scenario: str
    question: str
    phase_responses: list[PhaseResponse]
    anchor_source: dict[str, Any] | None = None
    era_label: str | None = None
    era_description: str | None = None
    abstract_axis: str | None = None
    abstract_phases: list[str] | None = None
    decision_variable: str = ""
    life_stages: list[dict[str, Any]] = Field(default_factory=list)
    style_lint: list[str] = Field(default_factory=list)
    probe_check: dict[str, Any] = Field(default_factory=dict)


def probe_id_for(novel: str, character: str, axis_id: str, probe_type: ProbeType, k: int) -> str:
    """``{novel}_{character}_{axis_id}_{is|iw|oow}_a{k}`` (spec default 21: with the character)."""
    from personae.memory.arcane.novel_store import slugify

    code = PROBE_TYPE_CODES[probe_type]
    return f"{novel}_{slugify(character)}_{axis_id}_{code}_a{k}"


def phase_query_chapter(phase: TrajectoryPhase) -> int:
    """A phase's query chapter: the end of its chapter range (spec default 10)."""
    return int(phase.chapter_range[1])


def _load_jsonl(path: Path, model: type[BaseModel], what: str) -> list[Any]:
    fix = f"fix or delete the line, or rebuild the {what}s"
    rows = []
    for number, row in parse_jsonl(read_text(path), str(path), fix):
        try:
            rows.append(model.model_validate(row))
        except ValidationError as error:
            first = str(error).splitlines()[0]
            raise InputError(f"{path} line {number} is not a valid {what} ({first})", fix) from None
    return rows


def load_arcs(folder: Path) -> list[ArcRecord]:
    """Every arc of a novel folder (empty when none were built)."""
    path = folder / "arcs.jsonl"
    return _load_jsonl(path, ArcRecord, "arc record") if path.is_file() else []


def load_probes(folder: Path) -> list[ProbeRecord]:
    """Every probe of a novel folder (empty when none were built)."""
    path = folder / "probes.jsonl"
    return _load_jsonl(path, ProbeRecord, "probe record") if path.is_file() else []


def write_jsonl_atomic(path: Path, rows: Sequence[BaseModel]) -> None:
    """Replace ``path`` with one JSON line per row, atomically."""
    from personae.files import write_text_atomic

    text = "".join(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n" for r in rows)
    write_text_atomic(path, text)


def load_summaries(folder: Path) -> dict[int, str]:
    """T34 summaries by chapter index (empty when ``arcane prepare`` has not run).

    ``arcane prepare`` appends one row per chapter: a kill can tear the last one, which is
    skipped here, so that chapter is summarized again (from the answer cache).
    """
    summaries: dict[int, str] = {}
    for row in read_jsonl(folder / "summaries.jsonl"):
        chapter, summary = row.get("chapter"), row.get("summary")
        if isinstance(chapter, int) and isinstance(summary, str):
            summaries[chapter] = summary
    return summaries
