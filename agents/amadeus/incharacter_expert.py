"""InCharacter's expert rating (ER), its prompts verbatim: the assessor behind AMADEUS Tables 4-5.

AMADEUS evaluates personality "with an interview-based assessment (Wang et al. 2024b)",
InCharacter, whose default assessor is expert rating on anonymised batches
(``interview_assess_batch_anonymous`` in Neph0s/InCharacter, ``code/personality_tests.py``,
prompts in ``code/prompts.py``; MIT licence, the same source as the shipped questionnaires).
The messages here are built as that function builds them: the background template and the
output format (two percentages summing to 100 for 16Personalities, one score on the scale for
BFI) as the system prompt, "Our conversation is as follows:" and the numbered
``experimenter: 「question」`` / ``participant: 「answer」`` turns as the input, every alias of
the character replaced by ``<the participant>`` and the interviewer by ``<the experimenter>``
(plain replacement, as InCharacter does), the first "I " marked as the experimenter's, its
list of "as an AI" phrases removed, and its extra sentence for Conscientiousness.

What differs, because the answer is a structured call: the JSON InCharacter asks for in the
prompt is the answer schema (``analysis`` and ``result``; a 16Personalities result keeps its
two pole keys and its percent signs, whole percentages), where InCharacter's code asserts that
the two percentages sum to 100 a pair that does not is scaled to 100 (30 % / 70 % is read as
InCharacter reads it), and where it falls back to the neutral score on a BFI answer it cannot
read, the schema bounds the score and an answer still invalid after retries is left out and
counted.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, create_model

from personae.agents.answer_schemas import CLOSED, bounded, one_of
from personae.llm import LLMUsage, call_structured
from personae.process_caches import clears_on_reset

PROMPT_VERSION = "incharacter-er-1"
PARTICIPANT = "<the participant>"
EXPERIMENTER = "<the experimenter>"

# InCharacter, code/prompts.py, prompts["general"]["background_template"], verbatim.
BACKGROUND_TEMPLATE = """You are an expert in Psychometrics, especially {}. I am conducting the {} test on someone. I am gauging his/her position on the {} dimension through a series of open-ended questions. For clarity, here's some background this particular dimension:
===
{}
===

My name is {}. I've invited a participant, {}, and we had many conversations in {}. I will input the conversations.

Please help me assess {}'s score within the {} dimension of {}. 
"""  # noqa: E501

# InCharacter, code/prompts.py, prompts["general"]["two_score_output"], verbatim.
TWO_SCORE_OUTPUT = """You should provide the percentage of each category, which sums to 100%, e.g., 30% A and 70% B. 
Please output in the following json format:
===
{{
    "analysis": <your analysis based on the conversations>,
    "result": {{ "{}": <percentage 1>, "{}": <percentage 2> }} (The sum of percentage 1 and percentage 2 should be 100%. Output with percent sign.) 
}}"""  # noqa: E501

# InCharacter, code/prompts.py, prompts["general"]["one_score_output"], verbatim.
ONE_SCORE_OUTPUT = """You should provide the score of {} in terms of {}, which is a number between {} and {}. {} denotes 'not {} at all', {} denotes 'neutral', and {} denotes 'strongly {}'. Other numbers in this range represent different degrees of '{}'. 
Please output in the following json format:
===
{{
    "analysis": <your analysis based on the conversations>,
    "result": <your score>
}}"""  # noqa: E501

# InCharacter, code/personality_tests.py, assess(): the lines it adds around the templates.
MBTI_NAME = ("16Personalities", "16Personalities (highly similar to MBTI)")
CONSCIENTIOUSNESS = (
    "Other numbers in this range represent different degrees of 'Conscientiousness'.",
    "Other numbers in this range represent different degrees of 'Conscientiousness'. You must "
    "give a score, and you are not allowed to give answers like 'N/A' and 'not applicable'.",
)
AI_PHRASES = (
    "as an AI language model,",
    "As an AI language model,",
    "As an AI,",
    "as an AI,",
    "I am an AI language model,",
    "being an AI,",
)
LANGUAGES = {"zh": "Chinese", "en": "English"}
PERCENTAGES = tuple(f"{n}%" for n in range(101))
"""Whole percentages with their percent sign, as the prompt asks ("Output with percent sign"):
an enum a grammar enforces, where InCharacter parsed any number."""


@functools.cache
def pole_rating_schema(first: str, second: str) -> type[BaseModel]:
    """``{"analysis": ..., "result": {first: "NN%", second: "NN%"}}``, the JSON of the prompt."""
    percent: Any = (one_of(PERCENTAGES), ...)
    result = create_model(
        "InCharacterPercentages",
        __config__=CLOSED,
        __doc__="The two categories' percentages.",
        **{first: percent, second: percent},
    )
    return create_model(
        "InCharacterPoleRating",
        __config__=CLOSED,
        __doc__="InCharacter's two-score output.",
        analysis=(str, ...),
        result=(result, ...),
    )


clears_on_reset(
    "agents.amadeus.incharacter_expert.pole_rating_schema", pole_rating_schema.cache_clear
)


@functools.cache
def scale_rating_schema(low: int, high: int) -> type[BaseModel]:
    """``{"analysis": ..., "result": score}`` with the score within the questionnaire's range."""
    return create_model(
        "InCharacterScaleRating",
        __config__=CLOSED,
        __doc__="InCharacter's one-score output.",
        analysis=(str, ...),
        result=(float, bounded(low, high, tenths=True)),
    )


