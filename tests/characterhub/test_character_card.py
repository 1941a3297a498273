"""Character Card V3 built from a profile: required V3/V2 fields, V1 mirror, lorebook, validator."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from personae.memory.characterhub.character_card import (
    DATA_LISTS,
    DATA_STRINGS,
    GREETING_CHARS,
    build_card,
    card_problems,
    first_greeting,
    lore_keys,
)

DOCUMENT: dict[str, Any] = {
    "character": "Kenshiro",
    "franchise": "Fist of the North Star",
    "profile": "I am Kenshiro, successor of Hokuto Shinken. I protect the weak.",
    "canon": "original manga",
    "dimensions": {
        "identity": [{"text": "I am the 64th successor of Hokuto Shinken.", "source_ids": ["S1"]}],
        "personality": [{"text": "I am stoic but kind.", "source_ids": ["S2"]}],
        "relationship": [{"text": "Raoh is my eldest brother.", "source_ids": ["S1", "S3"]}],
    },
    "sources": [{"id": "S1", "url": "https://hokuto.example/wiki/Kenshiro", "title": "Kenshiro"}],
}


def test_card_has_every_required_v3_field_and_v1_mirror() -> None:
    card = build_card(DOCUMENT)
    assert card_problems(card) == []
    assert card["spec"] == "chara_card_v3" and card["spec_version"] == "3.0"
    data = card["data"]
    assert set(DATA_STRINGS) | set(DATA_LISTS) | {"extensions"} <= set(data)
    for field in ("name", "description", "personality", "scenario", "first_mes", "mes_example"):
        assert card[field] == data[field]  # V1-era importers read the top level
    assert data["description"] == DOCUMENT["profile"]
    assert data["first_mes"] == "I am Kenshiro, successor of Hokuto Shinken."
    assert data["personality"] == "I am stoic but kind."
    assert data["system_prompt"] == ""  # empty unless asked
    assert "original manga" in build_card(DOCUMENT, system_prompt=True)["data"]["system_prompt"]
    assert "Fist of the North Star" in data["tags"]


def test_lorebook_has_one_entry_per_fact_with_keys_and_sources() -> None:
    entries = build_card(DOCUMENT)["data"]["character_book"]["entries"]
    assert [e["content"] for e in entries] == [
        "I am the 64th successor of Hokuto Shinken.",
        "I am stoic but kind.",
        "Raoh is my eldest brother.",
    ]
    assert [e["insertion_order"] for e in entries] == [0, 1, 2]
    assert entries[0]["constant"] is True and entries[2]["constant"] is False
    assert entries[2]["keys"] == ["Raoh"]
    assert entries[0]["keys"] == ["Hokuto Shinken"]
    assert entries[1]["keys"] == ["Kenshiro"]  # "I" is too short to be a key: the name stands in
    assert entries[2]["extensions"]["personae"]["source_ids"] == ["S1", "S3"]
    assert all(e["enabled"] and e["use_regex"] is False for e in entries)


def test_validator_names_each_problem() -> None:
    card = copy.deepcopy(build_card(DOCUMENT))
    card["spec_version"] = "2.0"
    del card["data"]["creator_notes"]
    card["data"]["tags"] = "manga"
    card["data"]["character_book"]["entries"][0]["keys"] = "Kenshiro"
    del card["data"]["character_book"]["entries"][1]["use_regex"]
    assert card_problems(card) == [
        "spec must be chara_card_v3 version 3.0",
        "data.creator_notes must be a string",
        "data.tags must be a list of strings",
        "entries[0].keys must be a list of strings",
        "entries[1].use_regex must be bool",
    ]
    assert card_problems([]) == ["the card is not a JSON object"]


def test_source_urls_and_dates_fill_the_v3_fields() -> None:
    document = {
        **DOCUMENT,
        "sources": [
            {"id": "S1", "url": "https://hokuto.example/wiki/Kenshiro#History", "title": "K"},
            {"id": "S2", "url": "https://hokuto.example/wiki/Kenshiro", "title": "K"},
            {"id": "S3", "url": "https://example.org/bio", "title": "Bio"},
        ],
    }
    data = build_card(document, created=1_700_000_000, modified=1_700_000_500)["data"]
    assert data["source"] == ["https://hokuto.example/wiki/Kenshiro", "https://example.org/bio"]
    assert (data["creation_date"], data["modification_date"]) == (1_700_000_000, 1_700_000_500)
    assert data["creator_notes"].count("hokuto.example") == 1  # one page, one source


@pytest.mark.parametrize(
    ("profile", "greeting"),
    [
        ('I said, "I am Kenshiro." Then I left. ' * 20, 'I said, "I am Kenshiro."'),
        ("I am Toki.\n\nI heal.", "I am Toki."),
        ("word " * 200, ("word " * 200)[:GREETING_CHARS].rsplit(" ", 1)[0] + "…"),
    ],
)
def test_the_first_greeting_is_one_sentence_never_the_whole_profile(
    profile: str, greeting: str
) -> None:
    assert first_greeting(profile) == greeting
    assert len(first_greeting(profile)) <= GREETING_CHARS + 1


@pytest.mark.parametrize(
    ("fact", "keys"),
    [
        ("During the war, Raoh fought Kenshiro.", ["Raoh"]),
        ("His brother Raoh is the King of Fist.", ["Raoh", "King of Fist"]),
        ("After training at the Hokuto Shinken temple, I met Yuria.", ["Hokuto Shinken", "Yuria"]),
        ("Kenshiro's rival is Monkey D. Luffy.", ["Monkey D. Luffy"]),
        ("However, I never lost.", ["Kenshiro"]),
    ],
)
def test_lorebook_keys_are_names_never_capitalised_function_words(
    fact: str, keys: list[str]
) -> None:
    assert lore_keys(fact, "Kenshiro") == keys
