"""The four MCP tools: Personae's public runners and tools, their contexts built once.

Each MCP tool calls what ``from personae import ...`` gives an app: the runners
(``profile_character``, which saves the profile in the server's profiles folder as
``personae profile`` does; ``ask_character``; ``act_at_chapter``) or the coroutine of the
LangChain tool an agent in Python would use (``create_storyline_memory_tool``), so every way
in runs one code path. The coroutine is called directly, not through the LangChain tool's
error handler: a bad input or a failed service raises, and the MCP SDK returns it as a tool
error (``isError``) with the one-line message, which an MCP client shows its model as a failed
call, not as an answer.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from langchain_core.tools import StructuredTool
from mcp.server.fastmcp import Context
from pydantic import Field

from personae.errors import ConfigurationError, InputError
from personae.mcp.notifications import reported
from personae.mcp.options import ServerOptions

ToolFunction = Callable[..., Awaitable[str]]

StoryQuestionType = Literal["state", "behavioral", "concept"]


def build_tools(options: ServerOptions) -> dict[str, ToolFunction]:
    """The MCP tool functions by name; every context is built here, once (the edge).

    Without an LLM configured the server still starts (an MCP client passes a minimal
    environment unless told otherwise): the tools are listed, and each call answers with the
    configuration error, which says which variable to set.
    """
    tools = {
        "profile_character": _profile_character(options),
        "ask_character": _ask_character(options),
        "storyline_memory": _storyline_memory(options),
        "arcane_act": _arcane_act(options),
    }
    problem = _llm_problem(options)
    if problem is None:
        return tools
    return {name: _refusing(function, problem) for name, function in tools.items()}


def _llm_problem(options: ServerOptions) -> ConfigurationError | None:
    """Why no model can be called with the server's settings, or ``None`` when one can."""
    from personae import LLMContext

    try:
        LLMContext(**options.models).llm("strong")
    except ConfigurationError as error:
        return error
    return None


def _refusing(function: ToolFunction, problem: ConfigurationError) -> ToolFunction:
    """``function``'s signature (the listed schema), answering every call with ``problem``."""

    @functools.wraps(function)
    async def refuse(**arguments: Any) -> str:
        raise problem

    return refuse


def _call(tool: StructuredTool) -> Callable[..., Awaitable[str]]:
    coroutine = tool.coroutine
    assert coroutine is not None  # every factory builds an async tool

    async def call(**arguments: Any) -> str:
        return str(await coroutine(**arguments))

    return call


def _profile_character(options: ServerOptions) -> ToolFunction:
    from personae import ProfilerContext
    from personae.graphs.characterhub.tool import render_tool_answer
    from personae.mcp.profile_runs import ProfileRuns
    from personae.memory.characterhub.profile_store import profile_key

    context = ProfilerContext(web_search=options.web_search, **options.models)
    runs = ProfileRuns(options, context)

    async def profile_character(
        name: Annotated[str, Field(description="The character's name, e.g. 'Kenshiro'.")],
        franchise: Annotated[
            str | None, Field(description="The work the character comes from.")
        ] = None,
        *,
        ctx: Context[Any, Any, Any],
    ) -> str:
        """Research a fictional character on the web and its wiki (deep search).

        Returns a first-person profile with numbered sources, saved as a profile resource
        (its URI is named). Slow: many searches and calls; each step is a progress
        notification when the call asks for progress.
        """
        if not name.strip():
            raise InputError("the character name is empty", "pass a character name")
        # The CharacterHub runner: checkpointed and resumed in the profiles folder, where the
        # profile lands as `personae profile` writes it (a personae://profiles resource); one
        # run per character, joined by a second call, at most --max-jobs at once. Each
        # progress line (the queue's place included) is a notification when the call asked.
        async with reported(ctx, "personae.profile_character") as progress:
            profile = await runs.profile(name.strip(), franchise, progress=progress)
        key = profile_key(name.strip(), franchise)
        answer = render_tool_answer({**profile.document, "notices": profile.notices})
        return f"{answer}\n\nSaved as personae://profiles/{key} ({profile.paths.profile_json})"

    return profile_character


