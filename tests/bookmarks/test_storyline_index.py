"""The storyline index: keyword positions inside [start, end) only, merged context windows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from personae.memory.bookmarks.storyline import Storyline, load_storyline
from personae.tools.bookmarks.storyline_index import StorylineIndex, context_windows, index_for

ROWS = [
    ("Kyon", "Kyon walks up the hill to North High"),
    ("Haruhi", "Haruhi announces the SOS Brigade"),
    ("Kyon", "Kyon sighs at Haruhi's plan"),
    ("Yuki", "Yuki reads a thick book in the clubroom"),
    ("Haruhi", "Haruhi drags Mikuru-chan into the clubroom"),
    ("Other", "The computer society loses its computer to the sos brigade"),
    ("Kyon", "Kyon asks Yuki about the book"),
    ("Environment", "Snow falls on the brigade's clubroom"),
]


@pytest.fixture
def storyline(tmp_path: Path) -> Storyline:
    path = tmp_path / "tiny.jsonl"
    path.write_text("\n".join(json.dumps({"action": a, "character": c}) for c, a in ROWS))
    return load_storyline(path)


def _naive(storyline: Storyline, word: str, start: int, end: int) -> list[int]:
    return [a.position for a in storyline.before(end, start) if word in a.text.lower()]


def test_positions_are_case_insensitive_and_inside_the_window(storyline: Storyline) -> None:
    index = StorylineIndex(storyline)
    assert index.positions("haruhi") == [1, 2, 4]  # "Haruhi's" folds to haruhi
    assert index.positions("HARUHI", 2, 4) == [2]
    assert index.positions("clubroom", 0, 7) == [3, 4]  # 7 holds one too: not before end
    assert index.positions("clubroom", 5, 100) == [7]  # end is clipped to the storyline
    assert index.positions("Mikuru") == [4]
    assert index.positions("nobody") == [] and index.positions("yuki", 6, 3) == []
    for start, end in [(0, 8), (1, 5), (3, 4)]:
        assert index.positions("book", start, end) == _naive(storyline, "book", start, end)


def test_multi_word_keywords_need_the_phrase_and_aliases_union(storyline: Storyline) -> None:
    index = StorylineIndex(storyline)
    assert index.positions("SOS Brigade") == [1, 5]
    assert index.positions("brigade") == [1, 5, 7]
    assert index.positions("Brigade SOS") == []
    assert index.positions("the book") == [6]  # "a thick book" at 3 is not the phrase
    assert index.positions("Yuki", aliases=["Nagato", "book"]) == [3, 6]
    assert index.positions("SOS Brigade", 0, 5, aliases=["computer society"]) == [1]


def test_acting_characters_are_indexed_too(storyline: Storyline) -> None:
    assert StorylineIndex(storyline).positions("environment") == [7]


def test_context_windows_merge_and_never_reach_end() -> None:
    assert context_windows([20], end=100) == [(12, 29)]
    assert context_windows([3, 10, 40], radius=8, end=100) == [(0, 19), (32, 49)]
    assert context_windows([10, 27], radius=8, end=100) == [(2, 36)]  # touching windows merge
    assert context_windows([95, 99], radius=8, end=99) == [(87, 99)]  # hit at 99 >= end dropped
    assert context_windows([], end=10) == []


def test_index_is_built_once_per_storyline(storyline: Storyline) -> None:
    assert index_for(storyline) is index_for(storyline)
    assert index_for(storyline).context_windows([6], radius=2, end=7) == [(4, 7)]


def test_real_storyline_matches_a_linear_scan(shared_dir: Path) -> None:
    haruhi = load_storyline(shared_dir / "data/bookmarks/title2action_series.haruhi.json")
    index = index_for(haruhi)
    assert len(index) == 991
    for word in ["yuki", "baseball", "kyon"]:
        naive = [
            a.position
            for a in haruhi.before(600, 100)
            if word in {t.strip(".,!?\"'").lower().removesuffix("'s") for t in a.text.split()}
            or word in {c.lower() for c in a.characters}
        ]
        assert index.positions(word, 100, 600) == naive
