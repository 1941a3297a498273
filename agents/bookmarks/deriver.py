"""The bookmark deriver role: a child bookmark's first answer, written from its parent's answer.

The paper's derive step: when the matcher finds a candidate that is closely related but not the
same question, the new bookmark's answer "is generated from the parent bookmark's current
answer" and its sync point inherits the parent's; the sync that follows reads only the actions
after that point. Like the released code (``derive_bookmark_answer``), the model sees the
current scene, the parent's question and answer and the new question, and answers
conservatively, or "unknown" when the parent's answer is not enough (then the child starts
empty, still at the parent's position).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from personae.agents.answer_schemas import non_blank
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.bookmarks.storyline import StoryAction

# Released BOOKMARKS runner, src/bookmarks/bookmarks.py, derive_bookmark_answer (commit 2489d17):
# verbatim; {scene_block} is SCENE_BLOCK when a scene is given (always, in the graph).
DERIVE_PROMPT = """{scene_block}You are initializing a new bookmark from an existing bookmark.

# Existing bookmark query
{parent_question}

# Existing bookmark answer
{parent_answer}

# New bookmark query
{question}

Write an initial answer for the new bookmark using the existing bookmark answer as a basis.

Requirements:
- Be concise.
- Be conservative.
- Do not invent unsupported details.
- If the existing bookmark is not enough, output exactly: unknown

Return only the answer.
"""  # the runner's f-string ends with this newline
SCENE_BLOCK = "# Current Scene\n{scene}\n\n"

UNKNOWN = "unknown"


class DerivedAnswer(BaseModel):
    """The new bookmark's initial answer."""

    answer: str = non_blank('The concise initial answer, or exactly "unknown".')


async def derive_answer(
    model: BaseChatModel,
    *,
    question: str,
    parent_question: str,
    parent_answer: str,
    scene: Sequence[StoryAction] = (),
) -> tuple[str, LLMUsage]:
    """The child's answer from the parent's (``""`` when the model says unknown).

    ``parent_answer`` must be the parent's answer valid at its own position (at most the
    target), and ``scene`` the actions before the target: that is all the model sees. An
    answer still invalid after retries degrades to unknown (``""``), counted in
    ``usage.degraded``: the child starts empty at the parent's position.
    """
    shown = "\n".join(a.text for a in scene)
    prompt = DERIVE_PROMPT.format(
        scene_block=SCENE_BLOCK.format(scene=shown) if shown else "",
        parent_question=parent_question,
        parent_answer=parent_answer or UNKNOWN,
        question=question,
    )
    try:
        derived, usage = await call_structured(model, DerivedAnswer, [HumanMessage(prompt)])
    except InvalidAnswerError as failed:
        return "", failed.usage + LLMUsage(degraded=1)
    answer = derived.answer.strip()
    return ("" if answer.strip(" .\"'").casefold() == UNKNOWN else answer), usage
