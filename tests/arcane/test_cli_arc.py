"""`personae arcane build-arcs|show-arc|annotate-arcs` with a scripted model: cost gate, SQLite resume, votes."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import arc_responders, imported_novel

from personae.cli import main
from personae.memory.arcane.records import load_arcs
from personae.testing import ScriptedChatModel, override_models, prompt_text


@pytest.fixture
def model() -> Iterator[ScriptedChatModel]:
    scripted = ScriptedChatModel(responders=arc_responders())
    with override_models(scripted):
        yield scripted


def _build(data: Path, *extra: str) -> int:
    argv = ["arcane", "build-arcs", "the_river", "--character", "Ada", "--data", str(data)]
    return main([*argv, "--model", "openai:scripted", *extra])


def test_build_estimates_then_builds_and_a_rerun_is_free(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    imported_novel(tmp_path)
    assert _build(tmp_path, "--confirm-above", "10") == 2
    err = capsys.readouterr()
    assert "estimated: 33 LLM calls" in err.out and "--yes" in err.err
    assert model.calls == []
    assert _build(tmp_path, "--confirm-above", "10", "--yes") == 0
    out = capsys.readouterr().out
    assert "Ada: 2 arcs kept, 2 dropped; 24 LLM calls" in out
    detail = json.loads((tmp_path / "novels/the_river/arcs/ada.json").read_text())
    assert detail["usage"]["llm_calls"] == 24  # actual usage recorded beside the arcs
    calls = len(model.calls)
    assert _build(tmp_path, "--yes") == 0  # the finished build again: every call is cached
    assert len(model.calls) == calls
    rerun = "Ada: 2 arcs kept, 2 dropped; 0 LLM calls, 0 tokens, 24 cached answers"
    assert rerun in capsys.readouterr().out


def test_killed_build_resumes_from_sqlite(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    imported_novel(tmp_path)
    answer = model.responders["ChapterState"]

    def dies_at_5(messages: Any) -> Any:
        if "CURRENT CHAPTER (5)" in prompt_text(messages):
            raise KeyboardInterrupt
        return answer(messages)

    model.responders["ChapterState"] = dies_at_5
    assert _build(tmp_path, "--yes") == 130
    model.responders["ChapterState"] = answer
    model.calls.clear()
    assert _build(tmp_path, "--yes") == 0
    assert "resuming at chapter 5" in capsys.readouterr().err
    read = sorted(
        {prompt_text(m).split("CURRENT CHAPTER (")[1][0] for m in model.calls_for("ChapterState")}
    )
    assert read == ["5", "6"]


def test_show_prints_the_payload_at_a_chapter(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    imported_novel(tmp_path)
    assert _build(tmp_path, "--yes") == 0
    capsys.readouterr()
    argv = ["arcane", "show-arc", "the_river", "--character", "Ada", "--axis", "final_intra_01"]
    assert main([*argv, "--chapter", "3", "--data", str(tmp_path)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [p["chapter_range"] for p in payload["trajectory"]] == [[1, 2], [3, 4]]
    assert "pole_end" not in payload and "literary_validation" not in payload
    assert main([*argv, "--chapter", "9", "--data", str(tmp_path)]) == 2
    assert (
        main(["arcane", "show-arc", "the_river", "--character", "Bram", "--data", str(tmp_path)])
        == 2
    )
    assert "arcane build-arcs the_river" in capsys.readouterr().err


def test_eval_split_votes_round_trip(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    imported_novel(tmp_path)
    assert _build(tmp_path, "--yes", "--split", "eval") == 0
    assert "await human votes" in capsys.readouterr().out
    sheet, votes = tmp_path / "sheet.csv", tmp_path / "votes.csv"
    annotate = ["arcane", "annotate-arcs", "the_river", "--data", str(tmp_path)]
    assert main([*annotate, "--export", str(sheet)]) == 0
    with sheet.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3 * 3 and rows[0]["validity"] == ""
    for row in rows:  # two of three annotators accept final_intra_01 only
        row["validity"] = (
            "yes" if row["axis_id"] == "final_intra_01" and row["annotator"] != "a3" else "no"
        )
    with votes.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert main([*annotate, "--import", str(votes), "--model", "openai:scripted"]) == 0
    arcs = load_arcs(tmp_path / "novels" / "the_river")
    assert [a.axis_id for a in arcs] == ["final_intra_01"] and arcs[0].validated_by == "humans"
    rows[0]["validity"] = "maybe"
    with votes.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert main([*annotate, "--import", str(votes), "--model", "openai:scripted"]) == 2
    assert "is not yes/no" in capsys.readouterr().err


def test_the_vote_runners_check_every_axis_before_resuming_any(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    """The library calls behind annotate-arcs: a sheet lacking one axis resumes nothing."""
    import asyncio

    from personae.errors import InputError
    from personae.graphs.arcane.arc_build import ArcBuildContext
    from personae.runners.arcane_votes import export_vote_sheet, read_votes, resume_with_votes

    imported_novel(tmp_path)
    assert _build(tmp_path, "--yes", "--split", "eval") == 0
    sheet = tmp_path / "sheet.csv"
    context = ArcBuildContext(data_dir=str(tmp_path), model="openai:scripted")
    exported = asyncio.run(export_vote_sheet("the_river", sheet, context=context))
    assert exported.axes == 3 and exported.path == sheet
    with sheet.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    kept = [r for r in rows if r["axis_id"] != rows[-1]["axis_id"]]  # one axis left unvoted
    for row in kept:
        row["validity"] = "yes"
    votes = tmp_path / "votes.csv"
    with votes.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(kept)
    with pytest.raises(InputError, match=rf"no votes for Ada's axes \['{rows[-1]['axis_id']}'\]"):
        asyncio.run(resume_with_votes("the_river", read_votes(votes), context=context))
    again = asyncio.run(export_vote_sheet("the_river", sheet, context=context))
    assert again.axes == 3  # still waiting: nothing was resumed
    assert load_arcs(tmp_path / "novels" / "the_river") == []


def test_build_bad_input_is_one_line_exit_2(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    imported_novel(tmp_path)
    argv = ["arcane", "build-arcs", "the_river", "--character", "Zed", "--data", str(tmp_path)]
    assert main([*argv, "--model", "openai:scripted"]) == 2
    err = capsys.readouterr().err
    assert "'Zed' is never mentioned" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "novels/the_river/arcs.jsonl").exists() and model.calls == []


def test_suggest_ranks_names_by_mentions_without_a_model(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    imported_novel(tmp_path)
    argv = ["arcane", "build-arcs", "the_river", "--suggest", "--data", str(tmp_path)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    ranked = [line.split(". ", 1)[1].rsplit(" (", 1)[0] for line in lines[1:-1]]
    assert ranked[:2] == ["Ada", "Bram"] and "Later" not in ranked  # sentence-initial: no name
    assert lines[-1] == 'build with: personae arcane build-arcs the_river --character "Ada"'
    assert model.calls == [] and not (tmp_path / "novels/the_river/arcs.jsonl").exists()
    assert main(["arcane", "build-arcs", "the_river", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--suggest" in err and len(err.strip().splitlines()) == 1


def test_rank_names_skips_sentence_starts_and_common_words() -> None:
    from personae.tools.arcane.name_mentions import rank_names

    text = (
        "The rain fell. Then Mr. Darcy spoke to Elizabeth, and Elizabeth smiled at Mr. Darcy. "
        "But Elizabeth left; the rain stayed with Mr. Darcy and Jane. Rain is rain. " * 3
    )
    assert rank_names([text]) == [("Elizabeth", 9), ("Mr. Darcy", 9), ("Jane", 3)]


@pytest.mark.slow
def test_killed_build_resumes_from_postgres_and_votes_round_trip(
    tmp_path: Path, model: ScriptedChatModel, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """PERSONAE_CHECKPOINTER=postgresql://...: the build's checkpoints (ARCANE's serializer)
    and the paused eval builds live in Postgres; nothing is written beside the novel."""
    imported_novel(tmp_path)
    answer = model.responders["ChapterState"]

    def dies_at_5(messages: Any) -> Any:
        if "CURRENT CHAPTER (5)" in prompt_text(messages):
            raise KeyboardInterrupt
        return answer(messages)

    model.responders["ChapterState"] = dies_at_5
    assert _build(tmp_path, "--yes", "--split", "eval") == 130
    model.responders["ChapterState"] = answer
    assert _build(tmp_path, "--yes", "--split", "eval") == 0
    assert "resuming at chapter 5" in capsys.readouterr().err
    sheet = tmp_path / "sheet.csv"
    annotate = [
        "arcane",
        "annotate-arcs",
        "the_river",
        "--data",
        str(tmp_path),
        "--export",
        str(sheet),
    ]
    assert main(annotate) == 0
    assert len(sheet.read_text(encoding="utf-8").splitlines()) == 1 + 3 * 3
    assert not (tmp_path / "novels/the_river/.checkpoints.sqlite").exists()


def test_degraded_critiques_are_named_and_a_rerun_asks_again(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: `arc build` printed a bare ``degraded: N``; the rerun must ask again, not
    replay a cached invalid answer."""
    imported_novel(tmp_path)
    critic = model.responders["CriticAnswer"]
    model.responders["CriticAnswer"] = lambda _: {"not": "a verdict"}
    assert _build(tmp_path, "--yes") == 0
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("degraded: ")
    count = int(err[-1].split()[1])
    assert err[-1] == (
        f"degraded: {count} (critiques {count}): model answers still invalid after retries "
        "(listed above); a rerun asks the model again"
    )
    model.responders["CriticAnswer"] = critic
    model.calls.clear()
    assert _build(tmp_path, "--yes") == 0
    assert len(model.calls_for("CriticAnswer")) == count  # asked again; the valid ones cached
    assert "degraded" not in capsys.readouterr().err


