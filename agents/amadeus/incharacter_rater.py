"""Our assessors of interview answers, after InCharacter's: expert rating (ER) and option conversion.

The AMADEUS paper evaluates personality "with an interview-based assessment (Wang et al.
2024b)", InCharacter, without saying which assessor; the default (``--assess er``) is
InCharacter's expert rating with its own prompts (:mod:`personae.agents.amadeus.incharacter_expert`).
The prompts below are ours, written from that protocol's intent, and run only when named:
``--assess er-personae`` (one percentage instead of InCharacter's two) and ``--assess oc``
(InCharacter's option-conversion prompts are not in the shipped questionnaires):

- ER: a psychometrics expert reads 3-4 anonymised (question, answer) pairs of one dimension and
  rates the participant on it: for 16Personalities the percentage of the first pole (0-100; the
  second pole is the rest, so the two always sum to 100), for BFI a score from 1 (not at all)
  to 5 (strongly).
- OC: each answer is converted to a choice on the item's scale (1-7 or 1-5, ``x`` when the
  participant gives no usable answer); the code then applies reverse keying by category. The
  item numbers are the answer schema's required keys and the choices an enum of the scale's
  points, so a schema-following model cannot skip, invent or overshoot one; a batch still
  invalid after retries is converted item by item, and an item still invalid alone is left
  out (counted in ``usage.degraded``).

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

from personae.agents.answer_schemas import (
    answers_by_key,
    ask_in_batch_or_alone,
    bounded,
    keyed_answers,
    one_of,
)
from personae.llm import LLMUsage, call_structured

PROMPT_VERSION = "incharacter-ours-1"
PARTICIPANT = "<the participant>"
EXPERIMENTER = "<the experimenter>"

# Ours (``--assess er-personae``): InCharacter's expert-rating protocol in our wording.
RATER_SYSTEM = """You are an expert in psychometrics and personality psychology. An experimenter
interviewed a participant with questions from a personality questionnaire. You read a few of
the participant's answers and assess the participant on one personality dimension.

{description}

Base the assessment only on what the answers show about the participant's thoughts, feelings
and behaviour. Start with a short analysis of the evidence, then give the rating."""

MBTI_TASK = """Rate the participant on the {dimension} dimension: give the percentage of
{first}, from 0 to 100 (the rest is {second}; 50 when the answers show no preference)."""

BFI_TASK = """Rate the participant's {dimension} on a scale from 1 to 5: 1 = not {dimension} at
all, 3 = neutral, 5 = strongly {dimension}. Decimals are allowed."""

# Ours (``--assess oc``): InCharacter's option-conversion protocol in our wording.
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
    """An expert's rating of one 16Personalities dimension: the first pole's percentage."""

    analysis: str = Field(description="Short analysis of what the answers show.")
    first_percent: float = bounded(
        0, 100, "Percentage of the first pole (the second pole is the rest)."
    )


class ScaleRating(BaseModel):
    """An expert's rating of one BFI dimension on 1-5."""

    analysis: str = Field(description="Short analysis of what the answers show.")
    score: float = bounded(1, 5, "1 = not at all, 3 = neutral, 5 = strongly.", tenths=True)


Choice = Literal["1", "2", "3", "4", "5", "6", "7", "x"]
"""Every scale point a questionnaire may have, and ``x``: no usable answer."""


def choice_conversion_schema(items: Sequence[str], top: int) -> type[BaseModel]:
    """``ChoiceConversion`` for these statement numbers: one choice on 1..``top`` or x each."""
    return keyed_answers(
        "ChoiceConversion",
        "Choices for every numbered statement.",
        tuple(items),
        one_of([*(str(n) for n in range(1, top + 1)), "x"]),
        "The choice for statement [{key}]: a scale point, or x when there is no usable answer.",
    )


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


async def rate_batch(
    model: BaseChatModel,
    *,
    kind: Literal["16Personalities", "BFI"],
    dimension: str,
    description: str,
    pairs: Sequence[tuple[str, str]],
) -> tuple[float, str, LLMUsage]:
    """One batch's dimension score (16P: percentage of the first pole; BFI: 1-5) and analysis.

    An answer still invalid after retries raises :class:`~personae.llm.InvalidAnswerError`:
    the evaluation scores the dimension from its other batches.
    """
    messages = rater_messages(kind=kind, dimension=dimension, description=description, pairs=pairs)
    if kind == "16Personalities":
        rating, used = await call_structured(model, PoleRating, messages)
        return rating.first_percent, rating.analysis, used
    scale, used = await call_structured(model, ScaleRating, messages)
    return scale.score, scale.analysis, used


async def convert_choices(
    model: BaseChatModel,
    *,
    kind: Literal["16Personalities", "BFI"],
    statements: Sequence[tuple[str, str, str, str]],
) -> tuple[dict[str, float | None], LLMUsage]:
    """OC: ``{item id: choice or None for x}`` for ``(id, statement, question, answer)``.

    Items no valid choice came for, even converted alone, are left out (``usage.degraded``).
    """
    scale = MBTI_SCALE if kind == "16Personalities" else BFI_SCALE
    top = 7 if kind == "16Personalities" else 5
    by_id = {
        item_id: (statement, question, answer)
        for item_id, statement, question, answer in statements
    }

    async def ask(ids: Sequence[str]) -> tuple[dict[str, float | None], LLMUsage]:
        body = "\n\n".join(
            f"[{i}] Statement: {by_id[i][0]}\n{EXPERIMENTER}: {by_id[i][1]}\n"
            f"{PARTICIPANT}: {by_id[i][2]}"
            for i in ids
        )
        messages = [SystemMessage(CONVERT_SYSTEM.format(scale=scale)), HumanMessage(body)]
        result, used = await call_structured(model, choice_conversion_schema(ids, top), messages)
        choices = answers_by_key(result)
        return {i: None if c == "x" else float(c) for i, c in choices.items()}, used

    return await ask_in_batch_or_alone(list(by_id), ask)
