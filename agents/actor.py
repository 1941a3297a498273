"""The actor role: the character's next action given the scene and grounding memory."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.llm import LLMUsage, call_structured
from personae.memory.storyline import StoryAction

ACTOR_SYSTEM = """You are {character}, a character in the story "{story}". Stay in character.
Given the latest scene and what you remember, write your very next action in the story: one
sentence in the third person that starts with your name, as the storyline's own actions do
(e.g. "{character} ..."). Do not narrate other characters' actions."""

ACTOR_USER = """## What you remember
{grounding}

## The scene so far (most recent last)
{scene}

What does {character} do next?"""


class NextAction(BaseModel):
    """The character's next action."""

    action: str = Field(
        description="One sentence, third person, starting with the character's name."
    )


def render_scene(scene: Sequence[StoryAction]) -> str:
    """The scene as numbered lines, or a note when the story has just begun."""
    return "\n".join(a.render() for a in scene) or "(the story has just begun)"


async def act(
    model: BaseChatModel,
    *,
    character: str,
    story: str,
    scene: Sequence[StoryAction],
    grounding: Sequence[str],
) -> tuple[str, LLMUsage]:
    """Ask the model for ``character``'s next action; rejects empty answers."""

    def non_empty(answer: NextAction) -> None:
        if not answer.action.strip():
            raise ValueError("the action is empty")

    messages = [
        SystemMessage(ACTOR_SYSTEM.format(character=character, story=story)),
        HumanMessage(
            ACTOR_USER.format(
                grounding="\n".join(f"- {line}" for line in grounding) or "(nothing yet)",
                scene=render_scene(scene),
                character=character,
            )
        ),
    ]
    answer, usage = await call_structured(model, NextAction, messages, check=non_empty)
    return answer.action.strip(), usage
