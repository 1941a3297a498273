"""profile.json / profile.md / card.json written atomically, with stable slugs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from personae.errors import InputError
from personae.memory.characterhub.character_card import card_problems
from personae.memory.characterhub.character_list import CharacterRow
from personae.memory.characterhub.dedup import deduplicate
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.memory.characterhub.profile_store import profile_key, slugify, write_profile

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


def test_folder_names_the_franchise_and_ignores_case_and_punctuation(tmp_path: Path) -> None:
    assert profile_key("Kenshiro", "Fist of the North Star") == "kenshiro--fist-of-the-north-star"
    assert profile_key("KENSHIRO!", "Fist of the North Star") == profile_key(
        "Kenshiro", "Fist of the North Star"
    )
    assert profile_key("Kenshiro", "Souten no Ken") != profile_key(
        "Kenshiro", "Fist of the North Star"
    )
    assert profile_key("Kenshiro", None) == profile_key("Kenshiro", "  ") == "kenshiro"
    first = write_profile(tmp_path, RESULT)  # the resolved name and franchise
    other = write_profile(tmp_path, {**RESULT, "franchise": "Souten no Ken"})
    assert first.directory.name == "kenshiro--fist-of-the-north-star"
    assert other.directory.name == "kenshiro--souten-no-ken"
    assert first.profile_json.exists() and other.profile_json.exists()


def test_rows_with_one_folder_key_are_duplicates_however_their_names_compare() -> None:
    rows = [CharacterRow("Rei", "Eva"), CharacterRow("REI!!!", "Eva"), CharacterRow("Rei", "Other")]
    kept, dropped = deduplicate(rows, key=lambda r: profile_key(r.name, r.franchise))
    assert kept == [rows[0], rows[2]] and dropped == [(rows[1], rows[0])]
    # By the paper's name similarity alone they are three characters.
    assert deduplicate(rows, rule="paper")[0] == rows


def test_hostile_titles_and_urls_stay_literal_in_profile_md(tmp_path: Path) -> None:
    source = {
        **RESULT["sources"][0],
        "title": "Toki](javascript:alert(1)) <img src=x onerror=alert(2)>\n# Owned",
        "url": "https://w/wiki/A (b) <c>",
    }
    paths = write_profile(tmp_path, {**RESULT, "name": "Kenshiro <b>", "sources": [source]})
    markdown = paths.profile_md.read_text(encoding="utf-8")
    line = next(x for x in markdown.splitlines() if x.startswith("- **S1**"))
    assert line == (
        r"- **S1** [Toki\]\(javascript:alert\(1\)\) \<img src=x onerror=alert\(2\)\> \# Owned]"
        "(https://w/wiki/A%20%28b%29%20%3Cc%3E)"
    )
    assert markdown.startswith(r"# Kenshiro \<b\> (Fist of the North Star)")
    assert "\n# Owned" not in markdown
