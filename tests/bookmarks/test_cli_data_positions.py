"""`personae bookmarks positions`: where a character acts, the history / test split marked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bookmarks_world import write_storyline

from personae.cli import main


def test_lists_positions_with_the_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    assert main(["bookmarks", "positions", str(story), "--character", "Haruhi"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # Haruhi takes every fourth action, except where an Other takes every fifth.
    assert lines[0] == "Haruhi in club: 32 of 160 actions; history 16, test 16, from 80"
    assert lines[1] == "  0  history  Chapter 1: Haruhi talks to Kyon about the club in scene 0."
    assert lines[17] == " 80  test     Chapter 3: Haruhi talks to Kyon about the club in scene 80."
    assert len(lines) == 33


def test_test_positions_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    assert (
        main(["bookmarks", "positions", str(story), "--character", "Kyon", "--test", "--json"]) == 0
    )
    payload = json.loads(capsys.readouterr().out)
    assert (payload["character"], payload["history"], payload["test"]) == ("Kyon", 16, 16)
    assert {row["split"] for row in payload["positions"]} == {"test"}
    assert len(payload["positions"]) == 16


def test_unknown_character_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    assert main(["bookmarks", "positions", str(story), "--character", "Tsuruya"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("personae: error: unknown character 'Tsuruya' in club; pick one of:")
