"""AMADEUS's Attribute Extractor: the character's beliefs/values and psychological traits.

The paper prints no prompt; this one follows its stated intent. From the chunks Guided
Selection kept (or, when it found none, the most similar chunks), infer the two of the six
CharacterRAG attributes that "directly impact the behavior of a character" (footnote 2):
*Belief and Value* ("fundamental principles and ideological orientations that inform ...
viewpoints and choices") and *Psychological Traits* ("personality, emotional states, personal
interests, and cognitive tendencies"), as they bear on the user's question, using the chunks
only. Runs on every query of the ``amadeus`` method.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.llm import InvalidAnswerError, LLMUsage, call_structured

PROMPT_VERSION = "amadeus-ae-1"

EXTRACTOR_SYSTEM = """You analyse the character {character} for a role-playing agent. From the
persona passages below, infer two attributes of {character} that bear on the question the agent
must answer:

- Belief and Value: the fundamental principles and ideological orientations that inform
  {character}'s viewpoints and choices;
- Psychological Traits: {character}'s personality, emotional states, personal interests and
  cognitive tendencies.

Write 2-4 sentences for each, in the third person, as general tendencies that help predict how
{character} would answer. Use only what the passages support: add no facts, events or names that
are not in them. If the passages say little, say what can be inferred and keep it short."""

EXTRACTOR_USER = """Question to {character}: {question}

Persona passages:
{chunks}"""


class CharacterAttributes(BaseModel):
    """The two behaviour-driving attributes, inferred from the selected passages only."""

    belief_and_value: str = Field(
        description="2-4 sentences: principles and ideological orientations behind the "
        "character's viewpoints and choices, as they bear on the question."
    )
    psychological_traits: str = Field(
        description="2-4 sentences: personality, emotional states, interests and cognitive "
        "tendencies, as they bear on the question."
    )


def extractor_messages(character: str, question: str, chunks: Sequence[str]) -> list[BaseMessage]:
    """The Attribute Extractor prompt over ``chunks`` (numbered in order)."""
    listed = "\n\n".join(f"[{i}] {chunk}" for i, chunk in enumerate(chunks, start=1))
    return [
        SystemMessage(EXTRACTOR_SYSTEM.format(character=character)),
        HumanMessage(EXTRACTOR_USER.format(character=character, question=question, chunks=listed)),
    ]


async def extract_attributes(
    model: BaseChatModel, character: str, question: str, chunks: Sequence[str]
) -> tuple[CharacterAttributes, LLMUsage]:
    """Belief and value, psychological traits, and what the call cost.

    An answer still invalid after retries degrades to no attribute (the role-play answers
    from the knowledge and the selected chunks alone), counted in ``usage.degraded``.
    """
    try:
        return await call_structured(
            model, CharacterAttributes, extractor_messages(character, question, chunks)
        )
    except InvalidAnswerError as failed:
        empty = CharacterAttributes(belief_and_value="", psychological_traits="")
        return empty, failed.usage + LLMUsage(degraded=1)
