"""Writes a finished profile as ``profile.json``, ``profile.md`` and ``card.json``, atomically.

``profile.json`` is written last: its presence marks a character as done (batch runs skip it),
so an interrupted write never looks finished.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from personae.errors import InputError
from personae.files import write_json_atomic, write_text_atomic
from personae.memory.characterhub.character_card import build_card
from personae.memory.characterhub.dimensions import DIMENSIONS

DROPPED_OUTPUT: dict[str, str] = {
    "dropped_queries": "planned queries (beyond the per-dimension cap, empty or repeated)",
    "dropped_follow_ups": "follow-up queries (beyond the per-dimension cap, empty or already run)",
    "dropped_ids": "cited source ids the code never gave the model",
    "dropped_notes": "notes left without a known source id",
    "notes_unsupported": "round notes their cited passage does not state",
    "dropped_facts": "profile facts left without a known source id",
    "facts_unsupported": "profile facts their cited passage does not state",
    "sentences_unsupported": "profile sentences no kept fact supports",
}
"""The ``usage`` counters of model output the code dropped, and what each counts."""
DROPPED_RESULTS = (
    "web search results dropped (not an object, or no http(s) URL with a valid host and port)"
)
"""What ``usage.results_dropped`` counts, as the terminal and ``profile.md`` say it."""
DEGRADED_KINDS = ("notes_unchecked", "facts_unchecked", "sentences_unchecked", "rounds_degraded")
"""The ``usage`` counters that detail ``usage.degraded`` (items still invalid after retries)."""


def dropped_output(usage: Mapping[str, int]) -> list[str]:
    """One phrase per non-zero drop counter (``3 planned queries (...)``), in a fixed order.

    profile.md lists them and the terminal prints them: model output the code throws away
    must be visible, so a user can tell a thin profile from a model that answers badly.
    """
    return [f"{usage[key]} {what}" for key, what in DROPPED_OUTPUT.items() if usage.get(key)]


@dataclass(frozen=True)
class ProfilePaths:
    """Where one character's outputs live."""

    directory: Path
    profile_json: Path
    profile_md: Path
    card_json: Path

    @property
    def draft_json(self) -> Path:
        """An unchecked draft: what a run that ended with nothing usable had (see write_draft)."""
        return self.directory / "draft.json"

    @property
    def draft_md(self) -> Path:
        """The draft, readable."""
        return self.directory / "draft.md"


def slugify(name: str) -> str:
    """A filesystem-safe folder name: ASCII words joined by ``-``; a hash for non-Latin names."""
    ascii_text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.casefold()).strip("-")[:80].strip("-")
    if slug:
        return slug
    if not name.strip():
        raise InputError("the character name is empty", "pass a character name")
    return "character-" + hashlib.sha1(name.strip().encode()).hexdigest()[:10]


def profile_key(name: str, franchise: str | None = None) -> str:
    """The folder name of one character: its slug, then the franchise's (``kenshiro--hokuto``).

    One name under two franchises is two characters, so the franchise is part of the key; names
    that differ only in case or punctuation (``KENSHIRO!``, ``Kenshiro``) share it. ``--`` never
    occurs inside a slug, so the two parts cannot be confused.
    """
    key = slugify(name)
    if franchise and franchise.strip():
        key += "--" + slugify(franchise)
    return key


def paths_for(out_dir: Path, name: str, franchise: str | None = None) -> ProfilePaths:
    """The output paths of ``name`` (of ``franchise``) under ``out_dir``."""
    directory = out_dir / profile_key(name, franchise)
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
        # The canon the run decided (a version, or none preferred), and the prompts' rule.
        "canon": str(result.get("canon_version") or ""),
        "canon_rule": str(result.get("canon") or ""),
        # Every model role that made it (search, rewrite, fast), each with its sampling.
        "models": dict(result.get("models") or {}),
        "conflicts": list(result.get("conflicts", [])),
        "dimensions": {d: list(result.get("dimensions", {}).get(d, [])) for d in DIMENSIONS},
        # ``content`` is the raw evidence text: evaluation measures its knowledge density.
        "sources": [
            {**{k: s[k] for k in ("id", "url", "title", "origin")}, "content": s.get("content", "")}
            for s in result.get("sources", [])
        ],
        "rounds": rounds,
        "usage": dict(result.get("usage", {})),
        # How the structured answers were asked for, per model@server (personae.llm_endpoint).
        "structured_output": dict(result.get("structured_output") or {}),
        # What the citation check dropped: facts their passages do not state, prose sentences
        # no kept fact supports.
        "unsupported_facts": list(result.get("unsupported_facts", [])),
        # Degraded: facts no valid verdict came for, kept unchecked (usage.facts_unchecked).
        "unchecked_facts": list(result.get("unchecked_facts", [])),
        "prose_check": result.get("prose_check"),
        "stop_reason": result.get("stop_reason", ""),
        # Several searches may skip the same page: one notice each.
        "notices": list(dict.fromkeys(result.get("notices", []))),
        "wiki_page": result.get("wiki_page"),
    }


