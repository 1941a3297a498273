"""``profile_character``: the profiler graph as a LangChain tool another agent can call.

Infrastructure (models, budgets, wiki) is fixed by the factory; the calling model only chooses
the character and, optionally, the franchise and a wiki to pin.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from personae.graphs.characterhub.profiler import graph
from personae.graphs.characterhub.state import ProfileInput, ProfilerContext
from personae.graphs.tool_errors import errors_as_tool_messages


class ProfileCharacterArgs(BaseModel):
    """Which character to profile."""

    name: str = Field(description="The character's name, e.g. 'Kenshiro'.")
    franchise: str | None = Field(
        default=None, description="The work the character comes from, to pick the right one."
    )


def render_tool_answer(result: dict[str, Any]) -> str:
    """The first-person profile followed by its numbered sources."""
    sources = "\n".join(f"[{s['id']}] {s['title']} <{s['url']}>" for s in result["sources"])
    notices = "".join(f"\nNote: {n}" for n in result.get("notices", []))
    return f"{result['profile']}\n\nSources:\n{sources}{notices}"


def create_profile_tool(
    context: ProfilerContext | None = None, *, wiki_url: str | None = None
) -> StructuredTool:
    """A ``profile_character`` tool running the compiled profiler with ``context``.

    ``wiki_url`` pins the wiki for every call (e.g. an app about one franchise); otherwise the
    franchise's wiki is discovered, or the web alone is used. A failure (an unknown name, an
    unreachable wiki or model) comes back to the calling model as the tool's one-line answer.
    """
    run_context = context or ProfilerContext()

    @errors_as_tool_messages
    async def profile_character(name: str, franchise: str | None = None) -> str:
        """Research a character on the web and wikis; a first-person profile with sources."""
        result = await graph.ainvoke(
            ProfileInput(name=name, franchise=franchise, wiki_url=wiki_url), context=run_context
        )
        return render_tool_answer(result)

    return StructuredTool.from_function(
        coroutine=profile_character,
        name="profile_character",
        description=(
            "Research a fictional character (web and wiki deep search) and return a "
            "first-person profile with numbered sources."
        ),
        args_schema=ProfileCharacterArgs,
        handle_tool_error=True,
    )
