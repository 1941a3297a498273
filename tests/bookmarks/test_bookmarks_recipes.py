"""The README's BOOKMARKS Table 2 recipe end to end against the loopback model.

``bench bookmarks`` with the four methods, as the README gives it, the real OpenAI client on a
loopback server: the wire shows the paper's judge (gpt-4.1 by default, never the acting model),
temperature 0 on every call, and each call on the model its role preset names; the run prints
the paper's settings beside its own and keeps them in summary.json and the report.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookmarks_world import scripted_model, write_storyline
from langchain_core.messages import convert_to_messages
from recipe_world import loopback_llm, models_by_schema, sampling_by_schema

from personae.cli import main
from personae.graphs.bookmarks.resources import forget_resources


def _adapt(answer: Callable[[Any], Any]) -> Callable[[list[dict[str, Any]]], Any]:
    return lambda messages: answer(convert_to_messages(messages))


def _responders() -> dict[str, Any]:
    found = {name: _adapt(a) for name, a in scripted_model().responders.items()}
    found["KeyMoveVerdict"] = lambda m: {"reasoning": "compared", "score": "A"}
    return found


def _bench(story: Path, out: Path, *extra: str) -> int:
    argv = ["bookmarks", "bench", str(story), "--judge-method", "exact", "--out", str(out)]
    argv += ["--model", "openai:gpt-5.1", "--fast-model", "openai:gpt-5.4-mini", "--limit", "1"]
    try:
        return main([*argv, *extra])
    finally:
        forget_resources()


README = Path(__file__).resolve().parents[2] / "docs" / "papers" / "bookmarks.md"
"""The BOOKMARKS page of the manual, where the recipe lives."""


def readme_bench_commands() -> list[str]:
    """The `bench bookmarks` commands of the README's Table 2 / Table 3 recipe block."""
    text = README.read_text(encoding="utf-8")
    block = text.split("**Reproducing Table 2**", 1)[1].split("```bash\n", 1)[1].split("```")[0]
    joined = block.replace("\\\n", " ")
    return [line for line in joined.splitlines() if "personae bookmarks bench" in line]


def test_the_readme_recipe_uses_the_preset_the_readme_believes_table_2_used() -> None:
    commands = readme_bench_commands()
    assert len(commands) == 2  # Table 2, then Table 3's ablations
    for command in commands:
        assert "--roles released" in command, command
    text = README.read_text(encoding="utf-8")
    assert "As far as can be told it is\n  `released`" in text  # what the README believes


@pytest.mark.endtoend
def test_table_2_recipe_runs_the_four_methods_with_the_paper_s_judge_and_roles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    with loopback_llm(_responders(), monkeypatch) as fake:
        recipe = ["--method", "vanilla,ricl,eta,bookmarks", "--roles", "released"]
        code = _bench(story, tmp_path / "bench", *recipe)
        err = capsys.readouterr().err
        assert code == 0, err
        released = models_by_schema(fake)
        temperatures = sampling_by_schema(fake)
        fake.requests.clear()
        code = _bench(story, tmp_path / "paper", "--method", "eta,bookmarks", "--roles", "paper")
        paper = models_by_schema(fake)
    assert code == 0
    assert released["KeyMoveVerdict"] == {"gpt-4.1"}  # the paper's judge, by default
    assert paper["NextAction"] == {"gpt-5.1"} and paper["ChunkProfile"] == {"gpt-5.1"}  # ETA
    for schema in ("ReleasedQueries", "StateCheck", "EvidenceAnswer", "ConceptUpdate"):
        assert paper[schema] == {"gpt-5.4-mini"}, schema  # §5.1: every other call
    assert all(values == {0.0} for values in temperatures.values()), temperatures
    for schema in ("ReleasedQueries", "ConceptUpdate", "BehaviorSummary", "ChunkProfile"):
        assert released[schema] == {"gpt-5.1"}, schema  # the released runner's --model
    assert released["StateCheck"] == released["EvidenceAnswer"] == {"gpt-5.4-mini"}
    assert "BOOKMARKS Table 2: the paper's settings | this run's" in err
    assert "gpt-5.1 (§5.1) | openai:gpt-5.1\n" in err and "gpt-4.1 (§4) | openai:gpt-4.1@" in err
    summary = json.loads((tmp_path / "bench" / "summary.json").read_text())
    rows = {row["setting"]: row for row in summary["paper_settings"]}
    assert rows["BOOKMARKS roles"]["used"] == "released"  # the recipe's preset
    assert rows["K (questions per step)"]["used"] == "5"
    assert rows["story title in prompts"]["used"] == "none"
    assert rows["RICL examples"]["used"] == "8" and rows["RICL embedding"]["paper"] == "not stated"
    report = (tmp_path / "bench" / "report.md").read_text()
    assert "## Settings: the paper's and this run's" in report
    assert "over the last 20 steps" in report  # the moving-window hit rate


def test_bench_help_states_its_own_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bookmarks", "bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default openai:gpt-4.1, the paper's" in text
    assert "default 0 for every role, as the released runner's 1e-8" in text
    assert "default the strong model" not in text and "default the server's" not in text
    assert "bookmarks-personae" in text and "bookmarks+ibu" in text and "--roles" in text
