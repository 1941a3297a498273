"""The knowledge extractor: atomic knowledge points, each with a quoted evidence, from a reference.

The evaluation is only as honest as its knowledge points, so the model's points are checked in
code: the evidence must be a quote that really occurs in the chunk (compared with whitespace,
case and typographic quotes normalised), the type must be one of the seven dimensions, and a
point that fails is dropped instead of scored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, field_validator

from personae.agents.query_planner import DIMENSIONS
from personae.evals.judge_cache import JudgeCache
from personae.llm import LLMUsage

Dimension = Literal[
    "identity", "appearance", "ability", "relationship", "experience", "personality", "other"
]

EXTRACTOR_SYSTEM = """You turn a reference text about the fictional character {name} into atomic
knowledge points: each point states one fact about {name} in one short third-person sentence.
For each point copy, word for word, the shortest passage of the text that states it as evidence
(no paraphrase, no ellipsis), and give its type, one of: {dimensions}.
identity: names, titles, origin, affiliation, role; appearance: looks, clothing; ability: powers,
skills, techniques; relationship: family, friends, rivals and how they relate; experience: events
the character lived through; personality: traits, values, habits; other: anything else (trivia,
voice actors, creation). Skip facts about other characters that say nothing about {name}."""

EXTRACTOR_USER = """## Reference text [{chunk_id}] ({heading})
{text}

List the knowledge points about {name} in this text."""

_TYPE_ALIASES = {
    "abilities": "ability",
    "relationships": "relationship",
    "experiences": "experience",
    "history": "experience",
    "personality traits": "personality",
    "looks": "appearance",
}
"""Near-miss type words a model writes, mapped to the dimension they mean."""
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_DASHES = re.compile(r"[\u2010-\u2015]")


class ExtractedPoint(BaseModel):
    """One knowledge point as the model states it."""

    statement: str = Field(description="The fact, one short third-person sentence.")
    evidence: str = Field(description="Exact quote from the text that states the fact.")
    type: Dimension = Field(description="The dimension the fact belongs to.")

    @field_validator("type", mode="before")
    @classmethod
    def _plain_type(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        word = value.strip().casefold()
        return _TYPE_ALIASES.get(word, word)


class ExtractedKnowledge(BaseModel):
    """Every knowledge point found in one reference chunk."""

    points: list[ExtractedPoint] = Field(description="Knowledge points, one fact each.")


@dataclass(frozen=True)
class KnowledgePoint:
    """A verified knowledge point: its evidence occurs in the chunk ``chunk_id``."""

    statement: str
    evidence: str
    type: str
    chunk_id: str


def normalize_quote(text: str) -> str:
    """Text compared for quoting: case-folded, one space between words, plain quotes and dashes."""
    plain = _DASHES.sub("-", text.translate(_QUOTES))
    return " ".join(plain.casefold().split())


def quote_occurs(evidence: str, text: str) -> bool:
    """True when ``evidence`` (non-empty) occurs in ``text`` up to :func:`normalize_quote`."""
    return _quoted_in(evidence, normalize_quote(text))


def _quoted_in(evidence: str, normal_text: str) -> bool:
    wanted = normalize_quote(evidence).strip(" .\"'")
    return bool(wanted) and wanted in normal_text


def verify_points(
    extracted: ExtractedKnowledge, *, chunk_id: str, text: str
) -> tuple[list[KnowledgePoint], int]:
    """Points whose evidence really occurs in ``text`` (duplicates merged), and how many dropped."""
    kept: list[KnowledgePoint] = []
    seen: set[str] = set()
    normal_text = normalize_quote(text)
    dropped = 0
    for point in extracted.points:
        statement = point.statement.strip()
        key = normalize_quote(statement)
        if not statement or not _quoted_in(point.evidence, normal_text) or key in seen:
            dropped += 1
            continue
        seen.add(key)
        kept.append(KnowledgePoint(statement, point.evidence.strip(), point.type, chunk_id))
    return kept, dropped


def merge_chunk_points(
    per_chunk: Iterable[Sequence[KnowledgePoint]],
) -> tuple[list[KnowledgePoint], int]:
    """The points of every chunk in order, a fact stated in two chunks kept once (the first).

    Chunks are extracted concurrently, so the merge happens after all of them answered, in chunk
    order: which chunk keeps a repeated fact never depends on which answer came back first.
    Returns the points and how many repeats were dropped.
    """
    kept: list[KnowledgePoint] = []
    seen: set[str] = set()
    dropped = 0
    for point in (point for points in per_chunk for point in points):
        key = normalize_quote(point.statement)
        if key in seen:
            dropped += 1
            continue
        seen.add(key)
        kept.append(point)
    return kept, dropped


def extraction_messages(*, name: str, chunk_id: str, heading: str, text: str) -> list[BaseMessage]:
    """The extraction prompt for one chunk (also the cache key's material)."""
    return [
        SystemMessage(EXTRACTOR_SYSTEM.format(name=name, dimensions=", ".join(DIMENSIONS))),
        HumanMessage(
            EXTRACTOR_USER.format(chunk_id=chunk_id, heading=heading, text=text, name=name)
        ),
    ]


async def extract_knowledge(
    model: BaseChatModel,
    *,
    name: str,
    chunk_id: str,
    heading: str,
    text: str,
    cache: JudgeCache | None = None,
    model_name: str = "",
) -> tuple[list[KnowledgePoint], int, LLMUsage]:
    """Verified knowledge points of one chunk, the number dropped, and the usage.

    With ``cache``, an extraction ``model_name`` already made for this exact prompt costs no
    call; the verification reruns on the cached answer.
    """
    prompt = extraction_messages(name=name, chunk_id=chunk_id, heading=heading, text=text)
    ask = cache or JudgeCache(None)
    extracted, usage = await ask.call_structured(model, model_name, ExtractedKnowledge, prompt)
    kept, dropped = verify_points(extracted, chunk_id=chunk_id, text=text)
    return kept, dropped, usage
