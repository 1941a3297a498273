"""ARCANE records as plain JSON, the way they travel in graph state (and so in checkpoints).

Why: a pydantic object in LangGraph state is checkpointed by class name and rebuilt on load by
importing that class, which the ``langgraph dev`` server's checkpointer warns about
("Deserializing unregistered type") and will refuse in a future version. So ARCANE graph state
holds these TypedDicts (``Model.model_dump(mode="json")``, see :func:`dump`) and nodes validate
them back into the pydantic records (``Model.model_validate``) where they use them. Top-level
fields are spelt out; nested parts are the records' own JSON.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel
from typing_extensions import TypedDict


def dump(record: BaseModel) -> Any:
    """``record`` as state JSON (the caller's annotation names which TypedDict)."""
    return cast(Any, record.model_dump(mode="json"))


class ChapterEventsJSON(TypedDict):
    """``agents.arcane_streams.ChapterEvents`` as JSON (``model_dump(mode="json")``)."""

    chapter: int
    character: str
    events: list[dict[str, Any]]
    updated_running_summary: str


class ChapterStateJSON(TypedDict):
    """``agents.arcane_streams.ChapterState`` as JSON (``model_dump(mode="json")``)."""

    chapter: int
    character: str
    present_in_chapter: bool
    emotional_state: str
    belief_shifts: str
    current_desires: str
    current_intentions: str
    relationship_states: list[dict[str, Any]]
    self_awareness_notes: str
    change_magnitude: Literal["none", "subtle", "moderate", "significant", "transformative"]
    chapter_summary: str
    updated_running_profile: str


class AxisInductionJSON(TypedDict):
    """``agents.arcane_axes.AxisInduction`` as JSON (``model_dump(mode="json")``)."""

    character: str
    arc_richness: Literal["rich", "moderate", "flat"]
    intrapersonal_axes: list[dict[str, Any]]
    relational_axes: list[dict[str, Any]]


class MergedAxisJSON(TypedDict):
    """``agents.arcane_axes.MergedAxis`` as JSON (``model_dump(mode="json")``)."""

    axis_type: Literal["intrapersonal", "relational"]
    axis_id: str
    dimension_label: str
    axis_name: str
    pole_start: str
    pole_end: str
    confidence: Literal["high", "medium", "low"]
    source: Literal["both", "event_only", "psych_only"]
    arc_direction: Literal["positive", "negative", "flat", "disillusionment", "ambivalent"]
    trajectory: list[dict[str, Any]]
    evidence_summary: str
    source_character: str | None
    target_character: str | None


class ReconciliationJSON(TypedDict):
    """``agents.arcane_axes.Reconciliation`` as JSON (``model_dump(mode="json")``)."""

    character: str
    comparison: dict[str, Any]
    intrapersonal_axes: list[MergedAxisJSON]
    relational_axes: list[MergedAxisJSON]


class CriticVerdictJSON(TypedDict):
    """``memory.arcane_records.CriticVerdict`` as JSON (``model_dump(mode="json")``)."""

    verdict: bool
    reasoning: str
    citations: list[dict[str, Any]]


class ArcRecordJSON(TypedDict):
    """``memory.arcane_records.ArcRecord`` as JSON (``model_dump(mode="json")``)."""

    axis_id: str
    novel: str
    character: str
    axis_type: Literal["intrapersonal", "relational"]
    dimension_label: str
    axis_name: str
    pole_start: str
    pole_end: str
    arc_direction: Literal["positive", "negative", "flat", "disillusionment", "ambivalent"]
    confidence: Literal["high", "medium", "low"]
    source: Literal["both", "event_only", "psych_only"]
    trajectory: list[dict[str, Any]]
    target_character: str | None
    evidence_summary: str
    literary_validation: dict[str, CriticVerdictJSON]
    annotation: list[dict[str, Any]]
    weak_pairs: list[dict[str, Any]]
    reconciliation_tag: Literal["matched", "valid_missed", "borderline"]
    split: Literal["train", "eval", "unvalidated"]
    validated_by: Literal["critics", "humans", "none"]
    arc_richness: Literal["rich", "moderate", "flat"]


class DecisionVariableJSON(TypedDict):
    """``agents.arcane_probe_prep.DecisionVariable`` as JSON (``model_dump(mode="json")``)."""

    decision_variable: str
    phase_contrasts: list[dict[str, Any]]


class LifeStageTagJSON(TypedDict):
    """``agents.arcane_probe_prep.LifeStageTag`` as JSON (``model_dump(mode="json")``)."""

    phase_idx: int
    life_stage: Literal["child", "adolescent", "young_adult", "adult", "older_adult"]
    approx_age: str
    rationale: str


class AbstractionJSON(TypedDict):
    """``agents.arcane_probe_prep.Abstraction`` as JSON (``model_dump(mode="json")``)."""

    abstract_axis: str
    abstract_phases: list[str]


class ProbeDraftJSON(TypedDict):
    """``agents.arcane_designers.ProbeDraft`` as JSON (``model_dump(mode="json")``)."""

    scenario: str
    question: str
    phase_responses: list[dict[str, Any]]


class PhaseResponseJSON(TypedDict):
    """``memory.arcane_records.PhaseResponse`` as JSON (``model_dump(mode="json")``)."""

    phase_idx: int
    phase_label: str
    query_chapter: int
    gt_action: str
    gt_speech: str | None
    gt_thought: str
    gt_typicality: Literal["typical", "plausible_tail"]
    quality: dict[str, Any]
    retry_count: int
    unavailable: bool


class ProbeRecordJSON(TypedDict):
    """``memory.arcane_records.ProbeRecord`` as JSON (``model_dump(mode="json")``)."""

    probe_id: str
    probe_type: Literal["in_scenario", "in_world", "out_of_world"]
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
    life_stages: list[dict[str, Any]]
    style_lint: list[str]
    probe_check: dict[str, Any]
