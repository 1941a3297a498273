"""The ARCANE runners as a library calls them: import a novel, build arcs, act as of a chapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from arcane_world import arc_responders, prepared_novel, write_novel_file

from personae import ArcBuildContext, RoleplayContext, act_at_chapter, build_arcs, import_novel
from personae.errors import InputError
from personae.evals import ArcaneEvalContext, evaluate_arcane, write_arcane_report
from personae.testing import ScriptedChatModel, override_models, prompt_text


def test_import_novel_saves_the_chapters_and_says_what_it_cut(tmp_path: Path) -> None:
    novel = import_novel(write_novel_file(tmp_path), data_dir=tmp_path / "data", title="The River")
    assert (novel.title, novel.form, len(novel.segmentation.chapters)) == ("The River", "novel", 6)
    assert novel.folder == tmp_path / "data" / "novels" / "the_river"
    assert (novel.folder / "chapters.jsonl").is_file() and (novel.folder / "meta.json").is_file()
    (tmp_path / "empty.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        import_novel(tmp_path / "empty.txt", data_dir=tmp_path / "data")


async def test_build_arcs_reports_progress_and_a_rerun_reads_the_checkpoint(tmp_path: Path) -> None:
    import_novel(write_novel_file(tmp_path), data_dir=tmp_path, title="The River")
    scripted = ScriptedChatModel(responders=arc_responders())
    lines: list[str] = []
    with override_models(scripted):
        context = ArcBuildContext(data_dir=str(tmp_path), model="openai:scripted")
        build = await build_arcs("the_river", "Ada", context=context, progress=lines.append)
        calls = len(scripted.calls)
        again = await build_arcs("The River", " Ada ", context=context)
    assert build.ran and not build.waiting_for_votes and build.character == "Ada"
    assert len(build.values["arcs"]) == 2 and build.values["usage"]["llm_calls"] == calls
    assert lines == [f"Ada: chapter {n} read" for n in range(1, 7)]
    assert len(scripted.calls) == calls and again.values["arcs"] == build.values["arcs"]
    with pytest.raises(InputError, match="'Zed' is never mentioned"):
        await build_arcs("the_river", "Zed", context=context)


async def test_act_at_chapter_answers_with_nothing_later(tmp_path: Path) -> None:
    prepared_novel(tmp_path)

    def answer(messages: Any) -> str:
        return "Ada looks at the water and says nothing."

    with override_models(ScriptedChatModel(responders={"text": answer})):
        context = RoleplayContext(data_dir=str(tmp_path), model="openai:scripted")
        said = await act_at_chapter(
            "the_river", "Ada", 2, "Bram offers Ada a boat.", context=context
        )
    assert said.response == "Ada looks at the water and says nothing."
    assert (said.chapter, said.mode) == (2, "arc")
    assert "chapter 2." in said.system and "MARK3" not in said.system + said.user
    assert said.user.startswith("Scenario:\nBram offers Ada a boat.")
    assert said.context_chapters and max(said.context_chapters) <= 2  # where it came from
    assert list(said.context_chapters) == sorted(set(said.context_chapters))  # each once


def _eval_responders() -> dict[str, Any]:
    """Role-play, presence checks and both judges, scripted."""

    def text(messages: Any) -> str:
        prompt = prompt_text(messages)
        if "Chapter: N" in prompt:
            return "Chapter: unknown"
        if "Presence: present" in prompt:
            return "Presence: present"
        return "Ada answers " + prompt.split("chapter ")[1][:1]

    return {
        "text": text,
        "PhaseJudgement": lambda messages: {"scores": {"apf": 70, "rpf": 60, "rae": 50}},
        "TrajectoryJudgement": lambda messages: {
            "scores": {"ptf_alignment": 40, "ptf_direction": 50, "ptf_shape": 60},
            "average": 50.0,
        },
    }


async def test_evaluate_arcane_writes_the_results_and_reports_and_a_rerun_skips(
    tmp_path: Path,
) -> None:
    """What ``personae arcane eval`` runs, called as a library: the runner writes every file."""
    prepared_novel(tmp_path)
    out = tmp_path / "run"
    scripted = ScriptedChatModel(responders=_eval_responders())
    lines: list[str] = []
    with override_models(scripted):
        context = ArcaneEvalContext(
            data_dir=str(tmp_path), model="openai:actor", judge_model="openai:judge"
        )
        run = await evaluate_arcane(
            ["the_river"],
            context=context,
            modes=["vanilla", "arc"],
            also_models=["openai:other"],
            out=out,
            progress=lines.append,
        )
        calls = len(scripted.calls)
        again = await evaluate_arcane(["the_river"], context=context, modes=["arc"], out=out)
    assert [(p.model, p.evaluated, p.skipped) for p in run.passes] == [
        ("openai:actor", 2, 0),
        ("openai:other", 2, 0),
    ]
    assert lines[0].startswith("estimated: 28 LLM calls, ~")  # before the first call
    assert lines[1].startswith("• openai:actor: 2 units evaluated, 0 already done, ")
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((r["model"], r["mode"]) for r in rows) == [
        ("openai:actor", "arc"), ("openai:actor", "vanilla"),
        ("openai:other", "arc"), ("openai:other", "vanilla"),
    ]  # fmt: skip
    written = json.loads(run.report.summary_json.read_text())
    assert json.loads(json.dumps(run.report.summary)) == written and len(written["rows"]) == 4
    assert "IW-APF" in run.report.table and run.report.report_html.is_file()
    assert len(scripted.calls) == calls and again.passes[0].skipped == 1  # nothing redone
    assert again.passes[0].evaluated == 0
    (out / "results.jsonl").write_text("")
    with pytest.raises(InputError, match="holds no results"):
        write_arcane_report(out)
    with pytest.raises(InputError, match="is a file"):
        await evaluate_arcane(["the_river"], context=context, out=out / "results.jsonl")
