"""The query planner: diversified search queries per profiling dimension (the paper's "plan" step).

The model proposes wording; the code guarantees coverage (every dimension gets at least one
query) and that each query names the character and franchise, so a weak model cannot narrow the
search to a few dimensions or drift to another character. Queries the code drops (beyond the
per-dimension cap, empty, or repeating another) are counted, so the profile can report them.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.characterhub.dimensions import DIMENSIONS, Dimension

DIMENSION_KEYWORDS: dict[str, str] = {
    "identity": "identity background origin",
    "appearance": "appearance looks",
    "ability": "abilities skills techniques",
    "relationship": "relationships family allies rivals",
    "experience": "history story events",
    "personality": "personality traits",
    "other": "trivia quotes",
}
"""Fallback keywords the code combines with the name when the model omits a dimension."""

PLANNER_SYSTEM = """You plan web and wiki searches to profile a fictional character.
For each dimension ({dimensions}) write {per_dimension} short, diverse search queries that combine
the character's name with profiling keywords for that dimension. Keep every query under 12 words.
Do not answer the questions; only plan the searches."""

PLANNER_USER = """Character: {name}
Franchise: {franchise}"""


class PlannedQuery(BaseModel):
    """One search query for one profiling dimension."""

    dimension: Dimension = Field(
        description="One of the dimension names given in the instructions."
    )
    query: str = Field(description="A short search query naming the character and keywords.")


class QueryPlan(BaseModel):
    """Search queries covering every profiling dimension."""

    queries: list[PlannedQuery] = Field(
        description="At least one query per dimension; several diverse ones when asked."
    )


def anchor_query(query: str, name: str, franchise: str | None) -> str:
    """``query`` with the character's name (and franchise) added when it lacks them."""
    text = " ".join(query.split())
    if name.casefold() not in text.casefold():
        text = f"{name} {text}"
    if franchise and franchise.casefold() not in text.casefold():
        text = f"{text} {franchise}"
    return text


def complete_plan(
    plan: QueryPlan, *, name: str, franchise: str | None, per_dimension: int
) -> tuple[list[PlannedQuery], int]:
    """Anchor every query, cap per dimension, fill missing dimensions; count what was dropped.

    Returns the queries to run and how many of the model's queries were not kept (empty,
    beyond ``per_dimension`` for their dimension, or repeating a kept one).
    """
    kept: list[PlannedQuery] = []
    seen: set[str] = set()
    from_model = 0
    for dimension in DIMENSIONS:
        mine = [q for q in plan.queries if q.dimension == dimension]
        texts = [anchor_query(q.query, name, franchise) for q in mine if q.query.strip()]
        fallback = not texts
        if fallback:
            texts = [anchor_query(DIMENSION_KEYWORDS[dimension], name, franchise)]
        taken = 0
        for text in texts:
            if taken == per_dimension:
                break
            if text.casefold() not in seen:
                seen.add(text.casefold())
                kept.append(PlannedQuery(dimension=dimension, query=text))
                taken += 1
        from_model += 0 if fallback else taken
    return kept, len(plan.queries) - from_model


async def plan_search_queries(
    model: BaseChatModel, *, name: str, franchise: str | None, per_dimension: int = 1
) -> tuple[list[PlannedQuery], LLMUsage, int]:
    """Ask the model for a query plan; the code guarantees every dimension is covered.

    Returns the queries, the usage, and how many of the model's queries were dropped. An
    answer still invalid after retries degrades to the code's own plan (the name with each
    dimension's keywords), counted in ``usage.degraded``.
    """
    messages = [
        SystemMessage(
            PLANNER_SYSTEM.format(dimensions=", ".join(DIMENSIONS), per_dimension=per_dimension)
        ),
        HumanMessage(PLANNER_USER.format(name=name, franchise=franchise or "(unknown)")),
    ]
    try:
        plan, usage = await call_structured(model, QueryPlan, messages)
    except InvalidAnswerError as failed:  # degrade: the code's own plan covers every dimension
        plan, usage = QueryPlan(queries=[]), failed.usage + LLMUsage(degraded=1)
    queries, dropped = complete_plan(
        plan, name=name, franchise=franchise, per_dimension=per_dimension
    )
    return queries, usage, dropped
