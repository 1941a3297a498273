"""``arcane_act``: a character of an imported novel, as of chapter N, as a LangChain tool.

The role-play graph (:mod:`personae.graphs.arcane.roleplay`) answers as the character knows
and is at the query chapter: no context segment from a later chapter reaches the prompt. The
factory fixes the infrastructure (models, data folder, embedding, the context mode); the calling
model chooses the novel, the character, the chapter, the scene and, optionally, the question.
Bad input (an unknown novel or character, a chapter out of range) comes back to the calling
model as a one-line error message, as ``storyline_memory``'s does.
"""

from __future__ import annotations

from typing import Literal, get_args

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from personae.agents.arcane.roleplayer import MODES
from personae.graphs.arcane.roleplay import RoleplayContext, build_graph, scene_input
from personae.graphs.tool_errors import errors_as_tool_messages

ArcaneMode = Literal["vanilla", "summary", "rag", "lifechoice", "timechara", "arc"]
assert set(get_args(ArcaneMode)) == set(MODES)  # one list of modes


class ArcaneActArgs(BaseModel):
    """Who speaks, when, in what situation."""

    novel: str = Field(description="An imported novel's slug or title, e.g. 'pride_and_prejudice'.")
    character: str = Field(description="The character who answers, e.g. 'Elizabeth'.")
    chapter: int = Field(
        # No ``ge=1``: tool-call grammars ignore numeric bounds; the graph checks the range
        # (1..the novel's chapters, which the schema cannot know) and answers a tool error.
        description="The chapter the character is at (1 to the novel's last): nothing after "
        "it is known."
    )
    scenario: str = Field(min_length=1, description="The situation the character is in.")
    question: str | None = Field(
        default=None, description="What the character is asked (default: what they do)."
    )


def create_arcane_act_tool(
    context: RoleplayContext | None = None, *, mode: ArcaneMode = "arc"
) -> StructuredTool:
    """An ``arcane_act`` tool running the ARCANE role-play graph with ``context``.

    ``mode`` is the paper's context mode (``arc``: the character's arc as of the chapter, the
    paper's method; ``summary``, ``rag``, ... its baselines). ``context`` left out is built
    here from the settings (``PERSONAE_DATA_DIR``, the models, ``PERSONAE_EMBEDDINGS``).
    """
    run_context = context or RoleplayContext(arc_scope="character")
    graph = build_graph()

    @errors_as_tool_messages("arcane_act")
    async def arcane_act(
        novel: str, character: str, chapter: int, scenario: str, question: str | None = None
    ) -> str:
        """The character's answer as of ``chapter`` (nothing later reaches the prompt)."""
        payload = scene_input(novel, mode, character, chapter, scenario, question)
        result = await graph.ainvoke(payload, context=run_context)
        return f"{result['response']} (as of chapter {result['query_chapter']}, {mode} mode)"

    return StructuredTool.from_function(
        coroutine=arcane_act,
        name="arcane_act",
        description=(
            "Play a character of an imported novel as they are at a given chapter (they know "
            "nothing that happens later): their answer or action in a scenario."
        ),
        args_schema=ArcaneActArgs,
        handle_tool_error=True,
    )