def render_markdown(document: Mapping[str, Any]) -> str:
    """A readable ``profile.md``: profile, facts with ``[S1]`` citations, sources."""
    title = markdown_text(document["character"])
    if document["franchise"]:
        title += f" ({markdown_text(document['franchise'])})"
    lines = [f"# {title}", ""]
    if document.get("notices"):
        lines += ["> **Notices**", *[f"> - {markdown_text(n)}" for n in document["notices"]], ""]
    lines += [document["profile"], ""]
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
    dropped = dropped_output(document.get("usage") or {})
    if dropped:
        lines += ["## Dropped model output", *[f"- {phrase}" for phrase in dropped], ""]
    results_dropped = (document.get("usage") or {}).get("results_dropped")
    if results_dropped:
        lines += ["## Dropped search results", f"- {results_dropped} {DROPPED_RESULTS}", ""]
    lines.append("## Sources")
    lines += [
        f"- **{s['id']}** [{markdown_text(s['title'])}]({markdown_url(s['url'])})"
        for s in document["sources"]
    ]
    return "\n".join(lines) + "\n"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")


def markdown_text(text: str) -> str:
    """``text`` as one line of literal Markdown: web page titles are untrusted.

    A title such as ``x](javascript:alert(1)) [y`` or one holding raw HTML would otherwise
    become a link or markup in every viewer of ``profile.md``.
    """
    flat = " ".join(str(text).split())
    return _MARKDOWN_SPECIAL.sub(r"\\\1", flat).replace("&", "&amp;")


def markdown_url(url: str) -> str:
    """``url`` safe as a Markdown link target: no spaces, parentheses or angle brackets."""
    return quote(str(url).strip(), safe=":/?#[]@!$&'*+,;=%~-._")


def card_creation_date(path: Path) -> int | None:
    """The ``creation_date`` of an earlier card at ``path`` (a re-profile keeps it)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))["data"]["creation_date"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) else None


def write_profile(
    out_dir: Path,
    result: Mapping[str, Any],
    *,
    name: str | None = None,
    franchise: str | None = None,
    excluded_urls: Sequence[str] = (),
    card_system_prompt: bool = False,
) -> ProfilePaths:
    """Write the three files for a profiler result; everything is rendered before any write.

    The folder is :func:`profile_key` of ``name`` and ``franchise`` (what the user typed, the
    key a batch checks to skip done characters) or else of the resolved name and franchise.
    """
    document = profile_document(result)
    # Recorded so an evaluation can tell a "reference excluded" profile from an ordinary one.
    document["excluded_urls"] = list(excluded_urls)
    markdown = render_markdown(document)
    if name is None:
        name, franchise = str(document["character"]), document.get("franchise")
    paths = paths_for(out_dir, name, franchise)
    now = int(time.time())
    card = build_card(
        document,
        created=card_creation_date(paths.card_json) or now,
        modified=now,
        system_prompt=card_system_prompt,
    )
    write_text_atomic(paths.profile_md, markdown)
    write_json_atomic(paths.card_json, card)
    write_json_atomic(paths.profile_json, document)
    for stale in (paths.draft_json, paths.draft_md):  # a checked profile replaces the draft
        stale.unlink(missing_ok=True)
    return paths


UNCHECKED_NOTICE = "UNCHECKED DRAFT, not a profile: {reason}"


def write_draft(
    out_dir: Path,
    result: Mapping[str, Any],
    *,
    name: str,
    franchise: str | None,
    reason: str,
    excluded_urls: Sequence[str] = (),
) -> Path:
    """Keep what a run that ended with nothing usable had: ``draft.json`` and ``draft.md``.

    The model answers were paid for; the user reads them, and a rerun with the flag the error
    suggests reuses them (the checkpoint). Marked ``"checked": false`` and never written as
    ``profile.json`` or a card, so a batch does not take the character for done. Facts are the
    rewrite's draft facts (before any check); the rounds keep their notes.
    """
    draft = {
        **result,
        "profile": str(result.get("profile") or ""),  # the rewrite itself may have failed
        "dimensions": _by_dimension(result.get("draft_facts") or []),
    }
    document = {**profile_document(draft), "checked": False, "reason": reason}
    document["excluded_urls"] = list(excluded_urls)
    document["notices"] = [UNCHECKED_NOTICE.format(reason=reason), *document["notices"]]
    paths = paths_for(out_dir, name, franchise)
    write_text_atomic(paths.draft_md, render_markdown(document))
    write_json_atomic(paths.draft_json, document)
    return paths.draft_json


def _by_dimension(facts: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {d: [] for d in DIMENSIONS}
    for fact in facts:
        if fact.get("dimension") in grouped:
            grouped[fact["dimension"]].append(
                {"text": fact.get("text", ""), "source_ids": list(fact.get("source_ids", []))}
            )
    return grouped
