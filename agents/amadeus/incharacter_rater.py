"""InCharacter's assessors of interview answers: expert rating (ER) and option conversion (OC).

The AMADEUS paper evaluates personality "with an interview-based assessment (Wang et al.
2024b)", InCharacter, without saying which assessor; Personae defaults to InCharacter's expert
rating on anonymised batches (``interview_assess_batch_anonymous``). The prompts below are
ours, written from that protocol's intent (we do not copy InCharacter's prompt text):

- ER: a psychometrics expert reads 3-4 anonymised (question, answer) pairs of one dimension and
  rates the participant on it: for 16Personalities the percentage of each of the two poles
  (summing to 100), for BFI a score from 1 (not at all) to 5 (strongly).
- OC: each answer is converted to a choice on the item's scale (1-7 or 1-5, ``x`` when the
  participant gives no usable answer); the code then applies reverse keying by category.

Names are anonymised first: the character's aliases become ``<the participant>`` and the
interviewer ``<the experimenter>``, so the rater judges the answers, not a famous name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.llm import LLMUsage, call_structured

PROMPT_VERSION = "incharacter-ours-1"
PARTICIPANT = "<the participant>"
EXPERIMENTER = "<the experimenter>"

RATER_SYSTEM = """You are an expert in psychometrics and personality psychology. An experimenter
interviewed a participant with questions from a personality questionnaire. You read a few of
the participant's answers and assess the participant on one personality dimension.

{description}

Base the assessment only on what the answers show about the participant's thoughts, feelings
and behaviour. Start with a short analysis of the evidence, then give the rating."""

MBTI_TASK = """Rate the participant on the {dimension} dimension: give the percentage of
{first} and of {second}, as two numbers that sum to 100 (50/50 when the answers show no
preference)."""

BFI_TASK = """Rate the participant's {dimension} on a scale from 1 to 5: 1 = not {dimension} at
all, 3 = neutral, 5 = strongly {dimension}. Decimals are allowed."""

CONVERT_SYSTEM = """You convert interview answers into questionnaire choices. For each numbered
statement you get the conversation in which an experimenter asked the participant about it.
Decide how strongly the participant agrees with the statement, on this scale:
{scale}
Answer "x" for an item only when the participant gives no usable answer (refuses, or talks about
something else)."""

MBTI_SCALE = (
    "1 = fully disagree, 2 = disagree, 3 = somewhat disagree, 4 = neutral, "
    "5 = somewhat agree, 6 = agree, 7 = fully agree"
)
BFI_SCALE = (
    "1 = disagree strongly, 2 = disagree a little, 3 = neither agree nor disagree, "
    "4 = agree a little, 5 = agree strongly"
)


class PoleRating(BaseModel):
    """An expert's rating of one 16Personalities dimension as two percentages."""

    analysis: str = Field(description="Short analysis of what the answers show.")
    first_percent: float = Field(ge=0, le=100, description="Percentage of the first pole.")
    second_percent: float = Field(ge=0, le=100, description="Percentage of the second pole.")


class ScaleRating(BaseModel):
    """An expert's rating of one BFI dimension on 1-5."""

    analysis: str = Field(description="Short analysis of what the answers show.")
    score: float = Field(ge=1, le=5, description="1 = not at all, 3 = neutral, 5 = strongly.")


class ItemChoice(BaseModel):
    """The choice for one numbered statement."""

    item: str = Field(description="The statement's number, as given.")
    choice: Literal["1", "2", "3", "4", "5", "6", "7", "x"] = Field(
        description="The scale point, or x when there is no usable answer."
    )


class ChoiceConversion(BaseModel):
    """Choices for every numbered statement."""

    choices: list[ItemChoice] = Field(description="One entry per statement, same numbers.")


def anonymise(text: str, aliases: Sequence[str], experimenter: str | None) -> str:
    """Replace the character's aliases and the interviewer's name by neutral placeholders."""
    for alias in sorted({a for a in aliases if a.strip()}, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(alias)}(?!\w)", PARTICIPANT, text)
    if experimenter and experimenter.strip():
        text = re.sub(rf"(?<!\w){re.escape(experimenter)}(?!\w)", EXPERIMENTER, text)
    return text


def _dialogue(pairs: Sequence[tuple[str, str]]) -> str:
    return "\n\n".join(
        f"[{i}] {EXPERIMENTER}: {question}\n{PARTICIPANT}: {answer}"
        for i, (question, answer) in enumerate(pairs, start=1)
    )


def rater_messages(
    *,
    kind: Literal["16Personalities", "BFI"],
    dimension: str,
    description: str,
    pairs: Sequence[tuple[str, str]],
) -> list[BaseMessage]:
    """The ER prompt for one batch of anonymised (question, answer) pairs."""
    if kind == "16Personalities":
        first, second = dimension.split("/")
        task = MBTI_TASK.format(dimension=dimension, first=first, second=second)
    else:
        task = BFI_TASK.format(dimension=dimension)
    return [
        SystemMessage(RATER_SYSTEM.format(description=description.strip()) + "\n\n" + task),
        HumanMessage(_dialogue(pairs)),
    ]


def _sums_to_100(rating: PoleRating) -> None:
    if abs(rating.first_percent + rating.second_percent - 100) > 1:
        raise ValueError("the two percentages must sum to 100")


async def rate_batch(
    model: BaseChatModel,
    *,
    kind: Literal["16Personalities", "BFI"],
    dimension: str,
    description: str,
    pairs: Sequence[tuple[str, str]],
) -> tuple[float, str, LLMUsage]:
    """One batch's dimension score (16P: percentage of the first pole; BFI: 1-5) and analysis."""
    messages = rater_messages(kind=kind, dimension=dimension, description=description, pairs=pairs)
    if kind == "16Personalities":
        rating, used = await call_structured(model, PoleRating, messages, check=_sums_to_100)
        return rating.first_percent, rating.analysis, used
    scale, used = await call_structured(model, ScaleRating, messages)
    return scale.score, scale.analysis, used


async def convert_choices(
    model: BaseChatModel,
    *,
    kind: Literal["16Personalities", "BFI"],
    statements: Sequence[tuple[str, str, str, str]],
) -> tuple[dict[str, float | None], LLMUsage]:
    """OC: ``{item id: choice or None for x}`` for ``(id, statement, question, answer)``."""
    scale = MBTI_SCALE if kind == "16Personalities" else BFI_SCALE
    top = 7 if kind == "16Personalities" else 5
    body = "\n\n".join(
        f"[{item_id}] Statement: {statement}\n{EXPERIMENTER}: {question}\n{PARTICIPANT}: {answer}"
        for item_id, statement, question, answer in statements
    )
    wanted = {item_id for item_id, *_ in statements}

    def check(result: ChoiceConversion) -> None:
        given = [c.item.strip().strip("[]") for c in result.choices]
        if set(given) != wanted or len(given) != len(wanted):
            raise ValueError(f"give exactly one choice for each of items {sorted(wanted)}")
        if any(c.choice != "x" and int(c.choice) > top for c in result.choices):
            raise ValueError(f"choices go from 1 to {top} (or x)")

    messages = [SystemMessage(CONVERT_SYSTEM.format(scale=scale)), HumanMessage(body)]
    result, used = await call_structured(model, ChoiceConversion, messages, check=check)
    return {
        c.item.strip().strip("[]"): None if c.choice == "x" else float(c.choice)
        for c in result.choices
    }, used
