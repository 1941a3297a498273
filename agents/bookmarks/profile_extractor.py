"""ETA's two roles: profile a character from a chunk, then fold it into the running profile.

Extract-and-aggregate (ETA, Wang et al. 2025c) is the profiling baseline of the BOOKMARKS
benchmark: "start from empty, ETA updates the profile whenever a new action of the target
character is observed by aggregating the summarized new information". The prompts follow the
released BOOKMARKS code (``profile.py``): a 200-word narrative profile of the character from a
chunk of the story, then "directly update the main profile based on the new summarized
profile", keeping it around 200 words. The update is recurrent: the previous profile plus the
new chunk's profile, never a rebuild from stored facts. Both run on the strong model (the
paper's section 5.1: "profile updating in ETA" uses the acting model). The model sees only the
chunk it is given (positions before the update point).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from personae.agents.answer_schemas import non_blank
from personae.llm import LLMUsage, call_structured
from personae.memory.bookmarks.storyline import StoryAction

EMPTY_PROFILE = "[empty]"
"""The profile before the first update (the released code's starting value)."""

# The released BOOKMARKS code's profile_extract prompt (ETA's "extract" step).
EXTRACT_PROMPT = """# Task

Please provide a 200-word, narrative-style character profile for {character}{story}.
The profile should read like a cohesive introduction, weaving together the character's
background, physical description, personality traits and core motivations, notable attributes,
relationships, key experiences, major plot involvement and key decisions or actions, character
arc or development throughout the story, and other important details.
The profile should be written in a concise yet informative style, similar to what one might find
in a comprehensive character guide. Focus on the most crucial information that gives readers a
clear understanding of the character's significance in the work.
The profile should be based on either your existing knowledge of the character or the provided
information, without fabricating or inferring any inaccurate or uncertain details.

# Scene-Action Pairs

{block}

Now, based on the given scene-action pairs, write the character profile."""

# The released BOOKMARKS code's profile_aggregate prompt (ETA's "aggregate" step).
UPDATE_PROMPT = """# Main Profile
{profile}

# New Summarized Profile (From New Episodes)
{new_profile}

Directly update the main profile based on the new summarized profile, keep its length in around
200 words."""


class ChunkProfile(BaseModel):
    """The character's profile written from one chunk of the story."""

    profile: str = non_blank("About 200 words, narrative style.")


class UpdatedProfile(BaseModel):
    """The main profile updated with the new chunk's profile."""

    profile: str = non_blank("The updated main profile, about 200 words.")


async def extract_profile(
    model: BaseChatModel,
    *,
    character: str,
    story: str | None,
    chunk: Sequence[StoryAction],
) -> tuple[str, LLMUsage]:
    """A profile of ``character`` from the actions in ``chunk`` (its texts, one per block)."""
    prompt = EXTRACT_PROMPT.format(
        character=character,
        story=f' in "{story}"' if story else "",
        block="\n---\n".join(action.text for action in chunk),
    )
    answer, usage = await call_structured(model, ChunkProfile, [HumanMessage(prompt)])
    return answer.profile.strip(), usage


async def update_profile(
    model: BaseChatModel, *, profile: str, new_profile: str
) -> tuple[str, LLMUsage]:
    """The running ``profile`` updated with ``new_profile`` (the recurrent step)."""
    prompt = UPDATE_PROMPT.format(profile=profile or EMPTY_PROFILE, new_profile=new_profile)
    answer, usage = await call_structured(model, UpdatedProfile, [HumanMessage(prompt)])
    return answer.profile.strip(), usage
