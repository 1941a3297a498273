"""The profiler's evidence bookkeeping: source ids, what the models read, the DRInfo notes.

Shared by both profiling methods: passages get short ids ``S1..Sn`` in order of first
appearance (the models only ever see those), passages are shown within a character budget, and
the planned method's cited notes are rendered as its DRInfo document.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from personae.agents.characterhub.deep_searcher import render_passages
from personae.agents.characterhub.evidence_summarizer import CitedFact, keep_cited_facts
from personae.agents.characterhub.profile_rewriter import ProfileDraft
from personae.errors import NothingUsableError
from personae.graphs.characterhub.state import (
    Passage,
    ProfilerState,
    RoundRecord,
    Source,
    merge_sources,
)
from personae.llm import InvalidAnswerError, LLMUsage
from personae.memory.characterhub.dimensions import DIMENSIONS
from personae.tools.web_search import normalize_url

SOURCE_FIELDS = ("url", "title", "content", "origin", "round")


def source_key(url: str, content: str) -> str:
    """Identity of a passage: normalised URL plus a hash of its text."""
    digest = hashlib.sha1(" ".join(content.split()).encode()).hexdigest()[:12]
    return f"{normalize_url(url)}#{digest}"


def source_identity(url: str, origin: str) -> str:
    """What makes two passages one source: the page, or for a wiki the page's section.

    A web page is one source however many passages of it were found. A wiki page is cut by
    section (``page#Personality``): each section is a source of its own, so a fact cites the
    section stating it and the character's own page, read section by section, gives the
    models several sources to cite rather than one block.
    """
    return exclusion_key(url) if origin == "wiki" else normalize_url(url)


def exclusion_key(url: str) -> str:
    """The normalised URL with its fragment kept (a fragment names one section of a page)."""
    page, _, fragment = url.partition("#")
    return f"{normalize_url(page)}#{fragment}" if fragment else normalize_url(page)


def is_excluded(url: str, excluded: set[str]) -> bool:
    """Excluded when its whole page, or this very section (``page#History``), is listed."""
    return normalize_url(url) in excluded or exclusion_key(url) in excluded


def assign_source_ids(
    known: Sequence[Source], passages: Sequence[Passage], excluded: set[str]
) -> tuple[list[Source], list[str], dict[str, list[str]]]:
    """One source per page (wiki: per section): updates for ``sources``, ids, and texts.

    A page (normalised URL; see :func:`source_identity`) keeps one id ``S<n>`` for the whole run however many searches
    return it, with different passages (one per wiki section, per query) or the same one.
    Returns the source records to merge (a new page with its first passage; each new passage of
    a known page as a record with the same id, merged by ``merge_sources``, the ``sources``
    reducer), the ids of the round's kept passages in order of first appearance, and the
    distinct passage texts of each id in this round (what the round's reader sees).
    """
    by_url = {source_identity(s["url"], s["origin"]): s for s in known}
    updates: list[Source] = []
    texts: dict[str, list[str]] = {}
    next_number = len(known) + 1
    for passage in passages:
        if is_excluded(passage["url"], excluded):
            continue
        url = source_identity(passage["url"], passage["origin"])
        source = by_url.get(url)
        if source is None:
            source = Source(
                id=f"S{next_number}",
                url=passage["url"],
                title=passage["title"],
                content=passage["content"],
                origin=passage["origin"],
                round=passage["round"],
            )
            next_number += 1
            by_url[url] = source
            updates.append(source)
            texts[source["id"]] = [passage["content"]]
            continue
        seen = texts.setdefault(source["id"], [])
        if passage["content"] not in seen:
            seen.append(passage["content"])
            if passage["content"] not in source["content"]:
                updates.append(Source(**{**source, "content": passage["content"]}))
    return updates, list(texts), texts


@dataclass(frozen=True)
class RoundSources:
    """This round's passages filed under source ids: where both methods' reading nodes start."""

    passages: list[Passage]
    """The passages this round's searches returned."""
    updates: list[Source]
    """Source records for the ``sources`` reducer (see :func:`assign_source_ids`)."""
    ids: list[str]
    """Ids of the round's kept passages, in order of first appearance."""
    texts: dict[str, list[str]]
    """The distinct passage texts of each id in this round."""
    everything: list[Source]
    """Every source known after this round (the known ones merged with ``updates``)."""
    new_ids: list[str]
    """Ids first seen this round."""

    def record(self, state: ProfilerState, notes: list[Any]) -> RoundRecord:
        """What the round did, for the ``rounds`` trail (``notes``: the cited facts, as JSON)."""
        return RoundRecord(
            round=state["round"],
            queries=[p["query"] for p in state["pending"]],
            results=len(self.passages),
            new_source_ids=self.new_ids,
            source_ids=self.ids,
            notes=notes,
        )


def round_sources(state: ProfilerState, exclude_urls: Iterable[str]) -> RoundSources:
    """The current round's passages with their source ids (``exclude_urls`` left out)."""
    passages = [e for e in state["evidence"] if e["round"] == state["round"]]
    excluded = {exclusion_key(u) for u in exclude_urls}
    known = state.get("sources", [])
    updates, ids, texts = assign_source_ids(known, passages, excluded)
    known_ids = {s["id"] for s in known}
    new_ids = list(dict.fromkeys(s["id"] for s in updates if s["id"] not in known_ids))
    return RoundSources(passages, updates, ids, texts, merge_sources(known, updates), new_ids)


ZERO_FACTS_WARNING = (
    "warning: the profile keeps no cited fact (asked twice, the model gave {count} facts and "
    "none cited a known source id); its text is unsupported by the sources"
)
CITE_REMINDER = (
    "Your previous draft kept no fact with a source id shown above. Give the facts again, "
    "each citing the ids (like S1) of the sources that state it."
)


async def draft_with_citations(
    ask: Callable[[str | None], Awaitable[tuple[ProfileDraft, LLMUsage]]],
    known: set[str],
) -> tuple[ProfileDraft, list[CitedFact], LLMUsage]:
    """A rewrite (``ask(reminder)``), asked once more when none of its facts kept a known id.

    Both methods' rewrites go through here: a draft whose every fact lost its source would
    give a profile with nothing traced to a source, so the model is reminded once; the caller
    reports what is still dropped (:func:`zero_facts_notices`, ``usage.dropped_facts``).
    Returns the draft, its facts with known ids and the usage of every call. A rewrite still
    invalid after retries leaves nothing to write: :class:`NothingUsableError`.
    """
    usage = LLMUsage()
    reminder, draft = None, None
    kept: list[CitedFact] = []
    for _ in range(2):
        try:
            draft, used = await ask(reminder)
        except InvalidAnswerError as failed:
            if draft is not None:  # the reminder's answer failed: the first draft stands
                return draft, kept, usage + failed.usage + LLMUsage(degraded=1)
            raise NothingUsableError(f"the profile rewrite failed: {failed.problem}") from failed
        usage = usage + used
        kept = keep_cited_facts(draft.facts, known)
        if kept:
            break
        reminder = CITE_REMINDER
    assert draft is not None
    return draft, kept, usage


def zero_facts_notices(draft: ProfileDraft, kept: Sequence[CitedFact]) -> list[str]:
    """The warning for a draft none of whose facts kept a source id (none when some did)."""
    return [] if kept else [ZERO_FACTS_WARNING.format(count=len(draft.facts))]


def rewrite_update(
    draft: ProfileDraft, kept: Sequence[CitedFact], usage: LLMUsage, drinfo: str
) -> dict[str, Any]:
    """The state update of a cited rewrite (either method's), from :func:`draft_with_citations`.

    The profile, its conflicts and the document it was written from, the facts that kept a
    known source id, the usage with how many facts were dropped, and the zero-facts warning.
    """
    return {
        "profile": draft.profile.strip(),
        "conflicts": draft.conflicts,
        "drinfo": drinfo,
        "draft_facts": [f.model_dump() for f in kept],
        "usage": {**usage.as_dict(), "dropped_facts": len(draft.facts) - len(kept)},
        "notices": zero_facts_notices(draft, kept),
    }


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
