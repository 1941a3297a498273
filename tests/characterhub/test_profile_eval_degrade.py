"""`eval profile` under the paper's protocol: no evidence-quote filter unless asked, and one
character with nothing to score is reported and left out while the others are scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from profile_eval_world import FIXTURE, extract, extractor_input, scripted_model, write_profiles

from personae.cli import main
from personae.evals.characterhub.profile_eval import (
    CharacterCase,
    ProfileEvalContext,
    evaluate_characters,
    load_profile_document,
)
from personae.evals.characterhub.profile_reference import read_reference_file
from personae.evals.characterhub.profile_report import format_report, markdown_report
from personae.testing import ScriptedChatModel, override_models


def test_the_evidence_filter_is_off_by_default_and_the_report_counts_what_it_would_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = write_profiles(tmp_path)
    override_models(specs={"openai:eval-default": scripted_model()})
    out = tmp_path / "r.json"
    argv = [str(allowed), "--reference", str(FIXTURE), "--out", str(out), "--no-density"]
    assert main(["characterhub", "eval", *argv, "--model", "openai:eval-default"]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    reference = report["characters"][0]["reference"]
    # The invented point ("Toki can fly.", quoting nothing) is kept: |K| as the paper counts it.
    points = report["characters"][0]["knowledge_points"]
    assert [p["statement"] for p in points if not p["quoted"]] == ["Toki can fly."]
    assert (reference["knowledge_points"], reference["unquoted_points"]) == (7, 1)
    assert report["evidence_verified"] is False and reference["dropped_points"] == 0
    said = "evidence-quote filter (--verify-evidence): would drop (off by default) 1 point(s)"
    assert said in capsys.readouterr().out
    assert said in out.with_suffix(".md").read_text(encoding="utf-8")

    assert (
        main(["characterhub", "eval", *argv, "--model", "openai:eval-default", "--verify-evidence"])
        == 0
    )
    verified = json.loads(out.read_text(encoding="utf-8"))["characters"][0]["reference"]
    assert (verified["knowledge_points"], verified["dropped_points"]) == (6, 1)


def nothing_for(title: str) -> Any:
    """The world's extractor, except that ``title``'s page gives no point at all."""

    def respond(messages: list[BaseMessage]) -> dict[str, Any]:
        if extractor_input(messages)["title"] == title:
            return {"entity": title, "knowledge_points": []}
        return extract(messages)

    return respond


def case(root: Path, name: str) -> CharacterCase:
    allowed, _ = write_profiles(root / name, name="Toki")
    reference = read_reference_file(FIXTURE).model_copy(update={"title": name})
    documents = [(allowed, load_profile_document(allowed))]
    return CharacterCase(name, reference, str(FIXTURE), "given", documents)


async def test_one_character_with_nothing_usable_is_left_out_and_the_others_scored(
    tmp_path: Path,
) -> None:
    model: ScriptedChatModel = scripted_model()
    model.responders["ExtractedKnowledge"] = nothing_for("Shin")
    context = ProfileEvalContext(
        judge_model=model, judge_model_name="j", extractor_model=model, extractor_model_name="e",
        density=False,
    )  # fmt: skip
    lines: list[str] = []
    cases = [case(tmp_path, name) for name in ("Toki", "Shin", "Jagi")]
    report = await evaluate_characters(cases, context, progress=lines.append)
    assert [c["character"] for c in report["characters"]] == ["Toki", "Jagi"]
    [shin] = report["left_out"]
    assert shin["character"] == "Shin"
    assert shin["left_out"] == "no knowledge point extracted from 'Shin' (0 dropped)"
    assert report["degraded"]["characters_left_out"] == 1
    assert report["summary"]["planned"]["profile"]["characters"] == 2
    assert "Shin: left out: no knowledge point extracted from 'Shin' (0 dropped)" in lines
    assert "left out: Shin: no knowledge point" in format_report(report)
    assert "- left out: Shin: no knowledge point" in markdown_report(report)


def test_nothing_to_score_anywhere_still_writes_the_extracted_points_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = write_profiles(tmp_path)
    model = scripted_model()
    model.responders["ExtractedKnowledge"] = lambda messages: {
        "entity": "Toki",
        "knowledge_points": [{"knowledge": "Toki flies.", "evidence": "He flies", "type": "other"}],
    }
    override_models(specs={"openai:eval-none": model})
    out = tmp_path / "r.json"
    argv = [str(allowed), "--reference", str(FIXTURE), "--out", str(out), "--verify-evidence"]
    assert main(["characterhub", "eval", *argv, "--model", "openai:eval-none"]) == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("personae: error: nothing usable left: no character could be scored")
    assert f"the extracted points are kept in {out}" in last
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["characters"] == []
    assert report["left_out"][0]["knowledge_points"][0]["statement"] == "Toki flies."


def test_an_extractor_listing_nothing_is_told_to_change_model_not_the_filter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = write_profiles(tmp_path)
    model = scripted_model()
    model.responders["ExtractedKnowledge"] = lambda messages: {"knowledge_points": []}
    override_models(specs={"openai:eval-empty": model})
    out = tmp_path / "r.json"
    argv = [str(allowed), "--reference", str(FIXTURE), "--out", str(out)]
    assert main(["characterhub", "eval", *argv, "--model", "openai:eval-empty"]) == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "(Toki: no knowledge point extracted from 'Toki' (0 dropped))" in last
    assert last.endswith("use a stronger --extractor-model (one that lists the page's facts)")
