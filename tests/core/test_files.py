"""Atomic writes: whole files or nothing, with the mode a plain open() would give; JSONL records."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import pytest
from source_tree import walked

from personae.files import append_jsonl, read_jsonl, write_json_atomic, write_text_atomic


def test_written_file_is_readable_like_a_plain_open(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    target = tmp_path / "out" / "profile.json"
    write_json_atomic(target, {"character": "Kenshiro"})
    assert target.read_text(encoding="utf-8") == '{\n  "character": "Kenshiro"\n}\n'
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_written_file_follows_the_umask_in_force_when_writing(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "card.json", "{}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "card.json").stat().st_mode) == 0o640


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "profile.md"
    write_text_atomic(target, "old")

    with pytest.raises(TypeError):
        write_text_atomic(target, 42)  # type: ignore[arg-type]
    assert target.read_text(encoding="utf-8") == "old"
    assert os.listdir(tmp_path) == ["profile.md"]


def test_read_jsonl_keeps_whole_records_and_skips_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    assert read_jsonl(path) == []  # no file yet: nothing done
    append_jsonl(path, {"id": 1})
    append_jsonl(path, {"id": 2})
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"id": 3, "ans')  # a kill mid-write
    assert read_jsonl(path) == [{"id": 1}, {"id": 2}]
    with path.open("a", encoding="utf-8") as handle:
        handle.write('\n[1, 2]\n"text"\n')  # not records
    append_jsonl(path, {"id": 4})
    assert [row["id"] for row in read_jsonl(path)] == [1, 2, 4]


def test_a_record_appended_after_a_torn_line_starts_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "summaries.jsonl"
    append_jsonl(path, {"chapter": 1})
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"chapter": 2, "summ')  # a kill mid-write: no newline at the end
    append_jsonl(path, {"chapter": 2})  # the rerun redoes it
    assert read_jsonl(path) == [{"chapter": 1}, {"chapter": 2}]
    assert path.read_text(encoding="utf-8").endswith('\n{"chapter": 2}\n')


def test_appenders_side_by_side_write_every_record_on_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    """Threads appending at once (an evaluation's concurrent units): no blank or glued line.

    Before appenders took turns, about one line in five came out blank here: a torn-end check
    made mid-way through another thread's write started an extra line.
    """
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "results.jsonl"
    pad = "x" * 200_000  # long lines: a write takes long enough to be caught half-copied

    def append(worker: int) -> None:
        for n in range(20):
            append_jsonl(path, {"worker": worker, "n": n, "pad": pad})

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(append, range(6)))
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and "" not in lines[:-1]
    assert sorted((r["worker"], r["n"]) for r in read_jsonl(path)) == [
        (w, n) for w in range(6) for n in range(20)
    ]


def _json_line_readers() -> list[str]:
    """Functions outside personae/files.py that split text into lines and parse JSON."""
    root = Path(__file__).resolve().parents[2]
    found = []
    for folder in ("agents", "tools", "memory", "graphs", "evals", "personae"):
        for path in (root / folder).rglob("*.py"):
            if path == root / "personae" / "files.py":
                continue
            for node in walked(path):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                called = {
                    call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
                    for call in ast.walk(node)
                    if isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute | ast.Name)
                }
                names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                if "splitlines" in called and {"loads", "parse_json"} & (called | names):
                    found.append(f"{path.relative_to(root)}: {node.name}")
    return found


def test_every_jsonl_file_is_read_through_personae_files() -> None:
    """One reader decides what a torn or bad line means: no private json-over-lines loop."""
    assert _json_line_readers() == []
