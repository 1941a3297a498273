"""``ask_character``: the AMADEUS agent as a LangChain tool another agent can call.

Lives beside the graph it wraps (graphs import agents/tools/memory, never the reverse). The
factory fixes the infrastructure (models, persona index, method); the calling model chooses
only the character and the question. With a checkpointer, each character keeps one
conversation (thread ``<prefix>:<character>``), so follow-up questions see earlier answers.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import BaseModel, Field

from personae.errors import InputError, PersonaeError
from personae.graphs.amadeus.graph import AmadeusContext, build_graph
from personae.graphs.tool_errors import errors_as_tool_messages

TOOL_NAME = "ask_character"
PROFILE_TOOL = "profile_character"
"""The tool that researches a character and, built with ``index``, indexes its persona."""


class AskCharacterArgs(BaseModel):
    """Who to ask and what."""

    character: str = Field(description="An indexed character, e.g. 'Iago'.")
    question: str = Field(description="What to say or ask the character.")


def ask_next_step(error: PersonaeError) -> str | None:
    """A character without a usable index is profiled (and indexed) first, then asked again."""
    if not isinstance(error, InputError):
        return None
    if error.problem.startswith(("unknown character", "embedding mismatch", "splitter mismatch")):
        return (
            f"call {PROFILE_TOOL} with the character's name to research and index them, "
            f"then call {TOOL_NAME} again"
        )
    return f"call {TOOL_NAME} again with a character and a question"


def create_ask_character_tool(
    context: AmadeusContext,
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    thread_prefix: str = "ask_character",
) -> StructuredTool:
    """An ``ask_character`` tool running the AMADEUS graph with ``context``.

    A failure (a character with no index, the model server down) comes back to the calling
    model as the tool's one-line answer, never as an exception ending its run; a character
    with no index names ``profile_character`` (built with ``index=`` this same context) as
    the tool to call first.
    """
    graph = build_graph(checkpointer)

    @errors_as_tool_messages(TOOL_NAME, ask_next_step)
    async def ask_character(character: str, question: str) -> str:
        """The character's in-character answer, grounded in its persona document."""
        config: RunnableConfig = {}
        if checkpointer is not None:
            config = {"configurable": {"thread_id": f"{thread_prefix}:{character.casefold()}"}}
        result = await graph.ainvoke(
            {"character": character, "query": question}, config, context=context
        )
        return str(result["response"])

    return StructuredTool.from_function(
        coroutine=ask_character,
        name=TOOL_NAME,
        description=(
            "Talk to a fictional character whose persona document is indexed: the character "
            "answers in the first person, in character, grounded in its persona."
        ),
        args_schema=AskCharacterArgs,
        handle_tool_error=True,
    )
