"""App. K ablations of the Arc context: MIXEDARC and ARCHINT."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import arc_record, future_marks, prepared_novel

from personae.agents.arcane.roleplayer import archint_lines, mixedarc_arc, mixedarc_donor
from personae.errors import InputError
from personae.graphs.arcane.roleplay import RoleplayContext, graph
from personae.memory.arcane.records import write_jsonl_atomic
from personae.testing import ScriptedChatModel, override_models


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responders={"text": lambda m: "Ada waits."})
    with override_models(scripted):
        yield scripted


def test_mixedarc_donor_is_deterministic_and_never_the_queried_character() -> None:
    arcs = [arc_record("Ada"), arc_record("Bram"), arc_record("Cleo")]
    picks = {mixedarc_donor(f"probe{i}", "Ada", arcs) for i in range(20)}
    assert picks <= {"Bram", "Cleo"} and len(picks) == 2
    assert mixedarc_donor("probe1", "Ada", arcs) == mixedarc_donor("probe1", "Ada", arcs)
    assert mixedarc_donor("p", "Ada", [arc_record("Ada")]) is None
    donor = mixedarc_arc("Bram", "Ada", "final_intra_09", arcs)
    assert donor.character == "Ada" and donor.trajectory[0].position_description.startswith("Bram")


def test_archint_line_format_and_phase_index() -> None:
    line = archint_lines([arc_record()], 3)
    assert line == "Axis: From self-reliance to trust / Phase: 2 of 3 (label: Phase 1)"
    assert archint_lines([arc_record()], 6).endswith("Phase: 3 of 3 (label: Phase 2)")


async def test_ablation_modes_stay_before_the_query_chapter(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    novel = prepared_novel(tmp_path)
    context = RoleplayContext(data_dir=str(tmp_path), model="openai:scripted")
    request: Any = {
        "novel": "the_river",
        "probe_id": "the_river_ada_final_intra_01_iw_a1",
        "phase_idx": 0,
        "mode": "mixedarc",
    }
    with pytest.raises(InputError, match="MIXEDARC needs arcs of another character"):
        await graph.ainvoke(request, context=context)
    write_jsonl_atomic(novel.folder / "arcs.jsonl", [arc_record("Ada"), arc_record("Bram")])
    mixed = await graph.ainvoke(request, context=context)
    payload = json.loads(mixed["system"].split("<context>\n")[1].split("\n</context>")[0])
    assert payload["character"] == "Ada" and "Bram at MARK1" in mixed["system"]
    assert future_marks(mixed["system"], 2) == []
    request["mode"] = "archint"
    hint = await graph.ainvoke(request, context=context)
    assert "Phase: 1 of 3 (label: Phase 0)" in hint["system"] and len(hint["system"]) < 400
