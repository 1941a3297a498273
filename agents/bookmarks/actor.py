"""The actor role: the character's next action given the scene and grounding memory.

The prompt follows the released BOOKMARKS predictor (``predict.py``): the grounding as a
background summary, the current scene, then "infer the next action" in the artifact's format:
an utterance ``Name: line`` for conversational (Bandori) storylines, a concise third-person
action for the others (Fandom). Every method uses this one actor, so methods differ only in
their grounding. The story title is optional (``--hide-title``): naming a famous work invites
recall of its later plot.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import non_blank
from personae.errors import NothingUsableError
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.bookmarks.storyline import ActingFormat, StoryAction

ACTOR_SYSTEM = """You are {character}, a character in {story}. Stay in character."""

ACTOR_USER = """# Background Summary
{grounding}
---
# Current Scene (most recent last)
{scene}
---
Infer the next action ({output_hint}) of {character} in the scene above."""

OUTPUT_HINTS: dict[str, str] = {
    "action": "a concise sentence in the third person that starts with {character}'s name, as "
    "the storyline's own actions are written; do not narrate other characters",
    "utterance": "a concise sentence, {character}: ...",
}
"""The released predictor's output hint per acting format (the action one spells out the
third-person form of the Fandom references)."""


def story_label(story: str | None) -> str:
    """``the story "haruhi"``, or ``a story`` when the title is hidden."""
    return f'the story "{story}"' if story else "a story"


class NextAction(BaseModel):
    """The character's next action."""

    reasoning: str = Field(default="", description="Brief reasoning before acting.")
    action: str = non_blank(
        "One concise sentence in the requested format (third-person action, or "
        "'Name: line' for an utterance)."
    )


def render_scene(scene: Sequence[StoryAction]) -> str:
    """The scene as numbered lines, or a note when the story has just begun."""
    return "\n".join(a.render() for a in scene) or "(the story has just begun)"


async def act(
    model: BaseChatModel,
    *,
    character: str,
    story: str | None,
    scene: Sequence[StoryAction],
    grounding: Sequence[str],
    acting_format: ActingFormat = "action",
) -> tuple[str, LLMUsage]:
    """Ask the model for ``character``'s next action in ``acting_format`` (never blank).

    ``story`` is the title shown, or ``None`` to hide it. An utterance that does not start with
    ``Name:`` gets the prefix added, so it reads like the references it is judged against. The
    action is the step's output: with no valid one after retries nothing usable is left
    (:class:`~personae.errors.NothingUsableError`; a bench records the instance as failed).
    """
    messages = [
        SystemMessage(ACTOR_SYSTEM.format(character=character, story=story_label(story))),
        HumanMessage(
            ACTOR_USER.format(
                grounding="\n".join(f"- {line}" for line in grounding) or "(nothing yet)",
                scene=render_scene(scene),
                character=character,
                output_hint=OUTPUT_HINTS[acting_format].format(character=character),
            )
        ),
    ]
    try:
        answer, usage = await call_structured(model, NextAction, messages)
    except InvalidAnswerError as failed:
        raise NothingUsableError(f"no valid action for {character}: {failed.problem}") from failed
    action = answer.action.strip()
    if acting_format == "utterance" and not action.startswith(f"{character}:"):
        action = f"{character}: {action}"
    return action, usage
