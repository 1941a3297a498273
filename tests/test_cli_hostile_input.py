"""Hostile input files through the CLI: one line naming the file and the fix, exit 2, no traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_errors import assert_one_line_error

from personae.cli import main
from personae.evals.bookmarks.bench import read_results
from personae.memory.bookmarks.storyline import load_storyline

DEEP = "[" * 100_000 + "]" * 100_000
STORY = {"Chapter 1": [{"action": "Kyon sighs.", "character": "Kyon"}]}


def latin1_batch(folder: Path) -> list[str]:
    path = folder / "chars.csv"
    path.write_bytes("name,franchise\nPokémon Trainer,Pokémon\n".encode("latin-1"))
    return ["profile", "--batch", str(path)]


def utf16_storyline(folder: Path) -> list[str]:
    path = folder / "title2action_series.haruhi.json"
    path.write_bytes(json.dumps(STORY).encode("utf-16"))
    return ["bookmarks", "act", str(path), "--character", "Kyon", "--at", "1"]


def deep_storyline(folder: Path) -> list[str]:
    path = folder / "story.json"
    path.write_text(DEEP, encoding="utf-8")
    return ["bookmarks", "act", str(path), "--character", "Kyon", "--at", "1"]


def infinite_jsonl_storyline(folder: Path) -> list[str]:
    path = folder / "story.jsonl"
    path.write_text('{"action": "Kyon sighs.", "character": "Kyon", "x": 1e309}\n')
    return ["bookmarks", "act", str(path), "--character", "Kyon", "--at", "1"]


def deep_profile(folder: Path) -> list[str]:
    path = folder / "profile.json"
    path.write_text(DEEP, encoding="utf-8")
    return ["characterhub", "eval", str(path), "--reference", str(path)]


def latin1_reference(folder: Path) -> list[str]:
    path = folder / "toki.html"
    path.write_bytes("<p>Toki est né à Hokuto.</p>".encode("latin-1"))
    return ["characterhub", "eval", str(path), "--reference", str(path)]


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (latin1_batch, r"chars.csv is not UTF-8 text \(byte 0xe9 at offset 18\)"),
        (utf16_storyline, r"haruhi.json is not UTF-8 text \(byte 0xff at offset 0\)"),
        (deep_storyline, r"story.json is not valid JSON \(nested too deeply\)"),
        (infinite_jsonl_storyline, r"story.jsonl:1 is not valid JSON \(the number 1e309 is out"),
        (deep_profile, r"profile.json is not valid JSON \(nested too deeply\)"),
        (latin1_reference, r"toki.html is not UTF-8 text"),
    ],
)
def test_bad_files_give_one_line_and_exit_2(
    make: Callable[[Path], list[str]],
    problem: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached
    assert main(make(tmp_path)) == 2
    assert_one_line_error(capsys.readouterr().err, problem)


def test_storylines_with_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    release = tmp_path / "title2action_series.haruhi.json"
    release.write_bytes(b"\xef\xbb\xbf" + json.dumps(STORY).encode())
    lines = tmp_path / "story.jsonl"
    lines.write_bytes(
        b'\xef\xbb\xbf{"action": "Kyon sighs.", "character": "Kyon"}\n'
        b'{"action": "Haruhi shouts.", "character": "Haruhi"}\n'
    )
    assert [a.text for a in load_storyline(release).actions] == ["Kyon sighs."]
    assert [a.characters for a in load_storyline(lines).actions] == [("Kyon",), ("Haruhi",)]


def test_a_result_line_holding_1e309_is_ignored_and_reported(tmp_path: Path) -> None:
    good = {"artifact": "a", "method": "m", "character": "c", "position": 1, "judge": "exact"}
    results = tmp_path / "results.jsonl"
    infinite = {**good, "position": 2, "score": 1}
    results.write_text(
        json.dumps(good)
        + "\n"
        + json.dumps(infinite).replace('"score": 1', '"score": 1e309')
        + "\n"
        + json.dumps({**good, "position": "1e309"}).replace('"1e309"', "1e309")
        + "\n"
    )
    records, notes = read_results(results)
    assert records == [good]  # the two lines rerun rather than poison the averages
    assert notes == [
        f"{results}:2 is not a valid result line; ignored it",
        f"{results}:3 is not a valid result line; ignored it",
    ]
