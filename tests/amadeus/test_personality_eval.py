"""`personae amadeus eval-personality` end to end: interviews, ER/OC assessment, labels, resume, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from personae.cli import main
from personae.testing import ScriptedChatModel, override_models, prompt_text

POLES = {"E/I": 70.0, "S/N": 20.0, "T/F": 80.0, "P/J": 30.0}  # -> E N T J
HERMIONE = (
    "# Hermione\n\n## Profile\n\nI am Hermione Granger. I study hard.\n\nHarry is my friend.\n"
)


def _pole(messages: list[BaseMessage]) -> dict[str, Any]:
    """InCharacter's two-percentage answer (its ER prompts are the default assessor)."""
    system = str(messages[0].content)
    dimension = next(d for d in POLES if f"on the {d} dimension" in system)
    first, second = dimension.split("/")
    share = POLES[dimension]
    return {"analysis": "ok", "result": {first: f"{share:.0f}%", second: f"{100 - share:.0f}%"}}


def _choices(messages: list[BaseMessage]) -> dict[str, Any]:
    ids = [
        line[1:].split("]")[0]
        for line in prompt_text(messages).splitlines()
        if line.startswith("[")
    ]
    return dict.fromkeys(ids, "7")


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    chat = ScriptedChatModel(
        responders={
            "RelevanceVerdict": lambda m: {"reason": "r", "relevant": True},
            "CharacterAttributes": lambda m: {"belief_and_value": "b", "psychological_traits": "p"},
            "text": lambda m: "As Hermione Granger I told Harry: yes, I do.",
            "InCharacterPoleRating": _pole,
            "InCharacterScaleRating": lambda m: {"analysis": "ok", "result": 4.0},
            "ChoiceConversion": _choices,
            "HallucinationScore": lambda m: {"reason": "r", "score": 2},
        }
    )
    with override_models(chat):
        yield chat


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    hermione = tmp_path / "hermione.md"
    hermione.write_text(HERMIONE)
    return [
        "amadeus",
        "eval-personality",
        "--questionnaire",
        "mbti",
        "--limit",
        "2",
        "--memory",
        str(tmp_path / "mem"),
        "--out",
        str(tmp_path / "out"),
        "--model",
        "openai:scripted",
        "--persona",
        f"Hermione={hermione}",
        *extra,
    ]


