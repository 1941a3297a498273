"""Every JSON twin of an ARCANE record (graph state) has its model's fields and JSON types."""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any

from pydantic import BaseModel
from typing_extensions import is_typeddict

from personae.agents.arcane import axes, designers, probe_prep, streams, validators
from personae.memory.arcane import records
from personae.memory.arcane import records_json as twins
from personae.memory.arcane.records import ArcRecord

TWINS: dict[Any, type[BaseModel]] = {
    twins.PsychologicalImpactJSON: streams.PsychologicalImpact,
    twins.RelationshipChangeJSON: streams.RelationshipChange,
    twins.StreamEventJSON: streams.StreamEvent,
    twins.ChapterEventsJSON: streams.ChapterEvents,
    twins.RelationshipDimensionsJSON: streams.RelationshipDimensions,
    twins.RelationshipStateJSON: streams.RelationshipState,
    twins.ChapterStateJSON: streams.ChapterState,
    twins.PhaseJSON: records.PhaseBase,
    twins.InducedPhaseJSON: axes.InducedPhase,
    twins.TrajectoryPhaseJSON: records.TrajectoryPhase,
    twins.AxisJSON: records.AxisBase,
    twins.InducedAxisJSON: axes.InducedAxis,
    twins.AxisInductionJSON: axes.AxisInduction,
    twins.MergedAxisJSON: axes.MergedAxis,
    twins.ReconciliationJSON: axes.Reconciliation,
    twins.CitationJSON: records.Citation,
    twins.CriticVerdictJSON: records.CriticVerdict,
    twins.AnnotatorVoteJSON: records.AnnotatorVote,
    twins.WeakPairJSON: validators.WeakPair,
    twins.ArcRecordJSON: records.ArcRecord,
    twins.PhaseContrastJSON: probe_prep.PhaseContrast,
    twins.DecisionVariableJSON: probe_prep.DecisionVariable,
    twins.LifeStageTagJSON: probe_prep.LifeStageTag,
    twins.AbstractionJSON: probe_prep.Abstraction,
    twins.DraftResponseJSON: designers.DraftResponse,
    twins.ProbeDraftJSON: designers.ProbeDraft,
    twins.PhaseQualityJSON: records.PhaseQuality,
    twins.PhaseResponseJSON: records.PhaseResponse,
    twins.ProbeRecordJSON: records.ProbeRecord,
}
"""Each twin and its model."""

LOOSE_IN_MODEL: dict[tuple[type[BaseModel], str], Any] = {
    (records.ArcRecord, "weak_pairs"): list[twins.WeakPairJSON],
    (records.ProbeRecord, "life_stages"): list[twins.LifeStageTagJSON],
}
"""Model fields typed ``list[dict[str, Any]]`` (memory cannot import the agents' models) whose
twin names the agents' record; the twin of that record is checked above."""


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _mismatch(twin: Any, model: Any, where: str) -> list[str]:
    """Why the JSON type ``twin`` is not the JSON form of the model type ``model`` (none: it is)."""
    if inspect.isclass(model) and issubclass(model, BaseModel):
        if twin == dict[str, Any]:
            return []  # a nested record kept as plain JSON (e.g. a comparison nobody reads)
        counterpart = TWINS.get(twin)
        if counterpart is not None and issubclass(model, counterpart):
            extra = set(model.model_fields) - set(counterpart.model_fields)
            return [f"{where}: {model.__name__} adds {sorted(extra)}"] if extra else []
        return [f"{where}: {twin} is not the twin of {model.__name__}"]
    t_origin, m_origin = typing.get_origin(twin), typing.get_origin(model)
    t_args, m_args = typing.get_args(twin), typing.get_args(model)
    if m_origin is typing.Literal or t_origin is typing.Literal:
        same = t_origin is m_origin and set(t_args) == set(m_args)
        return [] if same else [f"{where}: {twin} != {model}"]
    if _is_union(model) and _is_union(twin) and len(t_args) == len(m_args):
        problems = [_mismatch(t, m, where) for t, m in zip(t_args, m_args, strict=True)]
        return [p for found in problems for p in found]
    if m_origin is tuple and t_origin is list:  # a tuple is a JSON array
        return [p for arg in set(m_args) for p in _mismatch(t_args[0], arg, where)]
    if m_origin in (list, dict) and t_origin is m_origin and len(t_args) == len(m_args):
        return [p for t, m in zip(t_args, m_args, strict=True) for p in _mismatch(t, m, where)]
    return [] if twin == model else [f"{where}: {twin} != {model}"]


def test_every_twin_has_its_models_fields_and_json_types() -> None:
    declared = {
        value
        for name, value in vars(twins).items()
        if name.endswith("JSON") and is_typeddict(value)
    }
    assert declared == set(TWINS)  # a new twin is checked too
    problems: list[str] = []
    for twin, model in TWINS.items():
        hints = typing.get_type_hints(twin)
        if set(hints) != set(model.model_fields):
            problems.append(
                f"{twin.__name__}: fields {sorted(set(hints) ^ set(model.model_fields))}"
            )
            continue
        for name, field in model.model_fields.items():
            expected = LOOSE_IN_MODEL.get((model, name))
            where = f"{twin.__name__}.{name}"
            if expected is not None:
                problems += [] if hints[name] == expected else [f"{where}: not {expected}"]
            else:
                problems += _mismatch(hints[name], field.annotation, where)
    assert problems == []


def test_the_check_fails_on_a_drifted_twin() -> None:
    class Drifted(typing.TypedDict):
        phase: str
        chapter_range: list[str]  # the model says tuple[int, int]
        position_description: str

    hints = typing.get_type_hints(Drifted)
    field = records.PhaseBase.model_fields["chapter_range"]
    assert _mismatch(hints["chapter_range"], field.annotation, "x") != []
    assert _mismatch(twins.CitationJSON, records.AnnotatorVote, "y") != []


def test_an_arc_record_is_written_in_app_c_order() -> None:
    assert set(records.APP_C_ORDER) == set(ArcRecord.model_fields)
    phase = {"phase": "p", "chapter_range": (1, 2), "position_description": "d"}
    arc = ArcRecord(
        axis_id="final_intra_01",
        novel="n",
        character="Ada",
        axis_type="intrapersonal",
        dimension_label="d",
        axis_name="x",
        pole_start="s",
        pole_end="e",
        arc_direction="flat",
        confidence="low",
        source="both",
        trajectory=[records.TrajectoryPhase.model_validate(phase)] * 2,
    )
    assert list(arc.model_dump()) == list(records.APP_C_ORDER)
    assert ArcRecord.model_validate_json(arc.model_dump_json()) == arc
