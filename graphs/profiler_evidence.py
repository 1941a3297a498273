"""The profiler's evidence bookkeeping: source ids, what the models read, the DRInfo notes.

Shared by both profiling methods: passages get short ids ``S1..Sn`` in order of first
appearance (the models only ever see those), passages are shown within a character budget, and
the planned method's cited notes are rendered as its DRInfo document.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from personae.agents.deep_searcher import render_passages
from personae.agents.evidence_summarizer import CitedFact
from personae.agents.query_planner import DIMENSIONS
from personae.tools.web_search import normalize_url

SOURCE_FIELDS = ("url", "title", "content", "origin", "round")


def source_key(url: str, content: str) -> str:
    """Identity of a passage: normalised URL plus a hash of its text."""
    digest = hashlib.sha1(" ".join(content.split()).encode()).hexdigest()[:12]
    return f"{normalize_url(url)}#{digest}"


def assign_source_ids(
    known: list[dict[str, Any]], passages: list[dict[str, Any]], excluded: set[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """New sources (ids continuing ``S1..Sn``) and the ids of every kept passage, in order."""
    by_key = {source_key(s["url"], s["content"]): s["id"] for s in known}
    new: list[dict[str, Any]] = []
    ids: list[str] = []
    for passage in passages:
        if normalize_url(passage["url"]) in excluded:
            continue
        key = source_key(passage["url"], passage["content"])
        if key not in by_key:
            by_key[key] = f"S{len(known) + len(new) + 1}"
            new.append({"id": by_key[key], **{k: passage[k] for k in SOURCE_FIELDS}})
        if by_key[key] not in ids:
            ids.append(by_key[key])
    return new, ids


def facts_by_dimension(facts: Iterable[Mapping[str, Any]]) -> dict[str, list[CitedFact]]:
    """Cited facts per dimension, de-duplicated (rounds repeat facts)."""
    grouped: dict[str, list[CitedFact]] = defaultdict(list)
    for fact in facts:
        cited = CitedFact.model_validate({k: v for k, v in fact.items() if k != "round"})
        if cited not in grouped[cited.dimension]:
            grouped[cited.dimension].append(cited)
    return dict(grouped)


def passages_text(sources: Sequence[Mapping[str, Any]], ids: Sequence[str], budget: int) -> str:
    """The passages of ``ids`` (all sources when empty) as ``[S#] title`` blocks within budget."""
    wanted = set(ids)
    chosen = [s for s in sources if not wanted or s["id"] in wanted]
    return render_passages([(s["id"], s["title"], s["content"]) for s in chosen], budget)


def notes_document(name: str, grouped: Mapping[str, Sequence[CitedFact]]) -> str:
    """The planned method's DRInfo: its cited notes per dimension as Markdown."""
    lines = [f"# {name}"]
    for dimension in DIMENSIONS:
        facts = grouped.get(dimension, [])
        if facts:
            lines += ["", f"## {dimension.capitalize()}"]
            lines += [f"- {f.text} [{', '.join(f.source_ids)}]" for f in facts]
    return "\n".join(lines)
