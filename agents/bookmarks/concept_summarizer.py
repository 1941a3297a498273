"""The concept summarizer role: what the story has said about an entity, from keyword windows.

Concept bookmarks name an entity ("What is the SOS Brigade?"). The sync operator finds the
entity's mentions in the unseen actions and passes the best context windows here, with the
previous answer, so the answer grows with the story instead of being rebuilt from scratch.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from personae.agents.answer_schemas import non_blank
from personae.llm import LLMUsage, call_structured
from personae.memory.bookmarks.storyline import StoryAction

CONCEPT_SYSTEM = """You maintain a short note that answers a question about an entity of a
story ("{keyword}"). You get the current note and new passages of the story that mention the
entity, in story order. Write the updated note: keep what still holds, add what the passages
reveal, and when they contradict the note, trust the later passages. Use only the note and the
passages; two to five sentences."""

CONCEPT_USER = """## Question
{question}

## Current note
{answer}

## New passages mentioning "{keyword}" (story order)
{windows}

Write the updated note."""


class ConceptAnswer(BaseModel):
    """The updated note about the entity."""

    answer: str = non_blank("Two to five sentences answering the question.")


def render_windows(windows: Sequence[Sequence[StoryAction]]) -> str:
    """Each window as a numbered passage of rendered actions."""
    return "\n\n".join(
        f"Passage {n}:\n" + "\n".join(a.render() for a in window)
        for n, window in enumerate(windows, start=1)
    )


async def summarize_concept(
    model: BaseChatModel,
    *,
    question: str,
    keyword: str,
    windows: Sequence[Sequence[StoryAction]],
    previous_answer: str,
) -> tuple[str, LLMUsage]:
    """The note updated from ``windows`` (one strong-model call; no windows -> no call)."""
    if not windows:
        return previous_answer, LLMUsage()
    messages = [
        SystemMessage(CONCEPT_SYSTEM.format(keyword=keyword)),
        HumanMessage(
            CONCEPT_USER.format(
                question=question,
                answer=previous_answer or "(nothing known yet)",
                keyword=keyword,
                windows=render_windows(windows),
            )
        ),
    ]
    answer, usage = await call_structured(model, ConceptAnswer, messages)
    return answer.answer.strip(), usage
