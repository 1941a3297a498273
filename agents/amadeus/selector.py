"""Guided Selection's judge (AMADEUS Algorithm 1, line 6): can the character's attributes be inferred?

The paper prints no prompt. This one is written from the intent the paper states: "determine if
chunk c contains information from which the character's attributes can be inferred regarding
u". The point of Guided Selection is that a chunk may help even when it does not answer the
question: no chunk answers "My living and work spaces are clean and organized", yet "Megumin is
diligent." lets the role-play agent infer an answer. One call per examined chunk, a yes/no
verdict with a short reason kept for audits; temperature 0 is the caller's model setting.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.llm import InvalidAnswerError, LLMUsage, call_structured

PROMPT_VERSION = "amadeus-gs-1"
"""Changes whenever the prompt below changes (recorded in eval results)."""

SELECTOR_SYSTEM = """You help a role-playing agent that plays {character}. You receive a question
put to {character} and one passage from {character}'s persona document.

Decide whether the passage contains information from which {character}'s attributes relevant to
the question can be inferred: beliefs and values, personality, emotional tendencies, interests,
habits or typical behaviour. The passage does NOT need to answer the question. It is relevant when
it lets you infer how {character} would think, feel or act about what the question asks. Example:
no passage answers "My living and work spaces are clean and organized", but "Megumin is
diligent." lets one infer Megumin's answer, so that passage is relevant.

A passage that only names places, dates or other people, with nothing that reveals
{character}'s disposition on the matter of the question, is not relevant. Judge from the passage
alone; do not use outside knowledge about {character}."""

SELECTOR_USER = """Question to {character}: {question}

Passage:
\"\"\"
{chunk}
\"\"\"

Can {character}'s attributes regarding this question be inferred from the passage?"""


class RelevanceVerdict(BaseModel):
    """Whether one persona passage lets the character's attributes be inferred for the question."""

    reason: str = Field(description="One sentence: what in the passage allows or prevents it.")
    relevant: bool = Field(
        description="True when the character's attributes regarding the question can be "
        "inferred from the passage, even if the passage does not answer it."
    )


def selector_messages(character: str, question: str, chunk: str) -> list[BaseMessage]:
    """The Guided Selection prompt for one (question, chunk)."""
    return [
        SystemMessage(SELECTOR_SYSTEM.format(character=character)),
        HumanMessage(SELECTOR_USER.format(character=character, question=question, chunk=chunk)),
    ]


async def judge_chunk_relevance(
    model: BaseChatModel, character: str, question: str, chunk: str
) -> tuple[RelevanceVerdict, LLMUsage]:
    """One Guided Selection check: the verdict and what the call cost.

    A verdict still invalid after retries degrades to "not relevant" (the check moves on to
    the next chunk, as for a no), counted in ``usage.degraded``.
    """
    try:
        return await call_structured(
            model, RelevanceVerdict, selector_messages(character, question, chunk)
        )
    except InvalidAnswerError as failed:
        verdict = RelevanceVerdict(reason=f"degraded: {failed.reason[:200]}", relevant=False)
        return verdict, failed.usage + LLMUsage(degraded=1)
