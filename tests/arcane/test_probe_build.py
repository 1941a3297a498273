"""probe_build: grounding, drafting, the validators' drop / regenerate / annotate rules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import ProbeScript, prepared_novel, write_event_stream
from pydantic import ValidationError

from personae.agents.arcane.designers import ProbeDraft, draft_schema, numbered_draft
from personae.agents.arcane.probe_prep import decision_schema, era_walk, with_phase_indices
from personae.agents.arcane.validators import phasefit_verdict
from personae.graphs.arcane.probe_build import build_graph, probes_of
from personae.graphs.arcane.probe_cell import ProbeBuildContext, lint_style, verbatim_span
from personae.memory.arcane.records import ProbeRecord, load_arcs, load_probes
from personae.testing import ScriptedChatModel, override_models

ALL = ["in_scenario", "in_world", "out_of_world"]


@pytest.fixture
def script() -> Iterator[tuple[ProbeScript, ScriptedChatModel]]:
    probe_script = ProbeScript()
    scripted = ScriptedChatModel(responders=probe_script.responders())
    with override_models(scripted):
        yield probe_script, scripted


async def _build(data: Path, types: list[str] | None = None) -> dict[str, Any]:
    novel = prepared_novel(data)
    write_event_stream(novel)
    payload: Any = {
        "novel": "the_river",
        "character": "Ada",
        "axis_id": "final_intra_01",
        "types": types or ALL,
    }
    context = ProbeBuildContext(data_dir=str(data), model="openai:scripted")
    result: dict[str, Any] = await build_graph().ainvoke(payload, context=context)
    return result


async def test_full_arc_gives_3n_validated_probes(
    tmp_path: Path, script: tuple[ProbeScript, ScriptedChatModel]
) -> None:
    _, model = script
    result = await _build(tmp_path)
    probes: list[ProbeRecord] = probes_of(result)
    assert len(probes) == 9 and len(model.calls_for("ProbeDraft")) == 9
    ids = sorted(p.probe_id for p in probes)
    assert len(set(ids)) == 9
    assert all(re.fullmatch(r"the_river_ada_final_intra_01_(is|iw|oow)_a[0-2]", i) for i in ids)
    folder = tmp_path / "novels" / "the_river"
    stored = load_probes(folder)
    assert {p.probe_id for p in stored} >= set(ids)
    chapters = {c: (folder / "chapters.jsonl") for c in range(1, 7)}
    assert chapters
    for probe in probes:
        assert [r.phase_idx for r in probe.phase_responses] == [0, 1, 2]
        assert [r.query_chapter for r in probe.phase_responses][2] == 6
        if probe.probe_type == "in_scenario":
            source = probe.anchor_source
            assert source is not None and source["chapter"] == probe.anchor_query_chapter
            assert source["event_id"] == f"ch{source['chapter']}_evt01"
        if probe.probe_type == "out_of_world":
            assert probe.era_label and probe.abstract_phases == ["alone", "wavering", "trusting"]
            assert probe.life_stages[0]["life_stage"] == "adolescent"
    oow_eras = {p.anchor_phase_idx: p.era_label for p in probes if p.probe_type == "out_of_world"}
    assert len(set(oow_eras.values())) == 3
    arc = load_arcs(folder)[0]
    assert arc.weak_pairs and arc.weak_pairs[0]["from_phase_idx"] == 0  # Q-Discrim annotates
    assert result["usage"]["llm_calls"] > 0


async def test_non_verbatim_passage_is_rejected_and_the_cell_skipped(
    tmp_path: Path, script: tuple[ProbeScript, ScriptedChatModel]
) -> None:
    probe_script, model = script
    probe_script.verbatim = False
    result = await _build(tmp_path, ["in_scenario"])
    assert result["probes"] == []
    assert len(model.calls_for("ExtractedPassage")) == 3 * 2  # one retry per grounding
    assert sum("no key moment grounded" in d for d in result["dropped"]) == 3


async def test_locator_cannot_invent_an_event(
    tmp_path: Path, script: tuple[ProbeScript, ScriptedChatModel]
) -> None:
    probe_script, model = script
    probe_script.bad_locator_once = True
    result = await _build(tmp_path, ["in_scenario"])
    assert len(result["probes"]) == 3
    assert all(p.anchor_source and p.anchor_source["chapter"] <= 6 for p in probes_of(result))
    assert len(model.calls_for("SceneLocation")) == 4  # the invented id was re-asked


async def test_one_regeneration_then_unavailable(
    tmp_path: Path, script: tuple[ProbeScript, ScriptedChatModel]
) -> None:
    probe_script, model = script
    probe_script.voice_fails = {1: 1, 2: 99}
    probe_script.off_phase = set()
    result = await _build(tmp_path, ["in_world"])
    assert len(result["probes"]) == 3  # an unavailable phase keeps the probe
    for probe in probes_of(result):
        by_phase = {r.phase_idx: r for r in probe.phase_responses}
        assert by_phase[0].retry_count == 0 and not by_phase[0].unavailable
        assert by_phase[2].retry_count == 1 and by_phase[2].unavailable
    # phase 1 fails once in the first probe only (then passes): one regeneration, recovered
    recovered = [p for p in probes_of(result) if p.phase_responses[1].retry_count == 1]
    assert len(recovered) == 1 and not recovered[0].phase_responses[1].unavailable
    assert recovered[0].phase_responses[1].gt_action == "Ada acts 1 again"
    assert len(model.calls_for("DraftResponse")) == 1 + 3
    assert sum("unavailable" in d for d in result["dropped"]) == 3


async def test_off_phase_regenerates_adjacent_does_not(
    tmp_path: Path, script: tuple[ProbeScript, ScriptedChatModel]
) -> None:
    probe_script, model = script
    probe_script.off_phase = {0}  # predicted 2 for phase 0: off_phase
    result = await _build(tmp_path, ["in_world"])
    first = probes_of(result)[0].phase_responses[0]
    assert first.quality.q_phasefit == "off_phase" and first.unavailable and first.retry_count == 1
    assert phasefit_verdict(1, 0) == "adjacent" and phasefit_verdict(2, 2) == "pass"


@pytest.mark.parametrize(("switch", "kind"), [("anchor", "in_scenario"), ("world", "in_world")])
async def test_probe_check_failure_drops_the_probe(
    tmp_path: Path, script: tuple[ProbeScript, ScriptedChatModel], switch: str, kind: str
) -> None:
    probe_script, _ = script
    setattr(probe_script, switch, "fail")
    result = await _build(tmp_path, [kind])
    assert result["probes"] == []
    assert sum(f"q_{switch} failed" in d for d in result["dropped"]) == 3


def test_counts_are_the_schemas_and_the_indices_the_code_s() -> None:
    answer = ProbeScript().draft([])
    schema = draft_schema(3)
    draft = numbered_draft(schema.model_validate(answer))
    assert [r.phase_idx for r in draft.phase_responses] == [0, 1, 2]
    responses = schema.model_json_schema()["properties"]["phase_responses"]
    assert (responses["minItems"], responses["maxItems"]) == (3, 3)
    assert "phase_idx" not in str(schema.model_json_schema())  # never asked of the model
    for wrong in (answer["phase_responses"][:2], [*answer["phase_responses"]] * 2):
        with pytest.raises(ValidationError, match="at (least|most) 3 items"):
            schema.model_validate({**answer, "phase_responses": wrong})
    decision = ProbeScript().decision([])
    assert [
        (c.from_phase_idx, c.to_phase_idx)
        for c in with_phase_indices(decision_schema(3).model_validate(decision)).phase_contrasts
    ] == [(0, 1), (1, 2)]
    with pytest.raises(ValidationError, match="at least 3 items"):
        decision_schema(4).model_validate(decision)


def test_era_walk_lint_and_verbatim() -> None:
    walk = era_walk("n", "Ada", "final_intra_01", 7)
    assert walk == era_walk("n", "Ada", "final_intra_01", 7) and len(set(walk)) == 7
    draft = ProbeDraft.model_validate(ProbeScript().draft([]))
    draft.question = "Should Ada go or stay?"
    draft.phase_responses[0].gt_action = "Ada immediately leaves"
    problems = lint_style(draft, "in_world")
    assert "question enumerates options" in problems
    assert "phase 0: banned cue 'immediately'" in problems
    assert verbatim_span("the  day\nended", "so the day ended here") == (3, 16)
    assert verbatim_span("the night ended", "so the day ended here") is None


def test_cli_builds_probes_and_rejects_bad_input(
    tmp_path: Path,
    script: tuple[ProbeScript, ScriptedChatModel],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from personae.cli import main

    novel = prepared_novel(tmp_path)
    write_event_stream(novel)
    argv = [
        "arcane",
        "build-probes",
        "the_river",
        "--data",
        str(tmp_path),
        "--model",
        "openai:scripted",
    ]
    assert main([*argv, "--types", "in_world,out_of_world"]) == 0
    out = capsys.readouterr().out
    assert "Ada / final_intra_01: 6 probes kept of 6 cells" in out
    assert main([*argv, "--types", "in_space"]) == 2
    assert main([*argv, "--character", "Bram"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "unknown probe type 'in_space'" in err[0] and "no arcs for 'Bram'" in err[1]


async def test_a_draft_or_discrimination_still_invalid_degrades_the_cell_or_its_note(
    tmp_path: Path,
    script: tuple[ProbeScript, ScriptedChatModel],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, model = script
    model.responders["Discrimination"] = lambda m: "no idea"
    result = await _build(tmp_path, ["in_world"])
    probes = probes_of(result)
    assert len(probes) == 3
    assert all(p.probe_check["q_discrim"]["weak_pairs"] == [] for p in probes)
    assert result["usage"]["degraded"] == 3  # one Q-Discrim per probe, annotating nothing

    monkeypatch.setenv("PERSONAE_CACHE_DIR", str(tmp_path / "fresh-cache"))  # no cached draft
    model.responders["ProbeDraft"] = lambda m: {"scenario": "s", "question": "q"}
    result = await _build(tmp_path / "again", ["in_world"])
    assert probes_of(result) == [] and result["usage"]["degraded"] == 3
    assert sum("no valid draft after retries" in d for d in result["dropped"]) == 3


async def test_a_probe_whose_every_phase_is_unavailable_is_dropped_and_counted(
    tmp_path: Path, script: tuple[ProbeScript, ScriptedChatModel]
) -> None:
    """App. B keeps "the rest of the probe": with no rest, nothing is kept (and it is said)."""
    probe_script, model = script
    probe_script.voice_fails = {0: 99, 1: 99, 2: 99}
    result = await _build(tmp_path, ["in_world"])
    assert probes_of(result) == []
    dropped = [d for d in result["dropped"] if "every phase unavailable" in d]
    assert len(dropped) == 3  # one per anchor phase (3 cells)
    assert model.calls_for("Discrimination") == []  # no probe-level check for a dropped probe
