"""The bookmark matcher: reuse an existing bookmark, derive from one, or start a new one.

The paper's "match" step for one proposed question. The candidates (already filtered by the
bank: same type, synced by the target, sharing a content word) are shown as ``B1..Bn``; the code
maps the chosen id back and rejects ids it did not give, so the model can never point at a
bookmark that is not a candidate. Two shortcuts skip the model: no candidates means "none", and a
candidate asking the very same question (same content words) is reused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.bookmarks.question_proposer import question_key
from personae.llm import LLMUsage, call_structured
from personae.memory.bookmarks.bookmark import Bookmark

Decision = Literal["reuse", "derive", "none"]

MATCHER_SYSTEM = """You manage a bank of bookmarks: questions about a story, each with its answer
so far. Given a new question and candidate bookmarks, decide:
- "reuse": a candidate asks the SAME thing (its answer, brought up to date, answers the new
  question). Give its id.
- "derive": a candidate is closely related and its answer is a useful starting point, but the
  new question asks something different. Give its id.
- "none": no candidate helps; a new bookmark will be started from scratch.
Only use the ids listed."""

MATCHER_USER = """## New {type} question
{question}

## Candidate bookmarks
{candidates}"""


class MatchChoice(BaseModel):
    """How the new question relates to the candidates."""

    decision: Decision = Field(description='"reuse", "derive" or "none".')
    candidate: str | None = Field(
        default=None, description='The chosen candidate id (e.g. "B2"); empty for "none".'
    )


@dataclass(frozen=True)
class Match:
    """The matcher's decision with the candidate mapped back to a real bookmark."""

    decision: Decision
    bookmark: Bookmark | None
    """The reused or parent bookmark; ``None`` for "none"."""


def _candidate_line(short_id: str, bookmark: Bookmark, target: int) -> str:
    answer = bookmark.answer_at(min(bookmark.position, target)) or "(unknown so far)"
    return f"{short_id}: Q: {bookmark.question} | A: {answer}"


async def match_question(
    model: BaseChatModel,
    *,
    question: str,
    type: str,
    candidates: Sequence[Bookmark],
    target: int,
) -> tuple[Match, LLMUsage]:
    """Classify ``question`` against ``candidates`` as reuse / derive / none.

    Answers shown are those valid at ``min(candidate position, target)``, so nothing a
    candidate learned at or after ``target`` reaches the prompt.
    """
    if not candidates:
        return Match("none", None), LLMUsage()
    same = [b for b in candidates if question_key(b.question) == question_key(question)]
    if same:
        return Match("reuse", same[0]), LLMUsage()
    by_id = {f"B{i}": bookmark for i, bookmark in enumerate(candidates, start=1)}

    def known_id(choice: MatchChoice) -> None:
        if choice.decision != "none" and (choice.candidate or "").strip() not in by_id:
            raise ValueError(
                f"{choice.decision!r} needs one of the ids {', '.join(by_id)}; "
                f"got {choice.candidate!r}"
            )

    messages = [
        SystemMessage(MATCHER_SYSTEM),
        HumanMessage(
            MATCHER_USER.format(
                type=type,
                question=question,
                candidates="\n".join(_candidate_line(i, b, target) for i, b in by_id.items()),
            )
        ),
    ]
    choice, usage = await call_structured(model, MatchChoice, messages, check=known_id)
    if choice.decision == "none":
        return Match("none", None), usage
    return Match(choice.decision, by_id[(choice.candidate or "").strip()]), usage
