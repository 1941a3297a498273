"""ARCANE graph state holds records as their models' JSON, and that shape is the model's."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel, TypeAdapter, ValidationError

from personae.evals.arcane import eval_graph
from personae.graphs.arcane import arc_build, probe_build, probe_cell
from personae.memory.arcane import records
from personae.memory.arcane.records import ArcRecord
from personae.memory.arcane.records_json import RecordJSON, dump, load

STATES: list[Any] = [
    arc_build.ArcBuildState,
    arc_build.CritiqueTask,
    arc_build.Critique,
    probe_build.ProbeBuildState,
    probe_cell.CellState,
    eval_graph.EvalState,
    eval_graph.Unit,
]
"""Every state and Send payload of the ARCANE graphs that holds a record."""


def _arc() -> ArcRecord:
    phase = {"phase": "p", "chapter_range": (1, 2), "position_description": "d"}
    return ArcRecord(
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
        weak_pairs=[{"from_phase_idx": 0, "to_phase_idx": 1, "separation": "similar"}],
    )


def _models_outside_record_json(hint: Any) -> list[str]:
    """Pydantic models a state field would hold as objects (checkpointed by class name)."""
    if typing.get_origin(hint) is typing.Annotated:
        return []  # RecordJSON[Model]: the model's JSON, a plain dict
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return [hint.__name__]
    return [found for arg in typing.get_args(hint) for found in _models_outside_record_json(arg)]


def test_state_holds_no_pydantic_object_only_record_json() -> None:
    objects = {
        f"{state.__name__}.{name}": found
        for state in STATES
        for name, hint in typing.get_type_hints(state, include_extras=True).items()
        if (found := _models_outside_record_json(hint))
    }
    assert objects == {}
    assert _models_outside_record_json(list[ArcRecord] | None) == ["ArcRecord"]  # the check bites


def test_a_record_travels_as_plain_json_through_a_checkpoint_and_loads_back() -> None:
    arc = _arc()
    data = dump(arc)
    assert type(data) is dict
    assert json.loads(json.dumps(data)) == data  # JSON builtins only: tuples became lists
    assert data["trajectory"][0]["chapter_range"] == [1, 2]
    serde = JsonPlusSerializer()
    restored = serde.loads_typed(serde.dumps_typed({"arcs": [data]}))["arcs"][0]
    assert type(restored) is dict
    assert ArcRecord.model_validate(restored) == arc == load(ArcRecord, data)


def test_the_json_shape_is_the_models_and_is_checked_by_it() -> None:
    shape = TypeAdapter(RecordJSON[records.TrajectoryPhase])
    assert shape.json_schema() == records.TrajectoryPhase.model_json_schema()
    held = shape.validate_python(
        {"phase": "p", "chapter_range": (3, 4), "position_description": ""}
    )
    assert held == {
        "phase": "p",
        "chapter_range": [3, 4],
        "position_description": "",
        "key_moments": [],
    }
    with pytest.raises(ValidationError, match="chapter_range"):
        shape.validate_python({"phase": "p", "chapter_range": ["x"], "position_description": ""})


def test_studio_shows_the_records_own_schema() -> None:
    schema = arc_build.graph.get_output_jsonschema()
    assert schema["properties"]["arcs"]["items"] == {"$ref": "#/$defs/ArcRecord"}
    own = ArcRecord.model_json_schema()
    assert schema["$defs"]["ArcRecord"] == {k: v for k, v in own.items() if k != "$defs"}
    assert set(own["$defs"]) <= set(schema["$defs"])


def test_an_arc_record_is_written_in_app_c_order() -> None:
    assert set(records.APP_C_ORDER) == set(ArcRecord.model_fields)
    arc = _arc()
    assert list(arc.model_dump()) == list(records.APP_C_ORDER)
    assert ArcRecord.model_validate_json(arc.model_dump_json()) == arc
