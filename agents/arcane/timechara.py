"""The TimeChara mode's two narrative experts (Table 33): temporal, then spatial, then a hint.

Neither expert prompt contains the query chapter, so their answers are cached per (probe,
model) and reused across phases; only the comparison with each phase's query chapter differs.
Expert answers are free text ending in a ``Chapter: N`` / ``Presence: ...`` line; anything
unparseable counts as unknown / present (spec default 26).
"""

from __future__ import annotations

import re
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

# Table 33 (ARCANE App. P.3): TimeCHARA two-stage hint pipeline, verbatim.
EXPERT_SYSTEM = "You are a helpful and accurate assistant."
TEMPORAL_USER = """You will be given a scenario and a question from the novel "{novel}". The novel has {total_chapters} chapters. Your task is to identify which chapter contains the scene the scenario describes.
***
[Scenario]
{scenario}
[Question]
{question}
***
[Steps]
1. Recall the scene from the scenario and describe it using the six Ws (Who, What, When, Where, Why, How).
2. Identify which chapter number (1-{total_chapters}) that contains this scene. If you cannot determine it, output "unknown".

First, reason step by step. Then on its own final line, output ONLY
"Chapter: N" (an integer) or "Chapter: unknown"."""
SPATIAL_USER = """You will be given a scenario, a question, and a character from "{novel}". Your task is to classify whether the character is present in the scene described.
***
[Scenario]
{scenario}
[Question]
{question}
[Character]
{character}
***
[Steps]
1. Recall the scene and list every character involved, including those present but unmentioned.
2. Decide whether {character} is among them.

First, reason step by step. Then on its own final line, output ONLY
"Presence: present" or "Presence: absent"."""
FUTURE_HINT = (
    "Note that the period of the question is in the future relative to {character}'s time "
    "point. Therefore, you should not answer the question or mention any facts that occurred "
    "after {character}'s time point."
)
ABSENT_HINT = (
    "Note that {character} had not participated in the scene described in the question. "
    "Therefore, you should not imply that {character} was present in the scene."
)

Presence = Literal["present", "absent"]


def parse_chapter(answer: str) -> int | None:
    """The chapter from the last ``Chapter: N`` line; ``None`` for unknown or unparseable."""
    found = re.findall(r"(?im)^\W*chapter\s*:\s*(\w+)", answer)
    if not found or not found[-1].isdigit():
        return None
    return int(found[-1])


def parse_presence(answer: str) -> Presence:
    """``absent`` only when the last ``Presence:`` line says so; otherwise ``present``."""
    found = re.findall(r"(?im)^\W*presence\s*:\s*(\w+)", answer)
    return "absent" if found and found[-1].lower() == "absent" else "present"


def temporal_messages(
    *, novel: str, total_chapters: int, scenario: str, question: str
) -> list[BaseMessage]:
    """The temporal expert's call (T = 0 is the model's setting)."""
    user = TEMPORAL_USER.format(
        novel=novel, total_chapters=total_chapters, scenario=scenario, question=question
    )
    return [SystemMessage(content=EXPERT_SYSTEM), HumanMessage(content=user)]


def spatial_messages(
    *, novel: str, character: str, scenario: str, question: str
) -> list[BaseMessage]:
    """The spatial expert's call."""
    user = SPATIAL_USER.format(
        novel=novel, character=character, scenario=scenario, question=question
    )
    return [SystemMessage(content=EXPERT_SYSTEM), HumanMessage(content=user)]


def make_hint(
    *, character: str, predicted: int | None, presence: Presence | None, query_chapter: int
) -> str | None:
    """Future hint if the scene is after ``query_chapter``; absent hint; else none."""
    if predicted is not None and predicted > query_chapter:
        return FUTURE_HINT.format(character=character)
    if presence == "absent":
        return ABSENT_HINT.format(character=character)
    return None
