"""Persona documents: Markdown hierarchy and the importers on real shared data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from personae.errors import InputError
from personae.memory.amadeus.persona_doc import parse_markdown
from personae.tools.amadeus.persona_import import load_persona_file, persona_from_profile

MARKDOWN = """# Frieren

Intro line about the elf.

## Activities

### The journey to find Aureole

#### The First-Class Mage Exam

She passed the exam.

Second paragraph.

## Beliefs

Magic is to be enjoyed.
"""


def test_markdown_headings_become_the_section_hierarchy() -> None:
    doc = parse_markdown(MARKDOWN, "Frieren")
    assert [s.path for s in doc.sections] == [
        (),
        ("Activities", "The journey to find Aureole", "The First-Class Mage Exam"),
        ("Beliefs",),
    ]
    assert doc.sections[1].paragraphs == ("She passed the exam.", "Second paragraph.")
    again = parse_markdown(doc.to_markdown(), "Frieren")
    assert again.sections == doc.sections and again.sha256 == doc.sha256


def test_wiki_page_keeps_the_page_section_tree(shared_dir: Path) -> None:
    doc = load_persona_file(str(shared_dir / "fixtures/wiki/hokuto_toki_2020.html"), None)
    titles = [s.title for s in doc.sections]
    assert doc.character == "Toki" and doc.source_kind == "wiki"
    for expected in ("Infobox", "History > Early Life", "History > Nuclear War", "Fighting Style"):
        assert expected in titles
    infobox = doc.sections[titles.index("Infobox")].paragraphs
    assert any(line.startswith("Gender:") or ":" in line for line in infobox)


def test_coser_character_becomes_profile_activity_and_motivations(shared_dir: Path) -> None:
    doc = load_persona_file(str(shared_dir / "data/coser/final/Othello.json"), "iago")
    assert doc.character == "Iago" and doc.source_kind == "coser"
    titles = [s.title for s in doc.sections]
    assert titles[0] == "Profile"
    assert "Activity > Act I, Scene 1" in titles and "Motivations > Act I, Scene 2" in titles
    assert not any("None" in t for t in titles)
    with pytest.raises(InputError, match="Desdemona"):
        load_persona_file(str(shared_dir / "data/coser/final/Othello.json"), "Nobody")


def test_profile_json_prose_and_dimensions_become_sections(tmp_path: Path) -> None:
    profile = {
        "character": "Kenshiro",
        "profile": "I am Kenshiro.\n\nI protect the weak.",
        "canon": "",
        "dimensions": {
            "identity": [{"text": "I am the 64th successor of Hokuto Shinken.", "source_ids": []}],
            "ability": [],
        },
    }
    doc = persona_from_profile(profile, source="p.json")
    assert [s.path for s in doc.sections] == [("Profile",), ("Identity",)]
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    assert load_persona_file(str(path), None).sections == doc.sections
    with pytest.raises(InputError, match="not a Personae profile.json"):
        persona_from_profile({"name": "x"}, source="bad.json")
