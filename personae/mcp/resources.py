"""Read-only MCP resources: the profiles ``personae profile`` wrote and the indexed personas.

``personae://profiles`` lists the profiles of the profiles folder; ``personae://profiles/KEY``
is one ``profile.json`` (KEY is its folder name, e.g. ``kenshiro--fist-of-the-north-star``) and
``personae://profiles/KEY/markdown`` its ``profile.md``. ``personae://personas`` lists the
AMADEUS persona indexes of the persona memory (character, source, splitter, embedding, chunk
and section counts); ``personae://personas/NAME`` is one index's manifest and chunks. Nothing is
ever written; keys are checked against the names Personae itself makes, so a URI cannot reach
outside the folders.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from personae.errors import InputError

PROFILE_KEY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*(?:--[a-z0-9]+(?:-[a-z0-9]+)*)?")
"""A profile folder's name as :func:`~personae.memory.characterhub.profile_store.profile_key`
makes it (its slug, then the franchise's)."""


def profile_keys(profiles_dir: Path) -> list[str]:
    """The folder names of every written profile, sorted."""
    if not profiles_dir.is_dir():
        return []
    return sorted(
        path.name
        for path in profiles_dir.iterdir()
        if PROFILE_KEY.fullmatch(path.name) and (path / "profile.json").is_file()
    )


def profile_listing(profiles_dir: Path) -> str:
    """``personae://profiles``: key, name, franchise and URI of every profile, as JSON.

    ``name`` is the profile's ``character`` (the field ``personae profile`` writes).
    """
    rows = []
    for key in profile_keys(profiles_dir):
        document = _json_file(profiles_dir / key / "profile.json")
        rows.append(
            {
                "key": key,
                "name": document.get("character"),
                "franchise": document.get("franchise"),
                "uri": f"personae://profiles/{key}",
            }
        )
    return json.dumps(rows, ensure_ascii=False, indent=2)


def profile_file(profiles_dir: Path, key: str, name: str) -> str:
    """The text of ``name`` (``profile.json`` or ``profile.md``) of profile ``key``."""
    if not PROFILE_KEY.fullmatch(key) or not (profiles_dir / key / name).is_file():
        known = ", ".join(profile_keys(profiles_dir)) or "none yet"
        raise InputError(
            f"no profile {key!r} in {profiles_dir} (profiles: {known})",
            "read personae://profiles for the keys",
        )
    return (profiles_dir / key / name).read_text(encoding="utf-8")


def _json_file(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


async def persona_listing(personas_dir: Path) -> str:
    """``personae://personas``: the manifest of every persona index, as JSON."""
    return json.dumps(await asyncio.to_thread(_manifests, personas_dir), indent=2)


def _manifests(personas_dir: Path) -> list[dict[str, Any]]:
    if not personas_dir.is_dir():
        return []
    from personae.memory.amadeus.persona_store import indexed_personas, open_client

    found = indexed_personas(open_client(str(personas_dir)))
    return sorted(found, key=lambda manifest: (str(manifest["character"]), manifest["collection"]))


async def persona_names(personas_dir: Path) -> list[str]:
    """The indexed characters' names, each once, sorted."""
    manifests = await asyncio.to_thread(_manifests, personas_dir)
    return sorted({str(m["character"]) for m in manifests})


async def persona_index(personas_dir: Path, character: str) -> str:
    """``personae://personas/NAME``: the manifests of NAME's indexes and their chunks."""
    return json.dumps(await asyncio.to_thread(_persona, personas_dir, character), indent=2)


def _persona(personas_dir: Path, character: str) -> dict[str, Any]:
    wanted = character.strip().casefold()
    indexes = [m for m in _manifests(personas_dir) if str(m["character"]).casefold() == wanted]
    if not indexes:
        names = sorted({str(m["character"]) for m in _manifests(personas_dir)})
        raise InputError(
            f"no persona index of {character!r} in {personas_dir} "
            f"(indexed: {', '.join(names) or 'none yet'})",
            "index one with personae amadeus index SOURCE --character NAME",
        )
    from personae.memory.amadeus.persona_store import open_client

    client = open_client(str(personas_dir))
    for manifest in indexes:
        stored = client.get_collection(manifest["collection"]).get(include=["documents"])
        manifest["chunks_text"] = [
            {"id": chunk_id, "text": text}
            for chunk_id, text in zip(stored["ids"], stored["documents"] or [], strict=False)
        ]
    return {"character": indexes[0]["character"], "indexes": indexes}
