"""The bookmark matcher: reuse an existing bookmark, derive from one, or start a new one.

The paper's "match" step for one proposed question. The candidates (already filtered by the
bank: same type, synced by the target, sharing a content word) are shown as ``B1..Bn``. The
answer is one choice from an enum built for the call (``none``, ``reuse B1``, ``derive B1``,
...), so the model can never point at a bookmark that is not a candidate, nor reuse one without
naming it; the code maps the id back. A choice still invalid after retries degrades to "none"
(a new bookmark), counted. Two shortcuts skip the model: no candidates means "none", and a
candidate asking the very same question (same content words) is reused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from personae.agents.answer_schemas import one_of, per_call_schema
from personae.agents.bookmarks.question_proposer import question_key
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.bookmarks.bookmark import Bookmark

Decision = Literal["reuse", "derive", "none"]

MATCHER_SYSTEM = """You manage a bank of bookmarks: questions about a story, each with its answer
so far. Given a new question and candidate bookmarks, decide:
- "reuse <id>": a candidate asks the SAME thing (its answer, brought up to date, answers the
  new question), e.g. "reuse B2".
- "derive <id>": a candidate is closely related and its answer is a useful starting point,
  but the new question asks something different, e.g. "derive B1".
- "none": no candidate helps; a new bookmark will be started from scratch.
Only use the ids listed."""

MATCHER_USER = """## New {type} question
{question}

## Candidate bookmarks
{candidates}"""


class MatchChoice(BaseModel):
    """How the new question relates to the candidates."""

    choice: str = Field(description='"none", or "reuse" / "derive" and a candidate id.')


@per_call_schema(maxsize=32)
def match_choice_schema(count: int) -> type[MatchChoice]:
    """``MatchChoice`` over candidates ``B1..B<count>``: an enum of every allowed choice."""
    ids = [f"B{i}" for i in range(1, count + 1)]
    choices = ["none", *(f"{d} {i}" for i in ids for d in ("reuse", "derive"))]
    return create_model(
        "MatchChoice",
        __base__=MatchChoice,
        choice=(
            one_of(choices),
            Field(description='"none", or "reuse <id>" / "derive <id>" for a candidate listed.'),
        ),
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
    try:
        answer, usage = await call_structured(model, match_choice_schema(len(by_id)), messages)
    except InvalidAnswerError as failed:  # degrade: a new bookmark, as for "none"
        return Match("none", None), failed.usage + LLMUsage(degraded=1)
    decision, _, short_id = answer.choice.partition(" ")
    if decision == "reuse":
        return Match("reuse", by_id[short_id]), usage
    if decision == "derive":
        return Match("derive", by_id[short_id]), usage
    return Match("none", None), usage
