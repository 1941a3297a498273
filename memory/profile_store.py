"""Writes a finished profile as ``profile.json``, ``profile.md`` and ``card.json``, atomically.

``profile.json`` is written last: its presence marks a character as done (batch runs skip it),
so an interrupted write never looks finished.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from personae.agents.query_planner import DIMENSIONS
from personae.errors import InputError
from personae.files import write_json_atomic, write_text_atomic
from personae.memory.character_card import build_card


@dataclass(frozen=True)
class ProfilePaths:
    """Where one character's outputs live."""

    directory: Path
    profile_json: Path
    profile_md: Path
    card_json: Path


def slugify(name: str) -> str:
    """A filesystem-safe folder name: ASCII words joined by ``-``; a hash for non-Latin names."""
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.casefold()).strip("-")[:80].strip("-")
    if slug:
        return slug
    if not name.strip():
        raise InputError("the character name is empty", "pass a character name")
    return "character-" + hashlib.sha1(name.strip().encode()).hexdigest()[:10]


def paths_for(out_dir: Path, name: str) -> ProfilePaths:
    """The output paths of ``name`` under ``out_dir``."""
    directory = out_dir / slugify(name)
    return ProfilePaths(
        directory, directory / "profile.json", directory / "profile.md", directory / "card.json"
    )


def profile_document(result: Mapping[str, Any]) -> dict[str, Any]:
    """The ``profile.json`` document from the profiler graph's output."""
    reflections = {r["round"]: r for r in result.get("reflections", [])}
    rounds = [
        {
            **r,
            "coverage": reflections.get(r["round"], {}).get("coverage", {}),
            "follow_ups": reflections.get(r["round"], {}).get("follow_ups", []),
        }
        for r in result.get("rounds", [])
    ]
    return {
        "character": result["name"],
        "franchise": result.get("franchise"),
        "method": result.get("method") or "planned",
        "profile": result["profile"],
        # The raw deep-search output (R2, "DRInfo"): the paper scores it beside the profile.
        "drinfo": result.get("drinfo") or "",
        "canon": result.get("canon", ""),
        "conflicts": list(result.get("conflicts", [])),
        "dimensions": {d: list(result.get("dimensions", {}).get(d, [])) for d in DIMENSIONS},
        # ``content`` is the raw evidence text: evaluation measures its knowledge density.
        "sources": [
            {**{k: s[k] for k in ("id", "url", "title", "origin")}, "content": s.get("content", "")}
            for s in result.get("sources", [])
        ],
        "rounds": rounds,
        "usage": dict(result.get("usage", {})),
        # What the citation check dropped: facts their passages do not state, prose sentences
        # no kept fact supports.
        "unsupported_facts": list(result.get("unsupported_facts", [])),
        "prose_check": dict(result.get("prose_check", {})),
        "stop_reason": result.get("stop_reason", ""),
        "notices": list(result.get("notices", [])),
        "wiki_page": result.get("wiki_page"),
    }


def render_markdown(document: Mapping[str, Any]) -> str:
    """A readable ``profile.md``: profile, facts with ``[S1]`` citations, sources."""
    title = document["character"] + (f" ({document['franchise']})" if document["franchise"] else "")
    lines = [f"# {title}", "", document["profile"], ""]
    if document.get("canon"):
        lines += [f"*Canon:* {document['canon']}", ""]
    for dimension, facts in document["dimensions"].items():
        if facts:
            lines.append(f"## {dimension.capitalize()}")
            lines += [f"- {f['text']} [{', '.join(f['source_ids'])}]" for f in facts]
            lines.append("")
    if document.get("conflicts"):
        lines += ["## Conflicts resolved", *[f"- {c}" for c in document["conflicts"]], ""]
    prose = document.get("prose_check") or {}
    if prose.get("sentences"):
        dropped = prose.get("dropped", [])
        lines += [
            "## Citation check",
            f"{prose['sentences']} sentences checked against the kept facts: "
            f"{prose['supported']} supported, {prose['no_claim']} without a claim, "
            f"{len(dropped)} dropped; "
            f"{len(document.get('unsupported_facts', []))} facts dropped (their cited passage "
            "does not state them).",
            *[f"- dropped: {sentence}" for sentence in dropped],
            "",
        ]
    lines.append("## Sources")
    lines += [f"- **{s['id']}** [{s['title']}]({s['url']})" for s in document["sources"]]
    return "\n".join(lines) + "\n"


def write_profile(
    out_dir: Path, result: Mapping[str, Any], *, name: str | None = None
) -> ProfilePaths:
    """Write the three files for a profiler result; everything is rendered before any write.

    The folder is the slug of ``name`` (what the user typed) or else of the resolved name.
    """
    document = profile_document(result)
    markdown = render_markdown(document)
    card = build_card(document)
    paths = paths_for(out_dir, name or str(document["character"]))
    write_text_atomic(paths.profile_md, markdown)
    write_json_atomic(paths.card_json, card)
    write_json_atomic(paths.profile_json, document)
    return paths
