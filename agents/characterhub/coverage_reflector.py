"""The coverage reflector: how well each dimension is covered and what to search next.

The model judges coverage; the code clamps scores, forces 0 for dimensions with no cited fact
(a model cannot call an empty dimension covered) and anchors follow-up queries on the name.
Follow-ups it drops (beyond the per-dimension cap, empty, or already run) are counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import bounded
from personae.agents.characterhub.evidence_summarizer import CitedFact
from personae.agents.characterhub.query_planner import anchor_query
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.characterhub.dimensions import DIMENSIONS, Dimension

REFLECTOR_SYSTEM = """You review notes gathered to profile the fictional character {name}
({franchise}). For each dimension ({dimensions}) score coverage from 0 (nothing) to 1 (enough to
write a faithful profile). For dimensions below {target}, propose up to {per_dimension} new search
queries that would find the missing facts; do not repeat queries already run."""

REFLECTOR_USER = """## Notes per dimension
{notes}

## Queries already run
{queries}"""


class DimensionCoverage(BaseModel):
    """Coverage of one dimension and follow-up queries when thin."""

    dimension: Dimension = Field(description="One of the profiling dimensions.")
    score: float = bounded(0, 1, "0 = nothing known, 1 = fully covered.", tenths=True)
    follow_up_queries: list[str] = Field(
        default_factory=list, description="New search queries for a thin dimension."
    )


class CoverageReview(BaseModel):
    """Coverage of every dimension."""

    dimensions: list[DimensionCoverage] = Field(description="One entry per dimension.")


def settle_coverage(
    review: CoverageReview,
    *,
    facts_per_dimension: Mapping[str, int],
    name: str,
    franchise: str | None,
    done_queries: Sequence[str],
    per_dimension: int,
) -> tuple[dict[str, float], list[tuple[str, str]], int]:
    """Scores for all dimensions, new ``(dimension, query)`` follow-ups, and how many dropped.

    A follow-up is dropped when it is empty, already run (or proposed twice), or beyond
    ``per_dimension`` for its dimension; the count goes to the profile's ``usage``.
    """
    scores: dict[str, float] = dict.fromkeys(DIMENSIONS, 0.0)
    follow_ups: list[tuple[str, str]] = []
    seen = {q.casefold() for q in done_queries}
    taken: dict[str, int] = {}
    proposed = 0
    for entry in review.dimensions:
        dimension = entry.dimension
        has_facts = facts_per_dimension.get(dimension, 0) > 0
        scores[dimension] = min(1.0, max(0.0, entry.score)) if has_facts else 0.0
        for query in entry.follow_up_queries:
            proposed += 1
            text = anchor_query(query, name, franchise)
            if taken.get(dimension, 0) == per_dimension:
                continue
            if query.strip() and text.casefold() not in seen:
                seen.add(text.casefold())
                follow_ups.append((dimension, text))
                taken[dimension] = taken.get(dimension, 0) + 1
    return scores, follow_ups, proposed - len(follow_ups)


def render_notes(facts_by_dimension: Mapping[str, Sequence[CitedFact]]) -> str:
    """One line per dimension: its facts with their ids, as the model reads them."""
    lines = []
    for dimension in DIMENSIONS:
        facts = facts_by_dimension.get(dimension, [])
        notes = "; ".join(f"{f.text} ({', '.join(f.source_ids)})" for f in facts)
        lines.append(f"{dimension}: {notes or '(nothing yet)'}")
    return "\n".join(lines)


async def review_coverage(
    model: BaseChatModel,
    *,
    name: str,
    franchise: str | None,
    facts_by_dimension: Mapping[str, Sequence[CitedFact]],
    done_queries: Sequence[str],
    target: float,
    per_dimension: int = 1,
) -> tuple[CoverageReview, LLMUsage]:
    """Ask the model to score coverage per dimension and propose follow-up queries.

    An answer still invalid after retries degrades to an empty review (every dimension scored
    0, no follow-up), counted in ``usage.degraded``.
    """
    messages = [
        SystemMessage(
            REFLECTOR_SYSTEM.format(
                name=name,
                franchise=franchise or "unknown franchise",
                dimensions=", ".join(DIMENSIONS),
                target=target,
                per_dimension=per_dimension,
            )
        ),
        HumanMessage(
            REFLECTOR_USER.format(
                notes=render_notes(facts_by_dimension), queries="\n".join(done_queries)
            )
        ),
    ]
    try:
        return await call_structured(model, CoverageReview, messages)
    except InvalidAnswerError as failed:
        return CoverageReview(dimensions=[]), failed.usage + LLMUsage(degraded=1)
