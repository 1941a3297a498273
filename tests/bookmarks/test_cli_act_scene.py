"""`personae bookmarks act --scene` (scene and true next action) and the zero-questions warning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookmarks_world import scripted_model_as, write_storyline

from personae.cli import main
from personae.testing import ScriptedChatModel

MODELS = ["--model", "openai:t", "--fast-model", "openai:t"]


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    with scripted_model_as("t") as scripted:
        yield scripted


@pytest.fixture
def story(tmp_path: Path) -> Path:
    return write_storyline(tmp_path / "club.jsonl")


def test_scene_and_true_next_action(
    story: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "bookmarks",
                "act",
                str(story),
                "--character",
                "Haruhi",
                "--at",
                "40",
                "--scene",
                *MODELS,
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Scene:"
    assert lines[1] == "  [30] (Nagato) Nagato talks to Mikuru about the club in scene 30."
    assert lines[10] == "  [39] (Other) Other talks to Haruhi about the club in scene 39."
    assert lines[11] == "True next action at [40]: Haruhi talks to Kyon about the club in scene 40."
    assert lines[13] == "Haruhi smiles at the brigade."  # the prediction follows


def test_scene_names_the_next_own_position_when_another_character_acts(
    story: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "bookmarks",
        "act",
        str(story),
        "--character",
        "Haruhi",
        "--at",
        "41",
        "--scene",
        "--json",
    ]
    assert main([*argv, *MODELS]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["true_action"] is None and payload["next_own_position"] == 48
    assert len(payload["scene"]) == 10 and payload["warnings"] == []


def test_a_step_with_no_kept_question_is_a_warning(
    story: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    unusable = [{"type": "concept", "question": "Who is Tsuruya?", "keyword": "Tsuruya"}] * 2
    model.responders["ProposedQuestions"] = lambda messages: {"questions": unusable}
    ours = ["--method", "bookmarks-personae"]  # the code's question checks are ours
    argv = [
        "bookmarks",
        "act",
        str(story),
        "--character",
        "Haruhi",
        "--at",
        "40",
        *ours,
        "--json",
        *MODELS,
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    warning = (
        "no question kept this step (the model proposed 2, all dropped by the code): "
        "no bookmark was matched or synced"
    )
    assert payload["stats"]["questions_dropped"] == 2 and payload["warnings"] == [warning]
    estimate, *rest = captured.err.splitlines(keepends=True)
    assert estimate.startswith("personae: estimated: ")  # before the step, then its warning
    assert rest == [f"personae: warning: {warning}\n"]
    assert main(argv[:-5] + MODELS) == 0  # text output says it too
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"Warning: {warning}"
    assert "2 proposed questions dropped" in out
