"""Character Card V3 (SillyTavern, RisuAI) from a profile, with V2 fields and a lorebook.

The card is what users import into chat front-ends. V3 keeps every V2 ``data`` field, and we
also copy the V1 top-level fields (``name``, ``description``…) because older importers read only
those. Key facts become ``character_book`` entries that front-ends insert when their keys appear.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

CARD_SPEC = "chara_card_v3"
CARD_SPEC_VERSION = "3.0"

DATA_STRINGS = (
    "name",
    "description",
    "personality",
    "scenario",
    "first_mes",
    "mes_example",
    "creator_notes",
    "system_prompt",
    "post_history_instructions",
    "creator",
    "character_version",
)
"""``data`` fields the V3 spec requires as strings (all of them V2 fields too)."""
DATA_LISTS = ("alternate_greetings", "tags", "group_only_greetings")
"""``data`` fields the V3 spec requires as lists of strings."""
V1_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")
"""Top-level fields older (V1/V2-era) importers read."""

_PROPER_NOUN = re.compile(r"\b[A-Z][\w'-]{2,}\b")


def lore_keys(text: str, name: str) -> list[str]:
    """Trigger words of a fact: its proper nouns other than the character's own name."""
    own = {part.casefold() for part in name.split()}
    found = [w for w in _PROPER_NOUN.findall(text) if w.casefold() not in own]
    return list(dict.fromkeys(found))[:5] or [name]


def _facts(document: Mapping[str, Any], dimension: str) -> list[str]:
    return [str(f["text"]) for f in document.get("dimensions", {}).get(dimension, [])]


def lorebook(document: Mapping[str, Any]) -> dict[str, Any]:
    """One enabled entry per key fact; identity facts are constant (always inserted)."""
    name = str(document["character"])
    entries: list[dict[str, Any]] = []
    for dimension, facts in document.get("dimensions", {}).items():
        for fact in facts:
            order = len(entries)
            entries.append(
                {
                    "keys": lore_keys(str(fact["text"]), name),
                    "content": str(fact["text"]),
                    "extensions": {"personae": {"source_ids": list(fact["source_ids"])}},
                    "enabled": True,
                    "insertion_order": order,
                    "use_regex": False,
                    "constant": dimension == "identity",
                    "case_sensitive": False,
                    "id": order,
                    "name": f"{dimension} {order + 1}",
                    "comment": f"{dimension}; sources {', '.join(fact['source_ids'])}",
                    "position": "before_char",
                }
            )
    return {"name": f"{name} facts", "extensions": {}, "entries": entries}


def build_card(document: Mapping[str, Any]) -> dict[str, Any]:
    """The V3 card of a ``profile.json`` document (V2 ``data`` fields and V1 top level kept)."""
    name = str(document["character"])
    franchise = document.get("franchise") or ""
    profile = str(document.get("profile", ""))
    first_sentence = re.split(r"(?<=[.!?])\s", profile.strip(), maxsplit=1)[0]
    urls = ", ".join(str(s["url"]) for s in document.get("sources", [])[:10])
    data: dict[str, Any] = {
        "name": name,
        "description": profile,
        "personality": " ".join(_facts(document, "personality")),
        "scenario": f"{name} of {franchise}." if franchise else "",
        "first_mes": first_sentence,
        "mes_example": "",
        "creator_notes": f"Profiled by Personae from web and wiki sources: {urls}",
        "system_prompt": (
            f"You are {name}{f' from {franchise}' if franchise else ''}. Stay in character and "
            f"keep to one canon: {document.get('canon') or 'the original work'}."
        ),
        "post_history_instructions": "",
        "alternate_greetings": [],
        "group_only_greetings": [],
        "tags": [t for t in (franchise, "personae") if t],
        "creator": "Personae",
        "character_version": "1.0",
        "extensions": {"personae": {"canon": document.get("canon", "")}},
        "character_book": lorebook(document),
    }
    card: dict[str, Any] = {"spec": CARD_SPEC, "spec_version": CARD_SPEC_VERSION, "data": data}
    card.update({key: data[key] for key in V1_FIELDS})
    return card


def _entry_problems(index: int, entry: Any) -> list[str]:
    if not isinstance(entry, dict):
        return [f"character_book.entries[{index}] is not an object"]
    problems = []
    keys = entry.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        problems.append(f"entries[{index}].keys must be a list of strings")
    for field, kind in (("content", str), ("enabled", bool), ("use_regex", bool)):
        if not isinstance(entry.get(field), kind):
            problems.append(f"entries[{index}].{field} must be {kind.__name__}")
    if not isinstance(entry.get("insertion_order"), int):
        problems.append(f"entries[{index}].insertion_order must be int")
    if not isinstance(entry.get("extensions"), dict):
        problems.append(f"entries[{index}].extensions must be an object")
    return problems


def card_problems(card: Any) -> list[str]:
    """Everything that makes ``card`` an invalid V3 card (empty list: valid)."""
    if not isinstance(card, dict):
        return ["the card is not a JSON object"]
    problems = []
    if card.get("spec") != CARD_SPEC or card.get("spec_version") != CARD_SPEC_VERSION:
        problems.append(f"spec must be {CARD_SPEC} version {CARD_SPEC_VERSION}")
    data = card.get("data")
    if not isinstance(data, dict):
        return [*problems, "data must be an object"]
    problems += [
        f"data.{f} must be a string" for f in DATA_STRINGS if not isinstance(data.get(f), str)
    ]
    for field in DATA_LISTS:
        value = data.get(field)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"data.{field} must be a list of strings")
    if not isinstance(data.get("extensions"), dict):
        problems.append("data.extensions must be an object")
    book = data.get("character_book")
    if book is not None:
        if not isinstance(book, dict) or not isinstance(book.get("extensions"), dict):
            problems.append("character_book must be an object with extensions")
        entries = book.get("entries") if isinstance(book, dict) else None
        if not isinstance(entries, list):
            problems.append("character_book.entries must be a list")
        else:
            for index, entry in enumerate(entries):
                problems += _entry_problems(index, entry)
    return problems
