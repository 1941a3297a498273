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

_WORD = r"[A-Z](?:[\w'’-]*\w|\.)"
_NAME_RUN = re.compile(rf"\b{_WORD}(?:\s+(?:(?:of|no|de|von|van|the)\s+)?{_WORD})*")
_CONNECTORS = frozenset({"of", "no", "de", "von", "van", "the"})
FUNCTION_WORDS = frozenset(
    """a about above after again against all also although an and another any as at
    because before being below between both but by despite during each either even eventually
    every few for from further he her hers herself him himself his how however i if in inside
    into it its itself later like many me meanwhile more most much my myself neither never
    nevertheless no nor not now of off on once one only onto or other our ours ourselves out
    over since so some soon such than that the their theirs them themselves then there these
    they this those though through throughout thus to together too toward towards under unless
    until up upon us very was we were what whatever when whenever where whereas wherever
    whether which while who whom whose why with within without yet you your yours yourself
    following among along across always often sometimes still ultimately finally first second
    afterwards initially i'm i've i'd i'll im ive""".split()
)
"""Capitalised at the start of a sentence, these are never names ("During", "His", "After")."""


def _bare(word: str) -> str:
    """A word compared: case-folded, possessive and apostrophes dropped (``Raoh's`` → ``raoh``)."""
    folded = word.casefold().replace("’", "'")
    return folded.removesuffix("'s").replace("'", "")


def lore_keys(text: str, name: str) -> list[str]:
    """Trigger words of a fact: the names it mentions (``Hokuto Shinken``, ``Raoh``).

    Runs of capitalised words, cut at function words ("During", "His", "After": capitalised
    only because they start a sentence) and at the character's own name, which would trigger
    every entry at once.
    """
    own = {_bare(part) for part in name.split()}
    found: list[str] = []
    for match in _NAME_RUN.finditer(text):
        part: list[str] = []
        for word in [*match.group(0).split(), ""]:
            bare = _bare(word)
            if bare in _CONNECTORS:
                if part:
                    part.append(word)  # "King of Fist", kept only if a name follows
                continue
            if not word or bare in own or bare in FUNCTION_WORDS:
                while part and _bare(part[-1]) in _CONNECTORS:
                    part.pop()
                if part:
                    found.append(" ".join(part).removesuffix("'s").removesuffix("’s"))
                part = []
            else:
                part.append(word)
    keys = [k for k in found if len(k) > 2]
    return list(dict.fromkeys(keys))[:5] or [name]


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


GREETING_CHARS = 300
"""The first greeting is at most this long: one sentence, never the whole profile."""
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*(?=\s)")


def first_greeting(profile: str) -> str:
    """The profile's first sentence, at most ``GREETING_CHARS`` (a closing quote kept: ``."``)."""
    text = " ".join(profile.split())
    end = next((m.end() for m in _SENTENCE_END.finditer(text)), len(text))
    if end <= GREETING_CHARS:
        return text[:end].strip()
    cut = text[:GREETING_CHARS].rsplit(" ", 1)[0]
    return cut.rstrip(",;: ") + "…"


def source_urls(document: Mapping[str, Any]) -> list[str]:
    """The profile's source pages, each once (passages of one page share its URL)."""
    pages = [str(s["url"]).partition("#")[0] for s in document.get("sources", []) if s.get("url")]
    return list(dict.fromkeys(pages))


def build_card(
    document: Mapping[str, Any],
    *,
    created: int | None = None,
    modified: int | None = None,
    system_prompt: bool = False,
) -> dict[str, Any]:
    """The V3 card of a ``profile.json`` document (V2 ``data`` fields and V1 top level kept).

    ``created`` / ``modified`` are Unix seconds (``creation_date`` / ``modification_date``);
    ``system_prompt`` fills ``system_prompt`` (empty otherwise: front-ends use their own unless
    the card asks, as the V2 spec recommends).
    """
    name = str(document["character"])
    franchise = document.get("franchise") or ""
    profile = str(document.get("profile", ""))
    pages = source_urls(document)
    urls = ", ".join(pages[:10])
    prompt = (
        f"You are {name}{f' from {franchise}' if franchise else ''}. Stay in character. "
        f"{document.get('canon_rule', document.get('canon')) or ''}".strip()
        if system_prompt
        else ""
    )
    data: dict[str, Any] = {
        "name": name,
        "description": profile,
        "personality": " ".join(_facts(document, "personality")),
        "scenario": f"{name} of {franchise}." if franchise else "",
        "first_mes": first_greeting(profile),
        "mes_example": "",
        "creator_notes": f"Profiled by Personae from web and wiki sources: {urls}",
        "system_prompt": prompt,
        "post_history_instructions": "",
        "alternate_greetings": [],
        "group_only_greetings": [],
        "tags": [t for t in (franchise, "personae") if t],
        "creator": "Personae",
        "character_version": "1.0",
        "extensions": {"personae": {"canon": document.get("canon", "")}},
        "character_book": lorebook(document),
        "source": pages,
    }
    if created is not None:
        data["creation_date"] = created
    if modified is not None:
        data["modification_date"] = modified
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
