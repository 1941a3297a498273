"""profile.json / profile.md / card.json written atomically, with stable slugs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from personae.agents.query_planner import DIMENSIONS
from personae.errors import InputError
from personae.memory.character_card import card_problems
from personae.memory.profile_store import slugify, write_profile

RESULT: dict[str, Any] = {
    "name": "Kenshiro",
    "franchise": "Fist of the North Star",
    "profile": "I am Kenshiro.",
    "canon": "manga",
    "conflicts": ["Anime differs; kept the manga."],
    "dimensions": {"identity": [{"text": "I am the successor.", "source_ids": ["S1"]}]},
    "sources": [
        {
            "id": "S1",
            "url": "https://w/wiki/Kenshiro",
            "title": "Kenshiro",
            "origin": "wiki",
            "content": "long passage",
            "round": 1,
        }
    ],
    "rounds": [
        {
            "round": 1,
            "queries": ["Kenshiro identity"],
            "results": 1,
            "new_source_ids": ["S1"],
            "source_ids": ["S1"],
            "notes": [],
        }
    ],
    "reflections": [{"round": 1, "coverage": {"identity": 0.8}, "follow_ups": []}],
    "usage": {"llm_calls": 4, "searches": 14},
    "stop_reason": "coverage_reached",
    "notices": [],
    "wiki_page": "https://w/wiki/Kenshiro",
}


@pytest.mark.parametrize(
    ("name", "slug"),
    [("Kenshiro", "kenshiro"), ("Kenshirō", "kenshiro"), ("Roronoa Zoro!", "roronoa-zoro")],
)
def test_slug(name: str, slug: str) -> None:
    assert slugify(name) == slug


def test_non_latin_names_get_a_stable_hash_slug_and_empty_is_refused() -> None:
    assert slugify("ケンシロウ") == slugify("ケンシロウ") != slugify("ラオウ")
    assert slugify("ケンシロウ").startswith("character-")
    with pytest.raises(InputError, match="name is empty"):
        slugify("  ")


def test_writes_three_files_with_profile_json_fields(tmp_path: Path) -> None:
    paths = write_profile(tmp_path, RESULT, name="Kenshirō")
    assert paths.directory == tmp_path / "kenshiro"
    document = json.loads(paths.profile_json.read_text(encoding="utf-8"))
    assert document["character"] == "Kenshiro"
    assert document["sources"] == [
        {
            "id": "S1",
            "url": "https://w/wiki/Kenshiro",
            "title": "Kenshiro",
            "origin": "wiki",
            "content": "long passage",
        }
    ]
    assert list(document["dimensions"]) == list(DIMENSIONS)
    assert document["rounds"][0]["coverage"] == {"identity": 0.8}
    assert document["rounds"][0]["queries"] == ["Kenshiro identity"]
    assert document["usage"] == {"llm_calls": 4, "searches": 14}
    assert card_problems(json.loads(paths.card_json.read_text(encoding="utf-8"))) == []
    markdown = paths.profile_md.read_text(encoding="utf-8")
    assert "- I am the successor. [S1]" in markdown and "**S1** [Kenshiro]" in markdown
    assert sorted(p.name for p in paths.directory.iterdir()) == [
        "card.json",
        "profile.json",
        "profile.md",
    ]


def test_a_broken_result_writes_nothing(tmp_path: Path) -> None:
    broken = {k: v for k, v in RESULT.items() if k != "profile"}
    with pytest.raises(KeyError):
        write_profile(tmp_path, broken)
    assert list(tmp_path.iterdir()) == []
