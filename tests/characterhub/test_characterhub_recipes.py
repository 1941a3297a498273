"""The README's CharacterHub Table 1 recipe end to end against the loopback model and web.

``profile --batch --method paper`` then ``eval profile``, as the README gives them, with the real
OpenAI client on a loopback server: the search agent and the rewriter are their own models with
Table 3's sampling (top-k in the request body of a server other than OpenAI's), the Table 8
output is kept unedited, the paper's quality filter drops rows without a franchise in the alias
table, and both commands print the paper's settings beside the ones used.
"""

from __future__ import annotations

import json
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


def test_table_1_recipe_runs_the_paper_method_as_the_paper_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    web, _, _ = fake_web()
    chars, aliases = tmp_path / "chars.csv", tmp_path / "aliases.csv"
    aliases.write_text("alias,franchise\nHokuto no Ken,Fist of the North Star\n")
    with LoopbackWebServer(web.route) as site, loopback_llm(_responders(), monkeypatch) as fake:
        monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
        monkeypatch.setenv("TAVILY_BASE_URL", site.url)
        monkeypatch.setenv("PERSONAE_MODEL", "openai:strong")
        chars.write_text(
            "name,franchise,wiki\n"
            f"Kenshiro,Hokuto no Ken,{site.url}\n"
            "Nameless,,\n"
            "Mario,Super Mario,\n"
        )
        argv = [
            "profile",
            "--batch",
            str(chars),
            "--method",
            "paper",
            "--out",
            str(tmp_path / "paper"),
        ]
        argv += ["--dedup", "paper", "--franchise-aliases", str(aliases)]
        argv += ["--search-model", "openai:gemini-2.5-pro", "--rewrite-model", "openai:qwen-plus"]
        assert main(argv) == 0, capsys.readouterr().err
        err = capsys.readouterr()
        searched = [
            r for r in fake.requests if schema_of(r) in ("SearchQueries", "ResearchDocument")
        ]
        rewrites = [r for r in fake.requests if schema_of(r) == "text"]
        report = tmp_path / "report" / "eval-report.json"
        eval_argv = ["eval", "profile", str(tmp_path / "paper"), "--reference", str(FIXTURE)]
        eval_argv += ["--out", str(report), "--judge-model", "openai:qwen3-235b"]
        eval_argv += ["--temperature", "judge=0.7", "--top-p", "judge=0.8"]
        fake.requests.clear()
        assert main(eval_argv) == 0
        eval_err = capsys.readouterr().err
        judged = models_by_schema(fake)
    assert "1 profiled, 0 already done, 0 duplicates, 2 filtered, 0 failed" in err.out
    assert "skipped 'Nameless': no franchise (the paper's quality filter)" in err.err
    assert "skipped 'Mario': franchise 'Super Mario' not in the alias table" in err.err
    assert {r["model"] for r in searched} == {"gemini-2.5-pro"} and len(searched) == 4  # R¹, R²
    assert {(r["temperature"], r["top_p"], r["top_k"]) for r in searched} == {(1.0, 0.95, 64)}
    assert [(r["model"], r["temperature"], r["top_p"], r["top_k"]) for r in rewrites] == [
        ("qwen-plus", 0.85, 0.8, 50)
    ]
    assert "CharacterHub profiling (--method paper): the paper's settings" in err.err
    assert "Gemini-2.5-Pro (§5.1) | openai:gemini-2.5-pro@" in err.err
    folder = tmp_path / "paper" / "kenshiro--hokuto-no-ken"
    document = json.loads((folder / "profile.json").read_text())
    assert document["profile"] == PAPER_PROFILE  # Table 8's answer, unedited
    assert document["prose_check"] is None and document["canon"] == ""
    assert document["models"]["search"]["top_k_sent"] is True
    assert document["models"]["rewrite"]["model"].startswith("openai:qwen-plus@")
    assert judged.keys() == {"ExtractedKnowledge", "AlignmentList"}
    assert judged["AlignmentList"] == {"qwen3-235b"}
    assert "CharacterHub Table 1: the paper's settings | this run's" in eval_err
    assert "Qwen3-235B-A22B-Instruct-2507 (§5.1)" in eval_err
    rows = {r["setting"]: r for r in json.loads(report.read_text())["paper_settings"]}
    assert rows["judge sampling"]["used"] == "temperature=0.7,top_p=0.8"
    assert rows["profiles' search model"]["used"].startswith("openai:gemini-2.5-pro@")
    assert "## Settings: the paper's and this run's" in report.with_suffix(".md").read_text()