clears_on_reset(
    "agents.amadeus.incharacter_expert.scale_rating_schema", scale_rating_schema.cache_clear
)


def percentage(text: str) -> float:
    """``"30%"`` -> 30.0 (InCharacter: ``float(str(v).strip("%"))``)."""
    return float(text.strip().rstrip("%").strip())


def speaker_turn(name: str, response: str, aliases: Sequence[str]) -> str:
    """The answer as InCharacter's ChatHaruhi agents give it: ``name: 「text」``.

    InCharacter prefixes an answer that has no speaker with the character's name; an answer
    already starting with an alias and a colon is kept.
    """
    if any(response.startswith(f"{a}{colon}") for a in aliases for colon in (":", "：")):
        return response
    return f"{name}: 「{response.strip('「」 :')}」"


def expert_messages(
    *,
    questionnaire: str,
    dimension: str,
    description: str,
    scale: tuple[int, int],
    language: str,
    experimenter: str,
    aliases: Sequence[str],
    pairs: Sequence[tuple[str, str]],
) -> list[BaseMessage]:
    """InCharacter's ER messages for one batch of (question, answer) pairs of ``dimension``."""
    name = aliases[0]
    background = BACKGROUND_TEMPLATE.format(
        questionnaire,
        questionnaire,
        dimension,
        description,
        experimenter,
        name,
        LANGUAGES[language],
        name,
        dimension,
        questionnaire,
    )
    if questionnaire == MBTI_NAME[0]:
        background = background.replace(*MBTI_NAME, 1)
        first, second = dimension.split("/")
        output = TWO_SCORE_OUTPUT.format(first, second)
    else:
        low, high = scale
        neutral: float = (low + high) / 2
        shown = int(neutral) if neutral == int(neutral) else neutral
        output = ONE_SCORE_OUTPUT.format(
            dimension, questionnaire, low, high, low, dimension, shown, high, dimension, dimension
        )
    system = background + output
    conversations = "".join(
        f"{i}.\n{experimenter}: 「{question}」\n{speaker_turn(name, answer, aliases)}\n"
        for i, (question, answer) in enumerate(pairs, start=1)
    )
    user = "Our conversation is as follows:\n" + conversations + "\n"
    for alias in sorted(set(aliases), key=len, reverse=True):
        system = system.replace(alias, PARTICIPANT)
        user = user.replace(alias, PARTICIPANT)
    system = system.replace(experimenter, EXPERIMENTER)
    user = user.replace(experimenter, EXPERIMENTER)
    system = system.replace("I ", f"I ({EXPERIMENTER}) ", 1)
    user = user.replace(name, PARTICIPANT)
    for phrase in AI_PHRASES:
        user = user.replace(phrase, "")
    system = system.replace(*CONSCIENTIOUSNESS, 1)
    return [SystemMessage(system), HumanMessage(user)]


async def rate_batch(
    model: BaseChatModel,
    *,
    kind: Literal["16Personalities", "BFI"],
    questionnaire: str,
    dimension: str,
    description: str,
    scale: tuple[int, int],
    language: str,
    experimenter: str,
    aliases: Sequence[str],
    pairs: Sequence[tuple[str, str]],
) -> tuple[float, str, LLMUsage]:
    """One batch's score (16Personalities: the first pole's percentage; BFI: on the scale).

    An answer still invalid after retries raises :class:`~personae.llm.InvalidAnswerError`.
    """
    messages = expert_messages(
        questionnaire=questionnaire,
        dimension=dimension,
        description=description,
        scale=scale,
        language=language,
        experimenter=experimenter,
        aliases=aliases,
        pairs=pairs,
    )
    if kind == "16Personalities":
        first, second = dimension.split("/")
        rating, used = await call_structured(model, pole_rating_schema(first, second), messages)
        result = rating.result  # type: ignore[attr-defined]
        share = first_share(percentage(getattr(result, first)), percentage(getattr(result, second)))
        return share, str(rating.analysis), used  # type: ignore[attr-defined]
    scored, used = await call_structured(model, scale_rating_schema(*scale), messages)
    return float(scored.result), str(scored.analysis), used  # type: ignore[attr-defined]


def first_share(first: float, second: float) -> float:
    """The first pole's percentage of the two.

    InCharacter asserts they sum to 100 and takes the first; a pair that does not is scaled to
    100 here, and 0 % / 0 % is no preference, 50.
    """
    total = first + second
    return 50.0 if total == 0 else 100 * first / total
