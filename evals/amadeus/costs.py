"""What ``personae amadeus eval-personality`` will cost, printed before the first interview.

Per character and questionnaire item: one interview through the role-play agent (with the
``amadeus`` method, Guided Selection's relevance checks on the retrieved chunks, the attribute
extractor, then the actor;
``naive`` retrieves without checks; ``none`` only acts), the Hallucination Score judge when
asked; then the rater: one call per ER batch (InCharacter's ``split_list`` per dimension) or per
OC batch of items. The rater prompts are rendered with the questions and an answer of typical
length and counted as usage is counted (:mod:`personae.agents.costs`); an interview's calls and
tokens are the constants below, those of the scripted run ``benchmarks/bench_estimates.py``
compares with (a persona of the CharacterRAG average length, 65,000 characters).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from personae.agents.amadeus.incharacter_rater import rater_messages
from personae.agents.costs import Estimate, message_tokens

if TYPE_CHECKING:
    from personae.evals.amadeus.personality_data import Item, Questionnaire

CHECKS_PER_ANSWER = {"amadeus": 9.0, "naive": 0.0, "none": 0.0}
"""Guided Selection relevance checks an answer makes (at most 30; fewer once the slot of 2
fills: about 9 when a quarter of the retrieved chunks are relevant)."""
ATTRIBUTE_CALLS = {"amadeus": 1, "naive": 0, "none": 0}
ATTRIBUTE_TOKENS = 400
"""The attribute extractor's call (belief, traits) an ``amadeus`` answer makes."""
CHECK_TOKENS = 520
"""One check: the question, one chunk, the instructions and the verdict."""
ACTOR_TOKENS = {"amadeus": 1100, "naive": 1500, "none": 350}
"""The actor's call: persona chunks (none for ``none``), the question, the answer."""
HS_TOKENS = 900
"""A Hallucination Score call: the question, the chunks used, the answer, the verdict."""
ANSWER = "I would say that depends on the day, but mostly yes: " * 3
"""An interview answer of typical length, as the rater reads it."""
RATING_OUTPUT_TOKENS = 120
OC_TOKENS_PER_ITEM = 160
"""An OC batch's cost per item: statement, question, answer and choice."""
OC_BATCH = 20


def _items(questionnaire: Questionnaire, limit: int | None) -> list[Item]:
    items: list[Item] = []
    for dimension in questionnaire.dimensions:
        chosen = questionnaire.by_dimension(dimension)
        items += chosen[:limit] if limit else chosen
    return items


def estimate_personality(
    questionnaire: Questionnaire,
    characters: int,
    *,
    method: str,
    assess: str,
    limit: int | None,
    hs: bool,
) -> Estimate:
    """Calls and tokens of interviewing ``characters`` characters and rating their answers."""
    from personae.evals.amadeus.personality_scoring import split_batches

    items = _items(questionnaire, limit)
    checks = CHECKS_PER_ANSWER.get(method, 0.0)
    attributes = ATTRIBUTE_CALLS.get(method, 0)
    per_interview_calls = checks + attributes + 1 + (1 if hs and method != "none" else 0)
    per_interview_tokens = checks * CHECK_TOKENS + ACTOR_TOKENS.get(method, 1100)
    per_interview_tokens += attributes * ATTRIBUTE_TOKENS
    per_interview_tokens += HS_TOKENS if hs and method != "none" else 0
    calls = per_interview_calls * len(items)
    tokens = per_interview_tokens * len(items)
    kind = "BFI" if questionnaire.kind == "BFI" else "16Personalities"
    if assess == "oc":
        calls += -(-len(items) // OC_BATCH)
        tokens += OC_TOKENS_PER_ITEM * len(items)
    else:
        for dimension in questionnaire.dimensions:
            mine = [item for item in items if item.dimension == dimension]
            for batch in split_batches(mine):
                calls += 1
                pairs: Sequence[tuple[str, str]] = [(item.question, ANSWER) for item in batch]
                prompt = rater_messages(
                    kind=kind,  # type: ignore[arg-type]
                    dimension=dimension,
                    description=questionnaire.descriptions[dimension],
                    pairs=pairs,
                )
                tokens += message_tokens(prompt) + RATING_OUTPUT_TOKENS
    detail = f"{characters} character(s) x {len(items)} items, {assess.upper()} rating"
    return Estimate(round(calls * characters), round(tokens * characters), detail)
