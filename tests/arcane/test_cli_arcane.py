"""`personae arcane prepare|act` end to end with a scripted model, and their bad inputs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import arc_responders, imported_novel, prepared_novel

from personae.cli import main
from personae.testing import ScriptedChatModel, override_models, prompt_text


def _answer(messages: Any) -> str:
    text = prompt_text(messages)
    if "--- chapter text ---" in text:
        return "A summary."
    return "Ada looks at the water and says nothing."


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responders={"text": _answer})
    with override_models(scripted):
        yield scripted


def test_prepare_summarizes_once_and_indexes(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    novel = imported_novel(tmp_path)
    argv = ["arcane", "prepare", "the_river", "--data", str(tmp_path)]
    assert main([*argv, "--model", "openai:scripted"]) == 0
    rows = [json.loads(x) for x in (novel.folder / "summaries.jsonl").read_text().splitlines()]
    assert sorted(r["chapter"] for r in rows) == [1, 2, 3, 4, 5, 6]
    captured = capsys.readouterr()
    assert "6 chapters summarized" in captured.out
    # stderr is not a terminal here: a log, which gets a progress line per chapter
    progress = sorted(line for line in captured.err.splitlines() if "summary of chapter" in line)
    assert progress == [f"• The River: summary of chapter {n}" for n in range(1, 7)]
    calls = len(model.calls)
    assert main([*argv, "--model", "openai:scripted"]) == 0
    assert len(model.calls) == calls
    assert "0 chapters summarized (6 already), 0 chunks indexed" in capsys.readouterr().out


def test_prepare_after_a_kill_mid_line_redoes_that_chapter(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kill while a summary row was being appended leaves a torn last line: read on."""
    novel = imported_novel(tmp_path)
    argv = ["arcane", "prepare", "the_river", "--data", str(tmp_path), "--model", "openai:scripted"]
    assert main(argv) == 0
    path = novel.folder / "summaries.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:5]) + "\n" + lines[5][:20], encoding="utf-8")
    torn = json.loads(lines[5])["chapter"]
    capsys.readouterr()
    assert main(argv) == 0
    assert "1 chapters summarized (5 already)" in capsys.readouterr().out
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()[:5]]
    rows.append(json.loads(path.read_text(encoding="utf-8").splitlines()[-1]))
    assert sorted(r["chapter"] for r in rows) == [1, 2, 3, 4, 5, 6] and rows[-1]["chapter"] == torn


def test_act_answers_with_the_arc_as_of_the_chapter(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_novel(tmp_path)
    argv = ["arcane", "act", "the_river", "Bram offers Ada a boat.", "--character", "Ada"]
    argv += ["--chapter", "2", "--show-prompt", "--data", str(tmp_path)]
    assert main([*argv, "--model", "openai:scripted"]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("Ada looks at the water and says nothing.")
    # Phase 1 (chapters 3-4) starts after chapter 2: hidden, with the pole_end it leads to.
    assert "chapter 2." in out and "MARK3" not in out and '"Phase 0"' in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--chapter", "3", "--mode", "oracle"], "unknown mode 'oracle'"),
        (["--chapter", "99"], "chapter 99 is out of range"),
        (["--chapter", "3", "--character", "Zed"], "character 'Zed' is never mentioned"),
        (["--chapter", "3", "--mode", "summary"], "personae arcane prepare the_river"),
        (["--chapter", "3", "--book", "nope"], "unknown book 'nope'"),
    ],
)
def test_act_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    model: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    imported_novel(tmp_path)
    book = "nope" if "--book" in extra else "the_river"
    extra = [e for e in extra if e not in ("--book", "nope")]
    character = [] if "--character" in extra else ["--character", "Ada"]
    argv = ["arcane", "act", book, "A scene.", *character, *extra, "--data", str(tmp_path)]
    assert main([*argv, "--model", "openai:scripted"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert model.calls == []


def test_prompt_renders_a_probe_phase_without_a_model_call(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_novel(tmp_path)
    argv = ["arcane", "prompt", "the_river", "--probe", "the_river_ada_final_intra_01_iw_a1"]
    assert main([*argv, "--phase", "1", "--mode", "summary", "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "chapter 4." in out and "MARK4 events" in out and "MARK5" not in out
    assert model.calls == []
    assert main([*argv, "--phase", "7", "--data", str(tmp_path)]) == 2
    assert main([*argv[:3], "--probe", "nope", "--phase", "0", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "has no phase 7" in err[0] and "unknown probe 'nope'" in err[1]


def test_act_after_a_build_that_kept_no_arc_says_why_and_what_needs_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every critic says no: the rerun the old message asked for would answer the same."""
    imported_novel(tmp_path)
    responders = arc_responders()
    responders["CriticAnswer"] = lambda m: {"verdict": False, "reasoning": "No.", "citations": []}
    build = [
        "arcane",
        "build-arcs",
        "the_river",
        "--character",
        "Ada",
        "--yes",
        "--data",
        str(tmp_path),
    ]
    with override_models(ScriptedChatModel(responders=responders)):
        assert main([*build, "--model", "openai:scripted"]) == 0
    capsys.readouterr()
    scripted = ScriptedChatModel(responders={"text": _answer})
    argv = ["arcane", "act", "the_river", "A scene.", "--character", "Ada", "--chapter", "3"]
    with override_models(scripted):
        assert main([*argv, "--data", str(tmp_path), "--model", "openai:scripted"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and scripted.calls == []
    assert "kept no arc" in err and "fewer than 2 of 3 critics found it valid" in err
    assert str(tmp_path / "novels/the_river/arcs/ada.json") in err
    assert "--mode vanilla|summary|rag|lifechoice|timechara" in err
    assert "run personae arcane build-arcs" not in err


def test_act_with_an_axis_the_character_lacks_names_the_kept_ones(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_novel(tmp_path)
    argv = ["arcane", "act", "the_river", "A scene.", "--character", "Ada", "--chapter", "3"]
    argv += ["--axis", "final_rel_09", "--data", str(tmp_path), "--model", "openai:scripted"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Ada has no axis final_rel_09" in err and "kept: final_intra_01" in err
    assert model.calls == []


def test_act_for_a_character_never_built_says_to_build_or_use_a_mode_without_arcs(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_novel(tmp_path)  # arcs for Ada only
    argv = ["arcane", "act", "the_river", "A scene.", "--character", "Bram", "--chapter", "3"]
    assert main([*argv, "--data", str(tmp_path), "--model", "openai:scripted"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no arc for Bram in the_river" in err and len(err.splitlines()) == 1
    assert "run personae arcane build-arcs the_river --character 'Bram'" in err
    assert "or answer without an arc: --mode vanilla|summary|rag|lifechoice|timechara" in err
    assert model.calls == []
