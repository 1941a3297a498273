"""Cached graph resources and the persisted list of questions answered "unknown"."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookmarks_world import write_storyline

from personae.errors import InputError
from personae.graphs.bookmark_resources import (
    UNKNOWN_LIMIT,
    UnknownQuestions,
    forget_resources,
    resources_for,
)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    yield
    forget_resources()


def test_resources_are_opened_once_per_memory_dir_and_file_version(tmp_path: Path) -> None:
    story = write_storyline(tmp_path / "club.jsonl")
    first = resources_for(str(story), str(tmp_path / "mem"))
    assert resources_for(str(story), str(tmp_path / "mem")) is first
    assert resources_for(str(story), str(tmp_path / "other")) is not first
    assert first.index.storyline is first.storyline and len(first.storyline) == 160
    write_storyline(story, size=80)
    stat = story.stat()
    os.utime(story, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    changed = resources_for(str(story), str(tmp_path / "mem"))
    assert changed is not first and len(changed.storyline) == 80
    with pytest.raises(InputError, match="does not exist"):
        resources_for(str(tmp_path / "nope.json"), None)


def test_unknown_questions_persist_and_skip_near_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "unknown.json"
    unknown = UnknownQuestions.load(path)
    assert unknown.record("Kyon", "Where is Kyon now?")
    assert not unknown.record("Kyon", "where is kyon")
    assert unknown.record("Haruhi", "Where is Kyon now?")
    reread = UnknownQuestions.load(path)
    assert reread.questions("Kyon") == ["Where is Kyon now?"]
    assert json.loads(path.read_text()) == {
        "Kyon": ["Where is Kyon now?"],
        "Haruhi": ["Where is Kyon now?"],
    }
    for number in range(UNKNOWN_LIMIT + 5):
        reread.record("Kyon", f"What happened on day {number}?")
    assert len(reread.questions("Kyon")) == UNKNOWN_LIMIT
    assert reread.questions("Kyon")[-1] == f"What happened on day {UNKNOWN_LIMIT + 4}?"


def test_a_damaged_unknown_file_starts_empty_and_memory_only_needs_no_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "unknown.json"
    path.write_text("{broken", encoding="utf-8")
    assert UnknownQuestions.load(path).questions("Kyon") == []
    in_memory = UnknownQuestions.load(None)
    assert in_memory.record("Kyon", "Where is Kyon?") and in_memory.questions("Kyon")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unknown.json"]
