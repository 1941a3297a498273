"""The ARCANE runners as a library calls them: import a novel, build arcs, act as of a chapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from arcane_world import arc_responders, prepared_novel, write_novel_file

from personae import (
    ArcBuildContext,
    RoleplayContext,
    act_at_chapter,
    build_arcs,
    import_novel,
)
from personae.errors import InputError
from personae.testing import ScriptedChatModel, override_models


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
