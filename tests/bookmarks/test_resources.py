"""Cached graph resources and the persisted list of questions answered "unknown"."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookmarks_world import write_storyline

from personae.errors import InputError
from personae.graphs.bookmarks.resources import (
    UNKNOWN_LIMIT,
    UnknownQuestions,
    forget_resources,
    resources_for,
)
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import BookmarkType


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


def test_the_bank_and_unknown_list_belong_to_the_storyline_text(tmp_path: Path) -> None:
    memory = tmp_path / "mem"
    story = write_storyline(tmp_path / "club.jsonl")
    first = resources_for(str(story), str(memory))
    first.bank.create(question="Where is Kyon?", type=BookmarkType.STATE, character="Kyon")
    assert first.unknown.record("Kyon", "Who is the club president?", 40)
    assert first.storyline.scope.startswith("club.")
    forget_resources()
    (tmp_path / "elsewhere").mkdir()
    copy = write_storyline(tmp_path / "elsewhere" / "club.jsonl")
    same_text = resources_for(str(copy), str(memory))
    assert [b.question for b in same_text.bank.all()] == ["Where is Kyon?"]
    assert same_text.unknown.questions("Kyon") == ["Who is the club president?"]
    forget_resources()
    stat = story.stat()
    story.write_text(story.read_text().replace("scene 7.", "scene seven."), encoding="utf-8")
    os.utime(story, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    corrected = resources_for(str(story), str(memory))
    assert corrected.storyline.scope != first.storyline.scope
    assert len(corrected.bank) == 0 and corrected.unknown.questions("Kyon") == []
    assert len(resources_for(str(copy), str(memory)).bank) == 1


def test_a_bank_from_before_scoping_is_left_alone(tmp_path: Path) -> None:
    memory = tmp_path / "mem"
    old = BookmarkBank.open("club", memory)
    old.create(question="Where is Kyon?", type=BookmarkType.STATE, character="Kyon")
    (memory / "unknown-club.json").write_text('{"Kyon": ["Who is it?"]}', encoding="utf-8")
    story = write_storyline(tmp_path / "club.jsonl")
    resources = resources_for(str(story), str(memory))
    assert len(resources.bank) == 0 and resources.unknown.questions("Kyon") == []
    assert len(BookmarkBank.open("club", memory)) == 1


def test_unknown_questions_persist_and_skip_near_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "unknown.json"
    unknown = UnknownQuestions.load(path)
    assert unknown.record("Kyon", "Where is Kyon now?", 30)
    assert not unknown.record("Kyon", "where is kyon", 35)
    assert unknown.record("Haruhi", "Where is Kyon now?", 12)
    reread = UnknownQuestions.load(path)
    assert reread.questions("Kyon") == ["Where is Kyon now?"]
    assert json.loads(path.read_text()) == {
        "Kyon": [{"question": "Where is Kyon now?", "position": 30}],
        "Haruhi": [{"question": "Where is Kyon now?", "position": 12}],
    }
    for number in range(UNKNOWN_LIMIT + 5):
        reread.record("Kyon", f"What happened on day {number}?", 40)
    assert len(reread.questions("Kyon")) == UNKNOWN_LIMIT
    assert reread.questions("Kyon")[-1] == f"What happened on day {UNKNOWN_LIMIT + 4}?"


def test_a_damaged_unknown_file_starts_empty_and_memory_only_needs_no_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "unknown.json"
    path.write_text("{broken", encoding="utf-8")
    assert UnknownQuestions.load(path).questions("Kyon") == []
    in_memory = UnknownQuestions.load(None)
    assert in_memory.record("Kyon", "Where is Kyon?", 3) and in_memory.questions("Kyon")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unknown.json"]


def test_an_unknown_question_is_hidden_from_targets_before_where_it_was_found(
    tmp_path: Path,
) -> None:
    path = tmp_path / "unknown.json"
    unknown = UnknownQuestions.load(path)
    assert unknown.record("Kyon", "Who is the club president?", 80)
    assert unknown.questions("Kyon", before=79) == []  # an earlier target must not learn it
    assert unknown.questions("Kyon", before=80) == ["Who is the club president?"]
    assert unknown.questions("Kyon", before=120) == ["Who is the club president?"]
    # found unknown again at an earlier target (an act run back in the story): the earlier wins
    assert unknown.record("Kyon", "Who is the club's president?", 50)
    assert UnknownQuestions.load(path).questions("Kyon", before=60) == [
        "Who is the club president?"
    ]
