"""The actor role: the character's next action given the scene and grounding memory.

The prompt is the released BOOKMARKS predictor's (``predict.py``), verbatim: the grounding as a
background summary, the current scene, then "infer the next action" in the artifact's format
(an utterance ``Name: ...`` for conversational Bandori storylines, "a concise sentence" for the
others). Every method uses this one actor, so methods differ only in their grounding, which each
renders itself (the BOOKMARKS report, retrieved pairs, a profile). The released prompt names no
story: the title is shown only on request (``--show-title``, ours), as a system line, since a
famous title invites recall of later plot.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from personae.agents.answer_schemas import non_blank
from personae.errors import NothingUsableError
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.bookmarks.storyline import ActingFormat, StoryAction, plain_text

# Released BOOKMARKS runner, src/bookmarks/predict.py, next_action_prediction (commit 2489d17):
# verbatim; the output block shows the JSON the schema enforces where the released one shows a
# ```python {...}``` dict of the same two keys.
ACTOR_PROMPT = """# Background Summary
{grounding}
---
# Current Scene
{scene}
---
Infer the next action ({output_hint}) of {character} in the following scene:

Output in the following format:
{{
    "reasoning": "...",
    "action": "...",
}}"""

OUTPUT_HINTS: dict[str, str] = {
    "action": "A concise sentence",
    "utterance": "A concise sentence, {character}: ...",
}
"""The released predictor's ``output_hint`` per acting format."""

TITLE_SYSTEM = """You are {character}, a character in {story}."""
"""Ours, only with ``--show-title``: the released prompt names no story."""


def story_label(story: str | None) -> str:
    """``the story "haruhi"``, or ``a story`` when the title is hidden."""
    return f'the story "{story}"' if story else "a story"


class NextAction(BaseModel):
    """The character's next action.

    The field descriptions are sent with the schema: they name the fields of the released
    prompt's output block and add no instruction the prompt lacks (the format is the prompt's
    ``output_hint``).
    """

    reasoning: str = Field(default="", description="reasoning")
    action: str = non_blank("action")


def render_scene(scene: Sequence[StoryAction], *, plain: bool = False) -> str:
    """The scene for a prompt; ``plain``: the released runner's plain texts (empty at the start).

    Otherwise (ours) numbered lines, or a note when the story has just begun.
    """
    if plain:
        return plain_text(scene)
    return "\n".join(a.render() for a in scene) or "(the story has just begun)"


def actor_messages(
    *,
    character: str,
    story: str | None,
    scene: Sequence[StoryAction],
    grounding: Sequence[str],
    acting_format: ActingFormat = "action",
    plain: bool = False,
) -> list[BaseMessage]:
    """The released prediction prompt (after the title line, when one is shown).

    ``grounding`` is the method's memory as lines, shown as they are (nothing for Vanilla);
    ``plain``: the scene as the released runner shows it (the paper's BOOKMARKS method).
    """
    prompt = ACTOR_PROMPT.format(
        grounding="\n".join(grounding),
        scene=render_scene(scene, plain=plain),
        character=character,
        output_hint=OUTPUT_HINTS[acting_format].format(character=character),
    )
    title = [SystemMessage(TITLE_SYSTEM.format(character=character, story=story_label(story)))]
    return [*(title if story else []), HumanMessage(prompt)]


async def act(
    model: BaseChatModel,
    *,
    character: str,
    story: str | None,
    scene: Sequence[StoryAction],
    grounding: Sequence[str],
    acting_format: ActingFormat = "action",
    plain: bool = False,
) -> tuple[str, LLMUsage]:
    """Ask the model for ``character``'s next action in ``acting_format`` (never blank).

    ``story`` is the title shown, or ``None`` to hide it. An utterance that does not start with
    ``Name:`` gets the prefix added, so it reads like the references it is judged against. The
    action is the step's output: with no valid one after retries nothing usable is left
    (:class:`~personae.errors.NothingUsableError`; a bench records the instance as failed).
    """
    messages = actor_messages(
        character=character,
        story=story,
        scene=scene,
        grounding=grounding,
        acting_format=acting_format,
        plain=plain,
    )
    try:
        answer, usage = await call_structured(model, NextAction, messages)
    except InvalidAnswerError as failed:
        raise NothingUsableError(f"no valid action for {character}: {failed.problem}") from failed
    action = answer.action.strip()
    if acting_format == "utterance" and not action.startswith(f"{character}:"):
        action = f"{character}: {action}"
    return action, usage