def test_a_rerun_removes_the_temporary_a_killed_build_left_in_the_cache(
    tmp_path: Path, model: ScriptedChatModel
) -> None:
    """Issue 27: after kill -9 mid-write, ``cache/arcane/**/.*.json.*.tmp`` outlived the rerun."""
    import os
    import time

    imported_novel(tmp_path)
    shard = tmp_path / "cache" / "arcane" / "ab"
    shard.mkdir(parents=True)
    stale = shard / ".ab12.json.0123456789abcdef.tmp"
    writing = shard / ".ab34.json.fedcba9876543210.tmp"  # a live writer's: seconds old
    kept = shard / "notes.tmp"  # not a name Personae gives its temporaries
    for path in (stale, writing, kept):
        path.write_text('{"answer": ')
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    os.utime(kept, (an_hour_ago, an_hour_ago))
    assert _build(tmp_path, "--yes") == 0
    assert not stale.exists() and writing.exists() and kept.exists()
    assert list((tmp_path / "cache" / "arcane").rglob(".*.json.*.tmp")) == [writing]


def test_a_finished_build_keeps_only_its_last_checkpoint(
    tmp_path: Path, model: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: a finished build's checkpoints stayed; ``--keep-checkpoints`` keeps them."""
    import sqlite3

    def rows() -> int:
        database = tmp_path / "novels/the_river/.checkpoints.sqlite"
        with sqlite3.connect(database) as db:
            return int(db.execute("select count(*) from checkpoints").fetchone()[0])

    imported_novel(tmp_path)
    assert _build(tmp_path, "--yes", "--keep-checkpoints") == 0
    kept = rows()
    assert _build(tmp_path, "--yes") == 0  # the rerun (cached answers), then pruned
    assert kept > 5 and rows() == 1
    assert "Ada: 2 arcs kept, 2 dropped; 0 LLM calls" in capsys.readouterr().out
    assert _build(tmp_path, "--yes") == 0  # and from the pruned file, once more
    assert "Ada: 2 arcs kept, 2 dropped; 0 LLM calls" in capsys.readouterr().out
