"""The manual's CharacterHub Table 1 recipe end to end against the loopback model and web.

``profile --batch`` with the paper's method and ours, then ``characterhub eval``, read from the
recipe block of ``docs/papers/characterhub.md`` and run as written, with the real
OpenAI client on a loopback server: the search agent and the rewriter are their own models with
Table 3's sampling (top-k in the request body of a server other than OpenAI's), the Table 8
output is kept unedited, the paper's quality filter drops rows without a franchise in the alias
table, and both commands print the paper's settings beside the ones used.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import convert_to_messages
from profile_eval_world import FIXTURE, keyword_judge
from profile_eval_world import scripted_model as eval_model
from profiler_world import PAPER_PROFILE, fake_web
from profiler_world import scripted_model as profiler_model
from recipe_world import loopback_llm, models_by_schema, schema_of

from personae.cli import main
from personae.loopback import LoopbackWebServer


def _adapt(answer: Callable[[Any], Any]) -> Callable[[list[dict[str, Any]]], Any]:
    return lambda messages: answer(convert_to_messages(messages))


def _responders() -> dict[str, Any]:
    answers = {**profiler_model().responders, **eval_model().responders}
    answers["AlignmentList"] = keyword_judge("Kenshiro")
    return {name: _adapt(answer) for name, answer in answers.items()}


PAGE = Path(__file__).resolve().parents[2] / "docs" / "papers" / "characterhub.md"
MARKER = (
    "<!-- run: tests/characterhub/test_characterhub_recipes.py::"
    "test_table_1_recipe_runs_the_paper_method_as_the_paper_did -->"
)


def recipe_commands() -> list[list[str]]:
    """The arguments of each ``uv run personae`` line of the page's Table 1 recipe block."""
    block = PAGE.read_text(encoding="utf-8").split(MARKER, 1)[1].split("```bash\n", 1)[1]
    lines = block.split("\n```", 1)[0].replace("\\\n", " ").splitlines()
    commands = [shlex.split(line, comments=True) for line in lines]
    assert all(words[:3] == ["uv", "run", "personae"] for words in commands), commands
    return [words[3:] for words in commands]


def test_table_1_recipe_runs_the_paper_method_as_the_paper_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's commands as written, in a folder holding the three CSV files they name."""
    paper, planned, evaluate = recipe_commands()
    web, _, _ = fake_web()
    monkeypatch.chdir(tmp_path)
    Path("aliases.csv").write_text("alias,franchise\nHokuto no Ken,Fist of the North Star\n")
    # --method planned has no quality filter: Nameless and Mario are profiled too
    refs = "".join(f"{name},{FIXTURE}\n" for name in ("Kenshiro", "Nameless", "Mario"))
    Path("refs.csv").write_text(f"character,reference\n{refs}")
    with LoopbackWebServer(web.route) as site, loopback_llm(_responders(), monkeypatch) as fake:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", site.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:strong")
        Path("chars.csv").write_text(
            f"name,franchise,wiki\nKenshiro,Hokuto no Ken,{site.url}\nNameless,,\nMario,Super Mario,\n"
        )
        assert main(paper) == 0, capsys.readouterr().err
        err = capsys.readouterr()
        searched = [
            r for r in fake.requests if schema_of(r) in ("SearchQueries", "ResearchDocument")
        ]
        rewrites = [r for r in fake.requests if schema_of(r) == "text"]
        assert main(planned) == 0, capsys.readouterr().err
        capsys.readouterr()
        fake.requests.clear()
        assert main(evaluate) == 0, capsys.readouterr().err
        eval_err = capsys.readouterr().err
        judged = models_by_schema(fake)
    report = tmp_path / "runs" / "report" / "eval-report.json"
    assert "1 profiled, 0 already done, 0 duplicates, 2 filtered, 0 failed" in err.out
    assert "skipped 'Nameless': no franchise (the paper's quality filter)" in err.err
    assert "skipped 'Mario': franchise 'Super Mario' not in the alias table" in err.err
    assert {r["model"] for r in searched} == {"google/gemini-2.5-pro"} and len(searched) == 4
    assert {(r["temperature"], r["top_p"], r["top_k"]) for r in searched} == {(1.0, 0.95, 64)}
    assert [(r["model"], r["temperature"], r["top_p"], r["top_k"]) for r in rewrites] == [
        ("qwen/qwen-plus", 0.85, 0.8, 50)
    ]
    assert "CharacterHub profiling (--method paper): the paper's settings" in err.err
    assert "Gemini-2.5-Pro (§5.1) | openai:google/gemini-2.5-pro@" in err.err
    folder = tmp_path / "runs" / "paper" / "kenshiro--hokuto-no-ken"
    document = json.loads((folder / "profile.json").read_text())
    assert document["profile"] == PAPER_PROFILE  # Table 8's answer, unedited
    assert document["prose_check"] is None and document["canon"] == ""
    assert document["models"]["search"]["top_k_sent"] is True
    assert document["models"]["rewrite"]["model"].startswith("openai:qwen/qwen-plus@")
    assert judged.keys() == {"ExtractedKnowledge", "AlignmentList"}
    assert judged["AlignmentList"] == {"qwen/qwen3-235b-a22b-2507"}
    assert "CharacterHub Table 1: the paper's settings | this run's" in eval_err
    assert "Qwen3-235B-A22B-Instruct-2507 (§5.1)" in eval_err
    rows = {r["setting"]: r for r in json.loads(report.read_text())["paper_settings"]}
    assert rows["judge sampling"]["used"] == "temperature=0.7,top_p=0.8"
    assert rows["profiles' search model"]["used"].startswith("openai:google/gemini-2.5-pro@")
    assert "## Settings: the paper's and this run's" in report.with_suffix(".md").read_text()
