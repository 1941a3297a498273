"""ARCANE records as plain JSON, the way they travel in graph state (and so in checkpoints).

Why: a pydantic object in LangGraph state is checkpointed by class name and rebuilt on load by
importing that class, which the ``langgraph dev`` server's checkpointer warns about
("Deserializing unregistered type") and will refuse in a future version. So ARCANE graph state
holds these TypedDicts (``Model.model_dump(mode="json")``, see :func:`dump`) and nodes validate
them back into the pydantic records (``Model.model_validate``) where they use them.

Each ``XJSON`` is the JSON twin of a pydantic model ``X`` (named in its docstring), nested parts
included, so graph state is typed all the way down; ``tests/arcane/test_records_json.py`` checks
every twin against its model (same fields, same JSON types), so the two cannot drift apart.
Twins of the shared bases (:class:`AxisJSON`, :class:`PhaseJSON`) are extended the way the
models are.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel
from typing_extensions import TypedDict

from personae.memory.arcane.records import (
    ArcDirection,
    AxisSource,
    AxisType,
    Confidence,
    ProbeType,
)

Level = Literal["low", "medium", "high"]


def dump(record: BaseModel) -> Any:
    """``record`` as state JSON (the caller's annotation names which TypedDict)."""
    return cast(Any, record.model_dump(mode="json"))


class PsychologicalImpactJSON(TypedDict):
    """``agents.arcane.streams.PsychologicalImpact`` as JSON."""

    emotional_state: str
    belief_change: str
    self_perception_change: str
    sequence_type: Literal["redemptive", "contaminating", "neutral"]
    meaning_made: str


class RelationshipChangeJSON(TypedDict):
    """``agents.arcane.streams.RelationshipChange`` as JSON."""

    target: str
    direction: Literal["negative", "positive", "neutral", "ambivalent"]
    change_description: str
    dimensions_affected: list[Literal["trust", "esteem", "intimacy", "antagonism"]]


class StreamEventJSON(TypedDict):
    """``agents.arcane.streams.StreamEvent`` as JSON."""

    event_id: str
    description: str
    characters_involved: list[str]
    psychological_impact: PsychologicalImpactJSON
    relationship_changes: list[RelationshipChangeJSON]
    intensity: Level


class ChapterEventsJSON(TypedDict):
    """``agents.arcane.streams.ChapterEvents`` as JSON."""

    chapter: int
    character: str
    events: list[StreamEventJSON]
    updated_running_summary: str


class RelationshipDimensionsJSON(TypedDict):
    """``agents.arcane.streams.RelationshipDimensions`` as JSON."""

    trust: Level
    esteem: Level
    intimacy: Level


class RelationshipStateJSON(TypedDict):
    """``agents.arcane.streams.RelationshipState`` as JSON."""

    target: str
    current_attitude: str
    direction_of_change: Literal["warming", "cooling", "stable", "conflicted"]
    dimensions: RelationshipDimensionsJSON


class ChapterStateJSON(TypedDict):
    """``agents.arcane.streams.ChapterState`` as JSON."""

    chapter: int
    character: str
    present_in_chapter: bool
    emotional_state: str
    belief_shifts: str
    current_desires: str
    current_intentions: str
    relationship_states: list[RelationshipStateJSON]
    self_awareness_notes: str
    change_magnitude: Literal["none", "subtle", "moderate", "significant", "transformative"]
    chapter_summary: str
    updated_running_profile: str


class PhaseJSON(TypedDict):
    """``memory.arcane.records.PhaseBase`` as JSON."""

    phase: str
    chapter_range: list[int]
    position_description: str


class InducedPhaseJSON(PhaseJSON):
    """``agents.arcane.axes.InducedPhase`` as JSON."""

    key_events: list[str]


class TrajectoryPhaseJSON(PhaseJSON):
    """``memory.arcane.records.TrajectoryPhase`` (and T15's ``MergedPhase``) as JSON."""

    key_moments: list[str]


class AxisJSON(TypedDict):
    """``memory.arcane.records.AxisBase`` as JSON."""

    axis_type: AxisType
    axis_id: str
    dimension_label: str
    axis_name: str
    pole_start: str
    pole_end: str
    confidence: Confidence


class InducedAxisJSON(AxisJSON):
    """``agents.arcane.axes.InducedAxis`` as JSON."""

    trajectory: list[InducedPhaseJSON]
    evidence_summary: str
    source_character: str | None
    target_character: str | None


class AxisInductionJSON(TypedDict):
    """``agents.arcane.axes.AxisInduction`` as JSON."""

    character: str
    arc_richness: Literal["rich", "moderate", "flat"]
    intrapersonal_axes: list[InducedAxisJSON]
    relational_axes: list[InducedAxisJSON]


class MergedAxisJSON(AxisJSON):
    """``agents.arcane.axes.MergedAxis`` as JSON."""

    source: AxisSource
    arc_direction: ArcDirection
    trajectory: list[TrajectoryPhaseJSON]
    evidence_summary: str
    source_character: str | None
    target_character: str | None


class ReconciliationJSON(TypedDict):
    """``agents.arcane.axes.Reconciliation`` as JSON."""

    character: str
    comparison: dict[str, Any]
    intrapersonal_axes: list[MergedAxisJSON]
    relational_axes: list[MergedAxisJSON]


class CitationJSON(TypedDict):
    """``memory.arcane.records.Citation`` as JSON."""

    author: str
    title: str
    year: int | None
    publication: str | None
    url: str | None
    relevance: str
    verified: bool


class CriticVerdictJSON(TypedDict):
    """``memory.arcane.records.CriticVerdict`` as JSON."""

    verdict: bool
    reasoning: str
    citations: list[CitationJSON]


class AnnotatorVoteJSON(TypedDict):
    """``memory.arcane.records.AnnotatorVote`` as JSON."""

    annotator: str
    validity: bool
    novel_span: str
    importance: str
    confidence: str


class WeakPairJSON(TypedDict):
    """``agents.arcane.validators.WeakPair`` as JSON (what ``ArcRecord.weak_pairs`` holds)."""

    from_phase_idx: int
    to_phase_idx: int
    separation: Literal["separated", "similar", "ambiguous"]
    note: str


class ArcRecordJSON(AxisJSON):
    """``memory.arcane.records.ArcRecord`` as JSON."""

    novel: str
    character: str
    arc_direction: ArcDirection
    source: AxisSource
    trajectory: list[TrajectoryPhaseJSON]
    target_character: str | None
    evidence_summary: str
    literary_validation: dict[str, CriticVerdictJSON]
    annotation: list[AnnotatorVoteJSON]
    weak_pairs: list[WeakPairJSON]
    reconciliation_tag: Literal["matched", "valid_missed", "borderline"]
    split: Literal["train", "eval", "unvalidated"]
    validated_by: Literal["critics", "humans", "none"]
    arc_richness: Literal["rich", "moderate", "flat"]


class PhaseContrastJSON(TypedDict):
    """``agents.arcane.probe_prep.PhaseContrast`` as JSON."""

    from_phase_idx: int
    to_phase_idx: int
    contrast: str


class DecisionVariableJSON(TypedDict):
    """``agents.arcane.probe_prep.DecisionVariable`` as JSON."""

    decision_variable: str
    phase_contrasts: list[PhaseContrastJSON]


class LifeStageTagJSON(TypedDict):
    """``agents.arcane.probe_prep.LifeStageTag`` as JSON (what ``ProbeRecord.life_stages`` holds)."""

    phase_idx: int
    life_stage: Literal["child", "adolescent", "young_adult", "adult", "older_adult"]
    approx_age: str
    rationale: str


class AbstractionJSON(TypedDict):
    """``agents.arcane.probe_prep.Abstraction`` as JSON."""

    abstract_axis: str
    abstract_phases: list[str]


class DraftResponseJSON(TypedDict):
    """``agents.arcane.designers.DraftResponse`` as JSON."""

    phase_idx: int
    gt_action: str
    gt_speech: str | None
    gt_thought: str
    gt_typicality: Literal["typical", "plausible_tail"]


class ProbeDraftJSON(TypedDict):
    """``agents.arcane.designers.ProbeDraft`` as JSON."""

    scenario: str
    question: str
    phase_responses: list[DraftResponseJSON]


class PhaseQualityJSON(TypedDict):
    """``memory.arcane.records.PhaseQuality`` as JSON."""

    q_voice: Literal["pass", "fail"] | None
    q_phasefit: Literal["pass", "adjacent", "off_phase"] | None
    notes: list[str]


class PhaseResponseJSON(TypedDict):
    """``memory.arcane.records.PhaseResponse`` as JSON."""

    phase_idx: int
    phase_label: str
    query_chapter: int
    gt_action: str
    gt_speech: str | None
    gt_thought: str
    gt_typicality: Literal["typical", "plausible_tail"]
    quality: PhaseQualityJSON
    retry_count: int
    unavailable: bool


class ProbeRecordJSON(TypedDict):
    """``memory.arcane.records.ProbeRecord`` as JSON."""

    probe_id: str
    probe_type: ProbeType
    novel: str
    character: str
    axis_id: str
    anchor_phase_idx: int
    anchor_query_chapter: int
    scenario: str
    question: str
    phase_responses: list[PhaseResponseJSON]
    anchor_source: dict[str, Any] | None
    era_label: str | None
    era_description: str | None
    abstract_axis: str | None
    abstract_phases: list[str] | None
    decision_variable: str
    life_stages: list[LifeStageTagJSON]
    style_lint: list[str]
    probe_check: dict[str, Any]
