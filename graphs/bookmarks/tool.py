"""``storyline_memory``: the bookmark bank as a LangChain tool another agent can ask.

An agent role-playing in a long story asks "what is true about X at position p?"; the tool
finds a bookmark that already answers it (bank candidates, then the matcher) or starts one,
syncs it on demand to p (reading only actions it has not seen, never p or later) and keeps it in
the bank, so the next question about the same thing costs almost nothing. It runs the very step
the BOOKMARKS graph runs for each proposed question (:mod:`personae.graphs.bookmarks.step`):
same K', same derive call, same sync settings, same unknown-question list. The storyline, the
memory folder, the models and those settings are fixed by the factory; the calling model
chooses only the character, the question, the position and the question's type.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from personae.errors import InputError
from personae.graphs.bookmarks.graph import BookmarksContext
from personae.graphs.bookmarks.resources import resources_for
from personae.graphs.bookmarks.step import (
    BookmarkStepSettings,
    Question,
    activate_question,
    save_step,
    sync_active,
)
from personae.graphs.tool_errors import errors_as_tool_messages
from personae.memory.bookmarks.bookmark import BookmarkType

UNKNOWN_ANSWER = "unknown: nothing before this position answers it"


class StorylineMemoryArgs(BaseModel):
    """A question about the story as it stands at one position."""

    character: str = Field(description="The character the question is for, e.g. 'Haruhi'.")
    question: str = Field(description="One short question, e.g. 'Where is Haruhi now?'.")
    position: int = Field(description="Story position: only actions before it are used.")
    type: Literal["state", "behavioral", "concept"] = Field(
        default="state",
        description="state: the current situation; behavioral: a general habit of the "
        "character; concept: about one named entity (give its name as keyword).",
    )
    keyword: str | None = Field(
        default=None, description="Concept questions: the entity's name as written in the story."
    )


def create_storyline_memory_tool(
    storyline_path: str,
    *,
    memory_dir: str | None = None,
    model: str | BaseChatModel | None = None,
    fast_model: str | BaseChatModel | None = None,
    settings: BookmarkStepSettings | None = None,
    scene_size: int = 10,
    embedding: str = "",
) -> BaseTool:
    """A ``storyline_memory`` tool over ``storyline_path``'s bookmark bank in ``memory_dir``.

    ``fast_model`` runs every call of a step (matching, derive, chunk and evidence checks,
    summaries: the paper's section 5.1, as in the graph); ``model`` serves only as the fast
    model when no fast model is named (the CLI and server rule: ``model`` alone also serves as
    the fast model; the tool does not act). Both are specs or chat models; what is left out
    comes from the settings, read once here (:meth:`~personae.settings.Settings.model_specs`).
    ``settings`` are the step's K', derive switch and sync sizes; pass
    ``BookmarksContext(...).step_settings()`` to share a graph run's. Bad characters,
    positions or questions, and any other failure (the model server down), come back to the
    calling model as a one-line error string.
    ``embedding`` picks the bank's embedding (empty: ``PERSONAE_EMBEDDINGS``, else hashing),
    as the graph's context field does, so the tool and the graph share one bank.
    """
    specs = BookmarksContext(
        storyline_path=storyline_path,
        memory_dir=memory_dir,
        model=model if isinstance(model, str) else "",
        fast_model=fast_model if isinstance(fast_model, str) else "",
        embedding=embedding,
    )
    named_fast = specs.settings.fast_model_set  # PERSONAE_FAST_MODEL beats the model alone
    if isinstance(model, BaseChatModel) and fast_model is None and not named_fast:
        fast_model = model
    step = settings or BookmarkStepSettings()
    text_embedding = specs.text_embedding()

    @errors_as_tool_messages("storyline_memory")
    async def storyline_memory(
        character: str,
        question: str,
        position: int,
        type: str = "state",
        keyword: str | None = None,
    ) -> str:
        """Answer a question about the story as it stands at a position; cached as a bookmark."""
        resources = await asyncio.to_thread(
            resources_for, storyline_path, memory_dir, specs.chroma, text_embedding
        )
        storyline = resources.storyline
        storyline.check_character(character)
        storyline.check_position(position)
        if not question.strip():
            raise InputError("the question is empty", "ask one short question")
        fast = fast_model if isinstance(fast_model, BaseChatModel) else specs.llm("fast")
        asked = Question(type=str(BookmarkType(type)), question=question, keyword=keyword)
        activation = await activate_question(
            resources,
            asked,
            character=character,
            target=position,
            fast_model=fast,
            settings=step,
            scene=storyline.scene(position, scene_size),
        )
        created = [] if activation.decision == "reuse" else [activation.bookmark.id]
        outcome = await sync_active(
            resources,
            activation.bookmark if created else activation.bookmark.id,
            target=position,
            fast_model=fast,
            settings=step,
        )
        [entry] = await asyncio.to_thread(
            save_step,
            resources,
            [outcome.bookmark],
            created=created,
            character=character,
            target=position,
        )
        answer = entry["answer"] or UNKNOWN_ANSWER
        decision = {"reuse": "reused", "derive": "derived", "none": "new"}[activation.decision]
        return (
            f"{answer} (bookmark {entry['id']}, {decision}; valid at position {position}: "
            f"reflects the actions before it)"
        )

    return StructuredTool.from_function(
        coroutine=storyline_memory,
        name="storyline_memory",
        description=(
            "Look up what is true in the story at a given position (only earlier actions are "
            "used): the current situation, a character's habits, or who/what an entity is."
        ),
        args_schema=StorylineMemoryArgs,
        handle_tool_error=True,
    )