def _ask_character(options: ServerOptions) -> ToolFunction:
    from personae import AmadeusContext
    from personae import ask_character as answer

    context = AmadeusContext(
        memory_dir=str(options.personas_dir),
        method=options.method,  # type: ignore[arg-type]  # checked by the command's choices
        embedding=options.embedding,
        **options.models,
    )

    async def ask_character(
        character: Annotated[str, Field(description="An indexed character, e.g. 'Iago'.")],
        question: Annotated[str, Field(description="What to say or ask the character.")],
    ) -> str:
        """Talk to a fictional character whose persona is indexed (AMADEUS).

        The character answers in the first person, grounded in its persona. Each call stands
        alone (no conversation is kept between calls).
        """
        return (await answer(character, question, context=context)).response

    return ask_character


def _storyline_memory(options: ServerOptions) -> ToolFunction:
    calls = {path.stem: _storyline_call(options, path) for path in options.storylines}
    served = ", ".join(sorted(calls)) or "none"

    async def storyline_memory(
        character: Annotated[str, Field(description="The character, e.g. 'Haruhi'.")],
        question: Annotated[str, Field(description="One short question about the story.")],
        position: Annotated[int, Field(description="Story position: only earlier actions count.")],
        type: Annotated[
            StoryQuestionType,
            Field(
                description="state: the current situation; behavioral: a habit of the "
                "character; concept: one named entity (give its name as keyword)."
            ),
        ] = "state",
        keyword: Annotated[
            str | None, Field(description="Concept questions: the entity's name.")
        ] = None,
        storyline: Annotated[
            str | None,
            Field(
                description="Which served storyline (its file name without extension); "
                "may be left out when the server serves one."
            ),  # fmt: skip
        ] = None,
    ) -> str:
        """What is true in a long storyline at a position (BOOKMARKS memory).

        Only actions before the position are read; answers are kept as bookmarks, so the next
        question about the same thing costs almost nothing.
        """
        call = _pick_storyline(calls, storyline, served)
        return await call(
            character=character, question=question, position=position, type=type, keyword=keyword
        )

    return storyline_memory


def _storyline_call(options: ServerOptions, path: Path) -> Callable[..., Awaitable[str]]:
    from personae import create_storyline_memory_tool

    memory = options.bookmarks_memory
    tool = create_storyline_memory_tool(
        str(path),
        memory_dir=str(memory) if memory is not None else None,
        model=options.models.get("model") or None,
        fast_model=options.models.get("fast_model") or None,
        embedding=options.embedding,
    )
    assert isinstance(tool, StructuredTool)
    return _call(tool)


def _pick_storyline(
    calls: dict[str, Callable[..., Awaitable[str]]], name: str | None, served: str
) -> Callable[..., Awaitable[str]]:
    if not calls:
        raise InputError(
            "this server serves no storyline", "start personae mcp with --storyline FILE"
        )
    if name is None and len(calls) == 1:
        return next(iter(calls.values()))
    if name is None or name not in calls:
        asked = "no storyline named" if name is None else f"unknown storyline {name!r}"
        raise InputError(f"{asked} (served: {served})", "pass one of them as storyline")
    return calls[name]


def _arcane_act(options: ServerOptions) -> ToolFunction:
    from personae import RoleplayContext, act_at_chapter

    fields: dict[str, Any] = {"data_dir": options.data_dir} if options.data_dir else {}
    context = RoleplayContext(
        arc_scope="character", embedding=options.embedding, **fields, **options.models
    )
    mode = options.arcane_mode

    async def arcane_act(
        novel: Annotated[str, Field(description="An imported novel's slug or title.")],
        character: Annotated[str, Field(description="The character who answers.")],
        chapter: Annotated[
            int, Field(ge=1, description="The chapter the character is at: nothing later.")
        ],
        scenario: Annotated[str, Field(min_length=1, description="The situation.")],
        question: Annotated[
            str | None, Field(description="What they are asked (default: what they do).")
        ] = None,
    ) -> str:
        """Play a character of an imported novel as they are at a chapter (ARCANE).

        The character knows nothing that happens after that chapter.
        """
        answer = await act_at_chapter(
            novel, character, chapter, scenario, question=question, mode=mode, context=context
        )
        return f"{answer.response} (as of chapter {answer.chapter}, {answer.mode} mode)"

    return arcane_act
