"""The concept summarizer role: what the story has said about an entity, from keyword windows.

Two prompt sets. ``released`` (the paper's method): the released runner's
``update_concept_bookmark`` first extracts the concept's keyword from the question (one call,
once per bookmark), then updates the answer from the keyword's appearances, windows joined by
``---``. ``personae`` (ours): the proposer names the keyword; the note prompt is below.

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
from personae.memory.bookmarks.storyline import StoryAction, plain_text

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, update_concept_bookmark (commit
# 2489d17): the keyword extraction prompt, verbatim.
RELEASED_KEYWORD = """# Query
{query}
Extract the keyword of the searched concept from the query for string matching search, directly output it."""

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, update_concept_bookmark (commit
# 2489d17): the update prompt, verbatim (appearances joined by "\n---\n").
RELEASED_CONCEPT_UPDATE = """{keyword_appearance}

Based on the appearance of "{keyword}" above, update the answer to "{query}" below and directly output the new one.
Current Answer: {answer}"""


class ConceptKeyword(BaseModel):
    """The released keyword extraction's answer."""

    keyword: str = non_blank("The keyword of the searched concept, for string matching.")


async def extract_keyword(model: BaseChatModel, question: str) -> tuple[str, LLMUsage]:
    """The concept's keyword, as the released runner asks for it (once per bookmark).

    An answer still invalid after retries raises :class:`~personae.llm.InvalidAnswerError`.
    """
    prompt = RELEASED_KEYWORD.format(query=question)
    answer, usage = await call_structured(model, ConceptKeyword, [HumanMessage(prompt)])
    return " ".join(answer.keyword.strip().strip("\"'").split()), usage


async def update_concept_released(
    model: BaseChatModel,
    *,
    question: str,
    keyword: str,
    windows: Sequence[Sequence[StoryAction]],
    previous_answer: str,
) -> tuple[str, LLMUsage]:
    """The answer updated from the keyword's appearances (no windows: no call).

    ``windows`` in the order the runner ranks them, each shown as plain action texts.
    """
    if not windows:
        return previous_answer, LLMUsage()
    appearance = "\n---\n".join(plain_text(w) for w in windows)
    prompt = RELEASED_CONCEPT_UPDATE.format(
        keyword_appearance=appearance,
        keyword=keyword,
        query=question,
        answer=previous_answer or "unknown",
    )
    answer, usage = await call_structured(model, ConceptUpdate, [HumanMessage(prompt)])
    return answer.answer.strip(), usage


class ConceptUpdate(BaseModel):
    """The released update's answer."""

    answer: str = non_blank("The new answer.")


# Ours (--method bookmarks-personae): a note grown from numbered passages.
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
