"""Vanilla baseline of the BOOKMARKS benchmark: the actor sees the scene and nothing else.

It is the floor every memory method must beat, so it follows the acting contract exactly and
shares its state, target check and acting node with the RICL and ETA baselines: those graphs
differ from this one only in the node that builds the grounding, which keeps the comparison
about memory and nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from personae.agents.bookmarks.actor import act
from personae.errors import ConfigurationError
from personae.graphs.bookmarks.acting import ActingContext, ActInput, ActOutput
from personae.graphs.server_entry import server_entry
from personae.memory.bookmarks.storyline import open_storyline
from personae.run_context import described


@described
@dataclass(frozen=True, kw_only=True)
class VanillaContext(ActingContext):
    """Run settings of the Vanilla baseline: the shared acting settings, nothing more."""

    def __post_init__(self) -> None:
        """Reject settings no run could use, naming the field."""
        super().__post_init__()
        check_positive(self, "scene_size")


def check_positive(context: object, *names: str) -> None:
    """Raise :class:`ConfigurationError` if any named context field is below 1."""
    for name in names:
        value = getattr(context, name)
        if not isinstance(value, int) or value < 1:
            raise ConfigurationError(
                f"{type(context).__name__}.{name} is {value!r}",
                f"set {name} to a whole number >= 1",
            )


class BaselineState(TypedDict):
    """State of every baseline graph: the contract's fields plus the memory step's output."""

    character: str
    """Who acts (validated against the storyline)."""
    position: int
    """Target position; only actions in ``[0, position)`` may be read."""
    grounding: list[str]
    """Memory lines shown to the actor (empty for Vanilla)."""
    memory_stats: dict[str, int]
    """Counters of the memory step of this run (overwritten each run, never accumulated)."""
    action: str
    """The predicted action."""
    stats: dict[str, int]
    """Memory counters plus the run's LLM usage (``llm_calls``, ``input_tokens``, ...)."""


def check_target(state: BaselineState, runtime: Runtime[Any]) -> dict[str, Any]:
    """Reject an unknown character or an out-of-range position before any model call."""
    storyline = open_storyline(runtime.context.storyline_path)
    storyline.check_character(state["character"])
    storyline.check_position(state["position"])
    return {"grounding": [], "memory_stats": {}}


async def act_next(state: BaselineState, runtime: Runtime[Any]) -> dict[str, Any]:
    """The character's next action from the scene before the target and the grounding."""
    context: ActingContext = runtime.context
    storyline = await asyncio.to_thread(open_storyline, context.storyline_path)
    scene = storyline.scene(state["position"], context.scene_size)
    action, usage = await act(
        context.llm("strong"),
        character=state["character"],
        story=context.story_title(storyline.name),
        scene=scene,
        grounding=state["grounding"],
        acting_format=storyline.acting_format,
    )
    stats = dict(state["memory_stats"])
    for key, value in usage.as_dict().items():
        stats[key] = stats.get(key, 0) + value
    return {"action": action, "stats": stats}


def baseline_builder(
    context_schema: type[Any], ground: Callable[..., Any] | None = None
) -> StateGraph[BaselineState, Any, ActInput, ActOutput]:
    """A baseline's graph: check the target, build the grounding with ``ground``, act.

    The one wiring of the three baselines (Vanilla grounds on nothing): they differ only in
    their context and grounding node, so the comparison stays about memory.
    """
    built = StateGraph(
        BaselineState, context_schema=context_schema, input_schema=ActInput, output_schema=ActOutput
    )
    built.add_sequence([check_target, *([ground] if ground else []), act_next])
    built.add_edge(START, "check_target")
    built.add_edge("act_next", END)
    return built


builder = baseline_builder(VanillaContext)
graph = builder.compile(name="vanilla")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the Vanilla graph with an optional checkpointer (CLI, tests)."""
    return builder.compile(checkpointer=checkpointer, name="vanilla")
