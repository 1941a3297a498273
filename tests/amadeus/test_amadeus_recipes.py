"""The README's AMADEUS recipes (Tables 4-6) end to end against the loopback model.

Each runs the README's commands as written (model names aside), so the roles are checked on the
wire: Guided Selection and the Attribute Extractor on their own models (the paper: GPT-4.1
whatever role-plays), every question said by the character's InCharacter interviewer, and the
paper's settings printed beside the ones used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recipe_world import loopback_llm, models_by_schema, schema_of, text_of

from personae.cli import main

HERMIONE = (
    "# Hermione\n\n## Profile\n\nI am Hermione Granger. I study hard.\n\nHarry is my friend.\n"
)
PAPER_MODELS = ["--gs-model", "openai:gs-41", "--ae-model", "openai:ae-41"]


def _poles(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """InCharacter's two percentages for the dimension its prompt names."""
    system = str(messages[0]["content"])
    dimension = next(d for d in ("E/I", "S/N", "T/F", "P/J") if f"on the {d} dimension" in system)
    first, second = dimension.split("/")
    return {"analysis": "ok", "result": {first: "60%", second: "40%"}}


def _responders() -> dict[str, Any]:
    return {
        "RelevanceVerdict": lambda m: {"reason": "r", "relevant": True},
        "CharacterAttributes": lambda m: {"belief_and_value": "b", "psychological_traits": "p"},
        "text": lambda m: "I would say yes, of course.",
        "InCharacterPoleRating": _poles,
        "HallucinationScore": lambda m: {"reason": "r", "score": 2},
        "AnswerContained": lambda m: {"reason": "r", "correct": True},
        "AnswerReflection": lambda m: {"reason": "r", "score": 8},
    }


@pytest.mark.endtoend
def test_tables_4_5_recipe_uses_gs_and_ae_models_and_the_interviewer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    persona = tmp_path / "hermione.md"
    persona.write_text(HERMIONE)
    out = tmp_path / "mbti-hermione"
    with loopback_llm(_responders(), monkeypatch) as fake:
        argv = ["amadeus", "eval-personality", "--questionnaire", "mbti", "--character", "Hermione"]
        argv += ["--persona", f"Hermione={persona}", "--out", str(out), "--hs", "--limit", "1"]
        argv += ["--memory", str(tmp_path / "mem"), "--model", "openai:actor", *PAPER_MODELS]
        argv += ["--judge-model", "openai:rater"]
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, err
    models = models_by_schema(fake)
    assert models["RelevanceVerdict"] == {"gs-41"}
    assert models["CharacterAttributes"] == {"ae-41"}
    assert models["text"] == {"actor"} and models["InCharacterPoleRating"] == {"rater"}
    ratings = [r for r in fake.requests if schema_of(r) == "InCharacterPoleRating"]
    assert text_of(ratings[0]["messages"]).startswith(
        "You are an expert in Psychometrics, especially 16Personalities (highly similar to MBTI)."
    )  # InCharacter's expert rating, its prompt (issue 26 §11)
    interviews = [r for r in fake.requests if schema_of(r) == "text"]
    assert len(interviews) == 4
    assert all(
        "Harry:「" in text_of(r["messages"]) for r in interviews
    )  # InCharacter's interviewer
    assert "AMADEUS Tables 4-5: the paper's settings | this run's" in err
    assert "Guided Selection model" in err and "openai:gpt-4.1 (gpt-4.1-2025-04-14" in err
    summary = json.loads((out / "summary.json").read_text())
    rows = {row["setting"]: row for row in summary["paper_settings"]}
    assert rows["Guided Selection model"]["used"].startswith("openai:gs-41@")
    assert rows["Attribute Extractor model"]["used"].startswith("openai:ae-41@")
    assert rows["assessment"]["used"].startswith("InCharacter (Wang et al. 2024b; its default")
    assert rows["N (Guided Selection checks)"] == {
        "setting": "N (Guided Selection checks)",
        "paper": "30 (Settings)",
        "used": "30",
    }
    assert "## Settings: the paper's and this run's" in (out / "report.md").read_text()
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    interviewed = [r for r in records if r["kind"] == "interview"]
    assert {r["interviewer"] for r in interviewed} == {"Harry"}
    assert all(r["query"] == f"Harry:「{r['question']}」" for r in interviewed)


def test_table_6_recipe_on_the_iago_set(
    tmp_path: Path,
    shared_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    memory = ["--memory", str(tmp_path / "mem")]
    book = shared_dir / "data/coser/final/Othello.json"
    assert main(["amadeus", "index", str(book), "--character", "Iago", *memory]) == 0
    out = tmp_path / "qa"
    with loopback_llm(_responders(), monkeypatch) as fake:
        argv = ["amadeus", "eval-qa", "iago-othello", "--limit", "2", "--out", str(out), *memory]
        argv += ["--model", "openai:actor", *PAPER_MODELS, "--judge-model", "openai:judge"]
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, err
    models = models_by_schema(fake)
    assert models["RelevanceVerdict"] == {"gs-41"} and models["CharacterAttributes"] == {"ae-41"}
    assert "AMADEUS Table 6: the paper's settings | this run's" in err
    assert "450 (CharacterRAG, 30 per character)" in err
    summary = json.loads((out / "summary.json").read_text())
    assert {row["setting"] for row in summary["paper_settings"]} >= {"QA items", "embedding"}


def test_the_readme_states_the_selection_models_defaults_the_code_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--ae-model`` falls back to ``--gs-model`` (the paper runs GS and AE on one model)."""
    from personae.graphs.amadeus.graph import AmadeusContext

    monkeypatch.setattr(AmadeusContext, "chat_model", lambda self, spec, role: spec)
    context = AmadeusContext(model="openai:actor", gs_model="openai:gs-41")
    picked = [str(context.selector_llm()), str(context.extractor_llm())]
    assert picked == ["openai:gs-41", "openai:gs-41"]  # the spec each role resolved
    alone = AmadeusContext(model="openai:actor")
    assert [str(alone.selector_llm()), str(alone.extractor_llm())] == ["openai:actor"] * 2
    page = Path(__file__).resolve().parents[2] / "docs" / "papers" / "amadeus.md"
    readme = page.read_text(encoding="utf-8")
    roles = readme.split("- **Model roles.** The paper runs Guided Selection")[1].split("- ")[0]
    said = " ".join(roles.split())
    assert "`--gs-model` is `--model` and `--ae-model` is `--gs-model`" in said
    assert "both use `--model`" not in said
