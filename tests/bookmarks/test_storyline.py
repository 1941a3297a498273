from __future__ import annotations

import json
from pathlib import Path

import pytest

from personae.errors import InputError
from personae.memory.bookmarks.storyline import artifact_name, load_storyline


def test_haruhi_counts(shared_dir: Path) -> None:
    story = load_storyline(shared_dir / "data/bookmarks/title2action_series.haruhi.json")
    assert story.name == "haruhi"
    assert len(story) == 991
    assert len(story.chapters) == 28
    assert story.major_characters == ("Haruhi", "Kyon", "Nagato", "Koizumi", "Asahina")
    history, test = story.test_split("Kyon")
    kyon = story.positions_of("Kyon")
    assert history + test == kyon and len(history) == len(kyon) // 2
    assert max(history) < min(test)


def test_band_file_names_with_special_characters(shared_dir: Path) -> None:
    path = shared_dir / "data/bookmarks/title2action_series.Poppin'Party.json"
    story = load_storyline(path)
    assert artifact_name(path) == "Poppin'Party"
    assert len(story) == 1226
    assert "Kasumi" in story.major_characters
    assert story.actions[1].characters  # bands use the 'characters' list form


def test_scene_is_the_ten_actions_before(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps({"action": f"a{i}", "character": "A"}) for i in range(30)))
    story = load_storyline(path)
    scene = story.scene(25)
    assert [a.position for a in scene] == list(range(15, 25))
    assert [a.position for a in story.scene(3)] == [0, 1, 2]


def test_bad_inputs_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_storyline(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"ch": [')
    with pytest.raises(InputError, match="not valid JSON"):
        load_storyline(broken)
    ok = tmp_path / "ok.jsonl"
    ok.write_text(json.dumps({"action": "x", "character": "A"}))
    story = load_storyline(ok)
    with pytest.raises(InputError, match="unknown character 'Zed'"):
        story.check_character("Zed")
    with pytest.raises(InputError, match="out of range"):
        story.scene(5)
