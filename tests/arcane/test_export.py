"""ARCANE App. D export: DPO pairs (anchor vs adjacent phase) and SFT teacher rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from arcane_world import arc_record, future_marks, prepared_novel, probe_record

from personae.cli import main
from personae.memory.arcane.records import write_jsonl_atomic
from personae.testing import ScriptedChatModel, override_models, prompt_text


@pytest.fixture
def teacher() -> Iterator[ScriptedChatModel]:
    def answer(messages: Any) -> str:
        return "Ada answers as of chapter " + prompt_text(messages).split("chapter ")[1][:1]

    model = ScriptedChatModel(responders={"text": answer})
    with override_models(model):
        yield model


def _export(data: Path, out: Path, *extra: str) -> int:
    argv = ["arcane", "export", "the_river", "--data", str(data), "--out", str(out)]
    return main([*argv, *extra])


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_dpo_pairs_the_anchor_reference_with_each_adjacent_phase(
    tmp_path: Path, teacher: ScriptedChatModel
) -> None:
    prepared_novel(tmp_path)
    out = tmp_path / "dpo.jsonl"
    assert _export(tmp_path, out, "--format", "dpo") == 0
    rows = _rows(out)
    assert [(r["metadata"]["chosen_phase"], r["metadata"]["rejected_phase"]) for r in rows] == [
        (1, 0),
        (1, 2),
    ]
    first = rows[0]
    assert first["chosen"] == [
        {"role": "assistant", "content": "Thought: thinks 1\nAction: acts 1"}
    ]
    assert first["rejected"][0]["content"] == "Thought: thinks 0\nAction: acts 0"
    system, user = first["prompt"]
    assert system["role"] == "system" and "chapter 4" in system["content"]
    assert "<context>" in system["content"] and future_marks(system["content"], 4) == []
    assert rows[1]["prompt"] == first["prompt"]  # same scenario and question on both sides
    assert user["content"].startswith("Scenario:\nBram asks Ada")
    assert teacher.calls == []  # pairs need no model


def test_dpo_every_phase_and_unavailable_phases(tmp_path: Path, teacher: ScriptedChatModel) -> None:
    novel = prepared_novel(tmp_path)
    out = tmp_path / "dpo.jsonl"
    assert _export(tmp_path, out, "--format", "dpo", "--pairs", "every-phase") == 0
    pairs = [(r["metadata"]["chosen_phase"], r["metadata"]["rejected_phase"]) for r in _rows(out)]
    assert pairs == [(0, 1), (1, 0), (1, 2), (2, 1)]
    probe = probe_record()
    probe.phase_responses[2].unavailable = True
    write_jsonl_atomic(novel.folder / "probes.jsonl", [probe])
    assert _export(tmp_path, out, "--format", "dpo", "--modes", "arc,summary") == 0
    rows = _rows(out)
    assert [(r["metadata"]["mode"], r["metadata"]["rejected_phase"]) for r in rows] == [
        ("arc", 0),
        ("summary", 0),
    ]
    assert "Chapter 4: Summary of chapter 4" in rows[1]["prompt"][0]["content"]


def test_sft_samples_each_teacher_per_phase_and_mode_and_reruns_free(
    tmp_path: Path, teacher: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_novel(tmp_path)
    out = tmp_path / "sft.jsonl"
    teachers = ["--teacher-model", "openai:mini", "--teacher-model", "openai:sonnet"]
    assert _export(tmp_path, out, "--format", "sft", *teachers) == 0
    rows = _rows(out)
    assert len(rows) == 3 * 2 * 2 * 3  # phases x modes (arc, summary) x teachers x samples
    assert len(teacher.calls) == 36  # each sample is its own call
    assert {r["metadata"]["mode"] for r in rows} == {"arc", "summary"}
    row = next(r for r in rows if r["metadata"]["phase_idx"] == 0)
    system, user, answer = row["messages"]
    assert answer == {"role": "assistant", "content": "Ada answers as of chapter 2"}
    assert future_marks(system["content"], 2) == [] and row["metadata"]["query_chapter"] == 2
    assert "36 sft rows from 1 probes" in capsys.readouterr().out
    teacher.calls.clear()
    assert _export(tmp_path, out, "--format", "sft", *teachers) == 0
    assert teacher.calls == [] and len(_rows(out)) == 36


def test_only_train_split_arcs_are_exported_by_default(
    tmp_path: Path, teacher: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    novel = prepared_novel(tmp_path)
    write_jsonl_atomic(
        novel.folder / "arcs.jsonl", [arc_record().model_copy(update={"split": "eval"})]
    )
    out = tmp_path / "dpo.jsonl"
    assert _export(tmp_path, out, "--format", "dpo") == 2
    err = capsys.readouterr().err
    assert "no probes of train-split arcs in the_river" in err and not out.exists()
    assert _export(tmp_path, out, "--format", "dpo", "--split", "any") == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--format", "xml"], "unknown --format 'xml'"),
        (["--format", "sft", "--modes", "timechara"], "unknown mode 'timechara'"),
        (["--format", "dpo", "--pairs", "all"], "unknown --pairs 'all'"),
        (["--format", "sft", "--samples", "0"], "at least 1"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    teacher: ScriptedChatModel,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    prepared_novel(tmp_path)
    out = tmp_path / "x.jsonl"
    assert _export(tmp_path, out, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and teacher.calls == []


def test_out_folder_and_missing_probes_are_one_line_errors(
    tmp_path: Path, teacher: ScriptedChatModel, capsys: pytest.CaptureFixture[str]
) -> None:
    novel = prepared_novel(tmp_path)
    assert _export(tmp_path, tmp_path, "--format", "dpo") == 2
    assert "is a folder" in capsys.readouterr().err
    (novel.folder / "probes.jsonl").unlink()
    assert _export(tmp_path, tmp_path / "d.jsonl", "--format", "dpo") == 2
    assert "personae arcane build-probes the_river" in capsys.readouterr().err
