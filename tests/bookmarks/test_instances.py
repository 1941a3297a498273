from __future__ import annotations

import json
from pathlib import Path

import pytest
from bookmarks_bench_world import true_action, write_storyline

from personae.errors import InputError
from personae.evals.bookmarks.instances import (
    benchmarked_characters,
    build_instances,
    instances_for,
)
from personae.memory.bookmarks.storyline import load_storyline


def test_second_half_of_each_character_in_story_order(tmp_path: Path) -> None:
    story = load_storyline(write_storyline(tmp_path / "tiny.jsonl"))
    assert benchmarked_characters(story) == ["Alice", "Bob"]  # from all_characters.json
    alice = instances_for(story, "Alice")
    assert [i.position for i in alice] == [21, 24, 27, 30, 33, 36, 39]
    bob = instances_for(story, "Bob")
    assert [i.position for i in bob] == [19, 22, 25, 28, 31, 34, 37]  # 13 actions: 6 history
    first = alice[0]
    assert first.truth == true_action(21) and first.artifact == "tiny"
    assert first.chapter == "chapter 2" and alice[-1].chapter == "chapter 2"
    assert [i.chapter for i in instances_for(story, "Bob")][:1] == ["chapter 1"]
    assert [a.position for a in first.scene] == list(range(11, 21))
    assert all(a.position < first.position for a in first.scene)


def test_limit_and_character_filter(tmp_path: Path) -> None:
    story = load_storyline(write_storyline(tmp_path / "tiny.jsonl"))
    chosen = build_instances([story], characters=["Bob"], limit=2)
    assert list(chosen) == ["tiny"]
    assert [(i.character, i.position) for i in chosen["tiny"]] == [("Bob", 19), ("Bob", 22)]
    every = build_instances([story])["tiny"]
    assert [i.position for i in every] == sorted(i.position for i in every)  # one story order
    assert [i.character for i in every][:3] == ["Bob", "Alice", "Bob"]
    assert {n: sum(i.character == n for i in every) for n in ("Alice", "Bob")} == {
        "Alice": 7,
        "Bob": 7,
    }


def test_a_name_in_one_of_two_storylines_runs_there_only(tmp_path: Path) -> None:
    tiny = load_storyline(write_storyline(tmp_path / "tiny.jsonl"))
    rows = [{"action": f"Carol {i}", "character": "Carol"} for i in range(4)]
    other = load_storyline(write_storyline(tmp_path / "other.jsonl", rows))
    chosen = build_instances([tiny, other], characters=["Carol"])
    assert list(chosen) == ["other"]
    assert [i.position for i in chosen["other"]] == [2, 3]


@pytest.mark.parametrize("name", ["Zed", "Other", "Environment"])
def test_unknown_character_is_a_clear_error(tmp_path: Path, name: str) -> None:
    story = load_storyline(write_storyline(tmp_path / "tiny.jsonl"))
    with pytest.raises(
        InputError, match=rf"unknown character '{name}' in tiny; pick one of: Alice, Bob"
    ):
        build_instances([story], characters=[name])


def test_limit_below_one_is_rejected(tmp_path: Path) -> None:
    story = load_storyline(write_storyline(tmp_path / "tiny.jsonl"))
    with pytest.raises(InputError, match="--limit must be at least 1"):
        instances_for(story, "Alice", limit=0)


def test_majors_from_all_characters_json(tmp_path: Path) -> None:
    path = write_storyline(tmp_path / "title2action_series.tiny.json", [])
    path.write_text(
        json.dumps(
            {
                "ch1": [
                    {"action": r["action"], "character": r["character"]}
                    for r in [{"action": f"x{i}", "character": "AB"[i % 2]} for i in range(6)]
                ]
            }
        )
    )
    (tmp_path / "all_characters.json").write_text(json.dumps({"tiny": {"major": ["B", "Ghost"]}}))
    story = load_storyline(path)
    assert benchmarked_characters(story) == ["B"]  # majors that act; "Ghost" never does


def test_haruhi_instances(shared_dir: Path) -> None:
    story = load_storyline(shared_dir / "data/bookmarks/title2action_series.haruhi.json")
    assert len(story) == 991 and len(story.chapters) == 28
    assert benchmarked_characters(story) == ["Haruhi", "Kyon", "Nagato", "Koizumi", "Asahina"]
    assert story.acting_format == "action"
    chosen = build_instances([story])["haruhi"]
    assert len(chosen) == 392 and all(i.acting_format == "action" for i in chosen)
    for name in benchmarked_characters(story):
        mine = story.positions_of(name)
        ours = [i.position for i in chosen if i.character == name]
        assert ours == list(mine[len(mine) // 2 :])  # haruhi has no multi-speaker test line


@pytest.mark.parametrize(
    ("artifact", "total"), [("Roselia", 439), ("Poppin'Party", 541), ("Afterglow", None)]
)
def test_bandori_instances_as_the_released_runner(
    shared_dir: Path, artifact: str, total: int | None
) -> None:
    story = load_storyline(shared_dir / f"data/bookmarks/title2action_series.{artifact}.json")
    assert story.acting_format == "utterance"  # listed in band2members.json
    chosen = build_instances([story])[artifact]
    cast = set(story.major_characters)
    released = sorted(
        (p, c)
        for p in {p for n in cast for p in story.test_split(n)[1]}
        for c in story.actions[p].characters
        if c in cast
    )
    assert sorted((i.position, i.character) for i in chosen) == released
    if total is not None:
        assert len(chosen) == total
    if artifact == "Poppin'Party":  # the paper's Table 3 characters, 541 instances
        counts = {n: sum(i.character == n for i in chosen) for n in cast}
        assert counts == {"Kasumi": 167, "Arisa": 116, "Rimi": 81, "Tae": 89, "Saaya": 88}
