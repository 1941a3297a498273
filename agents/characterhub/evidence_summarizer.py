"""The evidence summarizer: one round's passages into per-dimension notes citing source ids.

The model only sees the short ids the code assigned (``S3``); ids it cites that the code never
gave it (copied from a passage's text, say) are dropped and counted, never retried into a
failed run, and the code keeps only facts that still cite a known source (the others are
counted too: the profile reports them as dropped notes).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.llm import LLMUsage, call_structured
from personae.memory.characterhub.dimensions import DIMENSIONS, Dimension

SUMMARIZER_SYSTEM = """You extract facts about the fictional character {name} ({franchise})
from numbered source passages. Sort each fact into one dimension ({dimensions}). Every fact must
cite the ids of the passages that state it (the ids in brackets before them) and quote, word for word, the
shortest words of one of them that state it; cite only ids shown below. Skip facts about other
characters with the same name. {canon}"""

SUMMARIZER_USER = """## Sources
{sources}

Extract the facts about {name}."""


class CitedFact(BaseModel):
    """One fact with the sources that support it."""

    dimension: Dimension = Field(description="One of the profiling dimensions.")
    text: str = Field(description="The fact, one short sentence in the third person.")
    source_ids: list[str] = Field(description="Ids of the passages stating it, like S1.")
    quote: str = Field(
        default="", description="The exact words of a cited passage that state the fact."
    )


class EvidenceNotes(BaseModel):
    """Facts extracted from this round's passages."""

    facts: list[CitedFact] = Field(description="Facts, each citing the passages it comes from.")


def keep_cited_facts(facts: Sequence[CitedFact], known_ids: Collection[str]) -> list[CitedFact]:
    """Drop invented ids and facts left without a source or text (the schema fixes dimensions)."""
    kept: list[CitedFact] = []
    for fact in facts:
        ids = list(dict.fromkeys(i.strip() for i in fact.source_ids if i.strip() in known_ids))
        if ids and fact.text.strip():
            kept.append(
                CitedFact(
                    dimension=fact.dimension,
                    text=fact.text.strip(),
                    source_ids=ids,
                    quote=fact.quote.strip(),
                )
            )
    return kept


def reject_unknown_ids(facts: Sequence[CitedFact], known_ids: Collection[str]) -> None:
    """Raise ``ValueError`` naming cited ids the code never assigned (the model invented them).

    Used as a ``call_structured`` check, so the message is what the model reads on retry.
    """
    invented = sorted({i for f in facts for i in f.source_ids if i.strip() not in known_ids})
    if invented:
        raise ValueError(f"cite only the ids shown; unknown ids: {', '.join(invented)}")


def drop_unknown_ids(
    facts: Sequence[CitedFact], known_ids: Collection[str]
) -> tuple[list[CitedFact], int]:
    """``facts`` citing only ``known_ids``, and how many cited ids were dropped.

    A fact left without a source stays (with no ids), so :func:`keep_cited_facts` drops it
    where its caller can count it as a dropped fact.
    """
    repaired: list[CitedFact] = []
    dropped = 0
    for fact in facts:
        ids = [i for i in fact.source_ids if i.strip() in known_ids]
        dropped += len(fact.source_ids) - len(ids)
        repaired.append(fact.model_copy(update={"source_ids": ids}))
    return repaired, dropped


def render_sources(sources: Sequence[tuple[str, str, str]], chars: int = 4000) -> str:
    """``(id, title, content)`` triples as the numbered passage list the model reads."""
    return "\n\n".join(f"[{sid}] {title}\n{content[:chars]}" for sid, title, content in sources)


async def summarize_round(
    model: BaseChatModel,
    *,
    name: str,
    franchise: str | None,
    sources: Sequence[tuple[str, str, str]],
    canon: str = "",
    chars: int = 4000,
) -> tuple[list[CitedFact], LLMUsage, int]:
    """Per-dimension facts from ``sources``; invented ids are rejected, then filtered out.

    Returns the kept facts, the usage, and how many facts were dropped (no known source id
    left, or no text).
    """
    known = {sid for sid, _, _ in sources}
    messages = [
        SystemMessage(
            SUMMARIZER_SYSTEM.format(
                name=name,
                franchise=franchise or "unknown franchise",
                dimensions=", ".join(DIMENSIONS),
                canon=canon,
            )
        ),
        HumanMessage(SUMMARIZER_USER.format(sources=render_sources(sources, chars), name=name)),
    ]

    def repair(notes: EvidenceNotes) -> tuple[EvidenceNotes, int]:
        facts, dropped = drop_unknown_ids(notes.facts, known)
        return EvidenceNotes(facts=facts), dropped

    notes, usage = await call_structured(
        model,
        EvidenceNotes,
        messages,
        check=lambda notes: reject_unknown_ids(notes.facts, known),
        repair=repair,
    )
    kept = keep_cited_facts(notes.facts, known)
    return kept, usage, len(notes.facts) - len(kept)