@pytest.mark.endtoend
def test_labelled_and_unlabelled_characters_with_recorded_sources(
    tmp_path: Path, shared_dir: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    othello = shared_dir / "data/coser/final/Othello.json"
    toki = shared_dir / "fixtures/wiki/hokuto_toki_2020.html"
    argv = _argv(
        tmp_path,
        "--character",
        "Hermione",
        "Iago",
        "Toki",
        "--persona",
        f"Iago={othello}",
        "--persona",
        f"Toki={toki}",
        "--hs",
    )
    assert main(argv) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    rows = {row["character"]: row for row in summary["characters"]}
    assert rows["Hermione-en"]["predicted"] == "ENTJ" and rows["Hermione-en"]["label"] == "ESTJ"
    assert (
        rows["Hermione-en"]["mismatches"] == 1 and rows["Hermione-en"]["persona_kind"] == "markdown"
    )
    assert rows["Iago"]["label"] is None and rows["Iago"]["persona_kind"] == "coser"
    assert rows["Iago"]["persona_source"].endswith("Othello.json")
    assert summary["metrics"]["accuracy"] == 0.75 and summary["metrics"]["labelled_characters"] == 1
    assert "| Hermione-en | ENTJ (-1) | ESTJ |" in out and "| Accuracy | 75.00% | - |" in out
    rater_prompts = [prompt_text(p) for p in model.calls_for("InCharacterPoleRating")]
    assert len(rater_prompts) == 12  # 4 dimensions x 1 batch of 2 items x 3 characters
    assert rows["Toki"]["persona_kind"] == "wiki" and rows["Toki"]["indexed_as"] == "Toki"
    assert summary["hs"] == 2.0 and "Hallucination Score (HS" in out
    assert len(model.calls_for("HallucinationScore")) == 24  # one per answer
    hermione = rater_prompts[:4]  # characters are assessed one after the other
    assert all("Hermione" not in p and "Harry" not in p for p in hermione)
    assert all("<the participant>" in p and "<the experimenter>" in p for p in hermione)


def test_rerun_resumes_and_option_conversion_keys_by_category(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = dict(model.responders)
    model.responders["ChoiceConversion"] = lambda m: (_ for _ in ()).throw(RuntimeError("killed"))
    with pytest.raises(RuntimeError, match="killed"):
        main(_argv(tmp_path, "--character", "Hermione", "--assess", "oc"))
    interviews = len(model.calls_for("text"))
    assert interviews == 8
    model.responders.update(failing)
    capsys.readouterr()
    assert main(_argv(tmp_path, "--character", "Hermione", "--assess", "oc")) == 0
    estimate = next(e for e in capsys.readouterr().err.splitlines() if "estimated" in e)
    assert "1 character(s) x 8 items, OC rating" in estimate  # the judge rates: it is named
    assert estimate.endswith(
        "model openai:scripted, guided selection openai:scripted, "
        "attribute extractor openai:scripted, rater and judge openai:scripted"
    )
    assert len(model.calls_for("text")) == interviews  # nothing asked twice
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    scores = summary["characters"][0]["scores"]
    # Every answer "fully agree" (7): a dimension's score is the share of its items keyed to
    # its first letter, x 100 (reverse-keyed items flip to 1 -> 0).
    from personae.evals.amadeus.personality_data import load_questionnaire

    mbti = load_questionnaire("mbti")
    for dimension in mbti.dimensions:
        items = mbti.by_dimension(dimension)[:2]
        assert scores[dimension] == pytest.approx(100 * sum(not i.reverse for i in items) / 2)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--character", "Nobody"], "no persona for Nobody"),
        (["--character", "Hermione", "--questionnaire", "nope"], "unknown questionnaire 'nope'"),
        (
            ["--character", "Hermione", "--labels", "LABELS"],
            "has no 16Personalities label for Hermione",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    model: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"Sheldon": {"16Personalities": "ISTJ"}}))
    argv = [str(labels) if a == "LABELS" else a for a in extra]
    assert main([*_argv(tmp_path), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_rating_still_invalid_is_left_out_counted_and_asked_again_by_a_rerun(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    good = model.responders["InCharacterPoleRating"]
    model.responders["InCharacterPoleRating"] = lambda m: (
        {"analysis": "?", "result": {"E": "130%", "I": "-30%"}}
        if "E/I" in str(m[0].content)
        else good(m)
    )
    argv = _argv(tmp_path, "--character", "Hermione", "--max-failures", "1")
    assert main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["degraded"] == {"assessments": 1}
    assert "E/I" not in summary["characters"][0]["scores"]  # left out, the others scored
    assert summary["characters"][0]["predicted"].endswith("NTJ")
    assert "degraded: 1 (assessments 1)\n" in captured.err
    assert "Degraded: 1 assessment(s)" in captured.out
    retried = [m for m in model.calls_for("InCharacterPoleRating") if len(m) > 2]
    assert "result.E" in prompt_text(retried[0])  # the schema's enum of percentages, fed back
    model.responders["InCharacterPoleRating"] = good
    assert main(argv) == 0  # the rerun asks only the missing batch
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["degraded"] == {"assessments": 0} and "E/I" in summary["characters"][0]["scores"]
    assert len(model.calls_for("InCharacterPoleRating")) == 3 + 3 + 1


def test_more_degraded_assessments_than_allowed_stop_the_run_in_one_line(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    model.responders["InCharacterPoleRating"] = lambda m: "I decline to rate."
    assert main(_argv(tmp_path, "--character", "Hermione")) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("personae: error: stopped: 2 of 4 assessments degraded")
    assert not (tmp_path / "out/summary.json").exists()


async def test_option_conversion_keys_items_and_leaves_out_an_item_still_invalid() -> None:
    from personae.agents.amadeus.incharacter_rater import (
        choice_conversion_schema,
        convert_choices,
    )

    schema = choice_conversion_schema(["3", "12"], 5).model_json_schema()
    assert schema["required"] == ["3", "12"]
    assert schema["properties"]["3"]["enum"] == ["1", "2", "3", "4", "5", "x"]

    def no_choice_for_12(messages: list[BaseMessage]) -> Any:
        ids = [
            line[1:].split("]")[0] for line in prompt_text(messages).splitlines() if line[:1] == "["
        ]
        return {i: "6" for i in ids} if "12" in ids else {i: "x" for i in ids}

    rater = ScriptedChatModel(responders={"ChoiceConversion": no_choice_for_12})
    statements = [("3", "I plan.", "Do you plan?", "Yes."), ("12", "I rest.", "Rest?", "No.")]
    choices, usage = await convert_choices(rater, kind="BFI", statements=statements)
    assert choices == {"3": None} and usage.degraded == 1  # 6 is beyond BFI's 1-5 scale
