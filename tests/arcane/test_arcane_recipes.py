"""The README's ARCANE Table 2 recipe end to end against the loopback model.

Import, prepare, arcs, probes, evaluation: the commands as the README gives them, the real
OpenAI client on a loopback server, so the wire shows what the paper fixes (App. D, F): the
judge is its own model at temperature 0, never the role-play model; role-play is sent with no
temperature (the server's default); TimeChara's experts run at temperature 0. The run prints
the paper's settings beside its own and keeps them in summary.json and report.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from arcane_world import ProbeScript, arc_responders, write_novel_file
from langchain_core.messages import convert_to_messages
from recipe_world import loopback_llm, models_by_schema, sampling_by_schema, schema_of, text_of

from personae.cli import main


def _adapt(answer: Callable[[Any], Any]) -> Callable[[list[dict[str, Any]]], Any]:
    return lambda messages: answer(convert_to_messages(messages))


def _text(messages: list[dict[str, Any]]) -> str:
    prompt = text_of(messages)
    if "--- chapter text ---" in prompt:
        return "A summary of the chapter."
    if "Chapter: N" in prompt:
        return "Chapter: unknown"
    if "Presence: present" in prompt:
        return "Presence: present"
    return "Ada answers " + str(re.findall(r"chapter (\d+)", prompt)[0])


def _responders() -> dict[str, Any]:
    answers = {**arc_responders(), **ProbeScript().responders()}
    found: dict[str, Any] = {name: _adapt(answer) for name, answer in answers.items()}
    found["text"] = _text
    found["PhaseJudgement"] = lambda m: {"scores": {"apf": 70, "rpf": 60, "rae": 50}}
    found["TrajectoryJudgement"] = lambda m: {
        "scores": {"ptf_alignment": 40, "ptf_direction": 50, "ptf_shape": 60},
        "average": 50.0,
    }
    return found


@pytest.mark.endtoend
def test_table_2_recipe_judges_with_its_own_model_at_temperature_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data", str(tmp_path / "data")]
    book = write_novel_file(tmp_path)
    monkeypatch.setenv("PERSONAE_MODEL", "openai:qwen3-32b")
    with loopback_llm(_responders(), monkeypatch) as fake:
        assert main(["arcane", "import", str(book), "--title", "The River", *data]) == 0
        assert main(["arcane", "prepare", "the_river", *data]) == 0
        assert (
            main(["arcane", "build-arcs", "the_river", "--character", "Ada", "--yes", *data]) == 0
        )
        assert main(["arcane", "build-probes", "the_river", *data]) == 0
        fake.requests.clear()
        out = tmp_path / "runs"
        argv = ["arcane", "eval", "the_river", "--out", str(out), "--limit", "1", *data]
        code = main([*argv, "--modes", "vanilla,timechara,arc"])
    err = capsys.readouterr().err
    assert code == 0, err
    models = models_by_schema(fake)
    assert (
        models["PhaseJudgement"] == models["TrajectoryJudgement"] == {"deepseek/deepseek-v4-flash"}
    )
    assert models["text"] == {"qwen3-32b"}
    temperatures = sampling_by_schema(fake)
    assert temperatures["PhaseJudgement"] == temperatures["TrajectoryJudgement"] == {0.0}
    plays = [r for r in fake.requests if schema_of(r) == "text"]
    experts = [r for r in plays if "Chapter: N" in text_of(r["messages"])]
    roleplay = [r for r in plays if r not in experts and "Presence:" not in text_of(r["messages"])]
    assert experts and {r.get("temperature") for r in experts} == {0.0}
    assert roleplay and {r.get("temperature") for r in roleplay} == {None}  # server default
    assert "ARCANE Table 2: the paper's settings | this run's" in err
    assert "openai:deepseek/deepseek-v4-flash (App. F)" in err
    summary = json.loads((out / "summary.json").read_text())
    rows = {row["setting"]: row for row in summary["paper_settings"]}
    assert rows["judge"]["used"] == "openai:deepseek/deepseek-v4-flash"
    assert rows["judge sampling"]["used"] == "temperature 0"
    assert rows["role-play sampling"]["used"] == "server default"
    assert rows["TimeChara experts' temperature"]["used"] == "0"
    report = (out / "report.md").read_text()
    assert "Judge: openai:deepseek/deepseek-v4-flash, sampling temperature 0" in report
    assert "## Settings: the paper's and this run's" in report
