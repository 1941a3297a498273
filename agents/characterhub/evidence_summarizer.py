"""The evidence summarizer: one round's passages into per-dimension notes citing source ids.

The model only sees the short ids the code assigned (``S3``), and the answer's schema is built
for the round: ``source_ids`` is an enum of exactly those ids (at least one per fact), so a
model following the schema cannot cite an id it was never shown (copied from a passage's
text, say). The code still keeps only facts that cite a known source and say something (the
others are counted: the profile reports them as dropped notes).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from personae.agents.answer_schemas import list_of, non_blank, one_of, per_call_schema
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


@per_call_schema(maxsize=64)
def cited_fact_schema(known_ids: tuple[str, ...]) -> type[CitedFact]:
    """``CitedFact`` citing only ``known_ids`` (at least one), with non-blank text."""
    return create_model(
        "CitedFact",
        __base__=CitedFact,
        text=(str, non_blank("The fact, one short sentence in the third person.")),
        source_ids=(
            list_of(one_of(known_ids)),
            Field(min_length=1, description="Ids of the passages stating it, like S1."),
        ),
    )


@per_call_schema(maxsize=64)
def evidence_notes_schema(known_ids: tuple[str, ...]) -> type[EvidenceNotes]:
    """``EvidenceNotes`` whose facts cite only ``known_ids``."""
    return create_model(
        "EvidenceNotes",
        __base__=EvidenceNotes,
        facts=(
            list_of(cited_fact_schema(known_ids)),
            Field(description="Facts, each citing the passages it comes from."),
        ),
    )


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
    """Per-dimension facts from ``sources``, each citing ids of ``sources`` only.

    Returns the kept facts, the usage, and how many facts were dropped (no known source id
    left, or no text). Raises :class:`~personae.llm.InvalidAnswerError` when the answer is
    still invalid after retries (the caller degrades the round).
    """
    known = tuple(dict.fromkeys(sid for sid, _, _ in sources))
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
    notes, usage = await call_structured(model, evidence_notes_schema(known), messages)
    kept = keep_cited_facts(notes.facts, known)
    return kept, usage, len(notes.facts) - len(kept)
