"""``profile_character``: the profiler graph as a LangChain tool another agent can call.

Infrastructure (models, budgets, wiki, where personas are indexed) is fixed by the factory; the
calling model only chooses the character and, optionally, the franchise. With ``index`` the
tool also turns the profile into an AMADEUS persona, so an agent holding ``ask_character`` can
"profile X, then ask X" in one conversation: a profile no tool can talk to is a dead end.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from personae.errors import InputError, PersonaeError
from personae.graphs.characterhub.profiler import graph
from personae.graphs.characterhub.state import ProfileInput, ProfilerContext
from personae.graphs.profile_personas import PersonaIndexTarget, index_profile, index_settings
from personae.graphs.tool_errors import errors_as_tool_messages

TOOL_NAME = "profile_character"
ASK_TOOL = "ask_character"
"""The tool that talks to an indexed persona (:mod:`personae.graphs.amadeus.tool`)."""


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


def profile_next_step(error: PersonaeError) -> str | None:
    """Bad input means another spelling or the franchise; the wiki is the app's to pin."""
    if isinstance(error, InputError):
        return (
            f"call {TOOL_NAME} again with another spelling of the name, or with the "
            "franchise the character comes from"
        )
    return None


def create_profile_tool(
    context: ProfilerContext | None = None,
    *,
    wiki: str | None = None,
    index: PersonaIndexTarget | None = None,
) -> StructuredTool:
    """A ``profile_character`` tool running the compiled profiler with ``context``.

    ``wiki`` pins the wiki for every call (e.g. an app about one franchise), as
    :func:`~personae.profile_character`'s ``wiki`` does; otherwise the franchise's wiki is
    discovered, or the web alone is used. ``index`` makes each profile a persona right away
    (:func:`~personae.index_persona`'s ``index``): pass the ``AmadeusContext`` the
    ``ask_character`` tool gets, and the persona lands in the index that tool reads; the answer
    then tells the calling model to call ``ask_character``. A failure (an unknown name, an
    unreachable wiki or model) comes back to the calling model as the tool's one-line answer,
    naming the tool to call next.
    """
    run_context = context or ProfilerContext()
    where = index_settings(index) if index is not None else None

    @errors_as_tool_messages(TOOL_NAME, profile_next_step)
    async def profile_character(name: str, franchise: str | None = None) -> str:
        """Research a character on the web and wikis; a first-person profile with sources."""
        result = await graph.ainvoke(
            ProfileInput(name=name, franchise=franchise, wiki_url=wiki), context=run_context
        )
        answer = render_tool_answer(result)
        if where is None:
            return answer
        from personae.memory.characterhub.profile_store import profile_document

        character = await index_profile(profile_document(result), where)
        return (
            f"{answer}\n\nIndexed as the persona {character!r}: call {ASK_TOOL} with "
            f"character={character!r} to talk to them."
        )

    return StructuredTool.from_function(
        coroutine=profile_character,
        name=TOOL_NAME,
        description=(
            "Research a fictional character (web and wiki deep search) and return a "
            "first-person profile with numbered sources."
            + (f" The character can then be asked with {ASK_TOOL}." if where else "")
        ),
        args_schema=ProfileCharacterArgs,
        handle_tool_error=True,
    )
