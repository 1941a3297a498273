"""The question proposer: K typed questions whose answers would help the character act next.

The paper's "propose" step. The model suggests questions; the code keeps at most K, only the
three known types, no duplicates, no re-asks of questions already answered "unknown" for this
character, and concept questions only when their keyword is an entity that really occurs in the
scene or among the characters seen so far (a model cannot send the concept scan after a name
it invented).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.bookmarks.actor import render_scene, story_label
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.bookmarks.lexical import tokens
from personae.memory.bookmarks.storyline import ActingFormat, StoryAction

NEAR_DUPLICATE = 0.8
"""Word-set Jaccard similarity from which two questions count as the same question."""

FILLER_WORDS = frozenset(
    "a an the s t now currently right just also still usually often tend tends typically "
    "generally".split()
)
"""Words that do not change what a question asks (question words like who/where do)."""

PROPOSER_SYSTEM = """You help {character}, a character in {story}, decide what to do next.
Propose up to {k} questions whose answers, looked up in the story so far, would most help
predict {character}'s very next {target} in the current scene. Each question has a type:
- "behavioral": a GENERAL pattern of {character} that stays useful in many scenes, e.g.
  "How does {character} usually react when someone refuses a request?" (no scene details).
- "state": the situation at this exact point of the story, e.g. "Where is {character} now and
  who is with them?".
- "concept": about one named entity (person, place, group, object) that appears in the scene or
  the character list; give that exact name as the keyword.
Ask about the story world, its characters and events, not about information the scene already
gives. Once the content to express is clear, also ask how {character} generally expresses it.
Name every subject explicitly (no "she", "they", "there", "that"). Ask different things; do not
answer them."""

PROPOSER_USER = """## Characters seen so far
{characters}

## Questions already found unanswerable (do not ask these again)
{do_not_ask}

## The scene so far (most recent last)
{scene}

Propose up to {k} typed questions for {character}'s next action."""

TARGETS = {"action": "action", "utterance": "utterance (what they say next)"}
"""What the proposer is told is predicted, per acting format (the released prompt's wording)."""


QuestionType = Literal["behavioral", "state", "concept"]
"""The paper's three bookmark types (the values of ``BookmarkType``), as the schema states them."""


class ProposedQuestion(BaseModel):
    """One question to look up in the story so far."""

    type: QuestionType = Field(description='"behavioral", "state" or "concept".')
    question: str = Field(description="One short question in English.")
    keyword: str | None = Field(
        default=None,
        description="Concept questions only: the entity's exact name as written in the scene "
        "or character list. Leave empty for other types.",
    )


class ProposedQuestions(BaseModel):
    """The questions proposed for this scene."""

    questions: list[ProposedQuestion] = Field(description="Up to K distinct typed questions.")


def question_key(question: str) -> frozenset[str]:
    """A question's identity for duplicate checks: its words minus fillers, case folded.

    Question words stay: "Where is Kyon?" and "Who is Kyon?" are different questions.
    """
    return frozenset(tokens(question)) - FILLER_WORDS


def is_near_duplicate(question: str, others: Iterable[str]) -> bool:
    """Whether ``question`` asks the same as one of ``others`` (same or 80 %-shared words)."""
    mine = question_key(question)
    for other in others:
        theirs = question_key(other)
        if mine == theirs:
            return True
        union = mine | theirs
        if union and len(mine & theirs) / len(union) >= NEAR_DUPLICATE:
            return True
    return False


def _occurs(keyword: str, texts: Sequence[tuple[str, ...]]) -> bool:
    phrase = tuple(tokens(keyword))
    size = len(phrase)
    if not size:
        return False
    return any(
        words[i : i + size] == phrase for words in texts for i in range(len(words) - size + 1)
    )


def keep_valid_questions(
    proposed: ProposedQuestions,
    *,
    k: int,
    scene: Sequence[StoryAction],
    characters: Sequence[str],
    do_not_ask: Sequence[str] = (),
) -> list[ProposedQuestion]:
    """Enforce the rules in code: known types, concept keywords that occur, no re-asks, <= k."""
    known = [tuple(tokens(a.text)) for a in scene] + [tuple(tokens(c)) for c in characters]
    kept: list[ProposedQuestion] = []
    for item in proposed.questions:
        text = " ".join(item.question.split())
        kind = item.type
        if not text:
            continue
        keyword = " ".join((item.keyword or "").split()) or None
        if kind == "concept" and (keyword is None or not _occurs(keyword, known)):
            continue
        if is_near_duplicate(text, [*do_not_ask, *(q.question for q in kept)]):
            continue
        if kind != "concept":
            keyword = None
        kept.append(ProposedQuestion(type=kind, question=text, keyword=keyword))
        if len(kept) >= k:
            break
    return kept


async def propose_questions(
    model: BaseChatModel,
    *,
    character: str,
    story: str | None,
    scene: Sequence[StoryAction],
    characters: Sequence[str],
    k: int = 5,
    do_not_ask: Sequence[str] = (),
    acting_format: ActingFormat = "action",
) -> tuple[list[ProposedQuestion], LLMUsage, int]:
    """Ask ``model`` for up to ``k`` typed questions; the code filters them (see module doc).

    ``scene`` and ``characters`` must come from before the target position only: they are all
    the model sees. Returns the kept questions, the call's usage and how many proposed
    questions the code dropped (a concept keyword not in the scene, a re-ask, more than ``k``),
    so callers can report dropped model output instead of hiding it. An answer still invalid
    after retries degrades to no question (counted in ``usage.degraded``).
    """
    if k <= 0:
        return [], LLMUsage(), 0
    messages = [
        SystemMessage(
            PROPOSER_SYSTEM.format(
                character=character,
                story=story_label(story),
                k=k,
                target=TARGETS[acting_format],
            )
        ),
        HumanMessage(
            PROPOSER_USER.format(
                characters=", ".join(characters) or "(none yet)",
                do_not_ask="\n".join(f"- {q}" for q in do_not_ask) or "(none)",
                scene=render_scene(scene),
                k=k,
                character=character,
            )
        ),
    ]
    try:
        proposed, usage = await call_structured(model, ProposedQuestions, messages)
    except InvalidAnswerError as failed:
        return [], failed.usage + LLMUsage(degraded=1), 0
    kept = keep_valid_questions(
        proposed, k=k, scene=scene, characters=characters, do_not_ask=do_not_ask
    )
    return kept, usage, len(proposed.questions) - len(kept)
