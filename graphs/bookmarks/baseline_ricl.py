"""RICL baseline of the BOOKMARKS benchmark: the character's most similar past scene→action pairs.

Retrieval-augmented in-context learning grounds the actor in how the character behaved in
scenes like the current one. The pair index grows with the targets (only pairs before the
target are indexed) and every query filters on ``position < target``, so no target ever sees a
pair at or after itself, whatever order the targets come in. Chroma calls are blocking: they
run in a worker thread so concurrent characters keep their LLM calls flowing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from personae.graphs.bookmarks.acting import ActingContext
from personae.graphs.bookmarks.baseline_resources import scene_pairs_for
from personae.graphs.bookmarks.baseline_vanilla import (
    BaselineState,
    baseline_builder,
    check_positive,
)
from personae.graphs.server_entry import server_entry
from personae.graphs.store_context import EmbeddingAccess
from personae.memory.bookmarks.scene_pairs import ScenePair
from personae.memory.bookmarks.storyline import open_storyline
from personae.run_context import described


@described
@dataclass(frozen=True, kw_only=True)
class RICLContext(EmbeddingAccess, ActingContext):
    """Run settings of the RICL baseline: the acting settings, K and the scene index's embedding."""

    k_pairs: int = 8
    """Past scene→action pairs shown to the actor (the paper's 8)."""
    embedding: str = ""
    """Embedding of the scene index: hashing (word overlap, offline), local (all-MiniLM-L6-v2 on
    numpy, offline) or openai:<model> (the /embeddings endpoint of this run's server). Each
    embedding keeps its own collections. Empty: PERSONAE_EMBEDDINGS, else hashing."""

    def __post_init__(self) -> None:
        """Fill the embedding; reject settings no run could use, naming the field."""
        super().__post_init__()
        self.fill_embedding()
        check_positive(self, "scene_size", "k_pairs")


def _recall(context: RICLContext, character: str, position: int) -> tuple[list[ScenePair], int]:
    store = scene_pairs_for(
        context.storyline_path,
        context.memory_dir,
        character,
        context.scene_size,
        context.chroma,
        context.text_embedding(),
    )
    indexed = store.extend(position)
    scene = open_storyline(context.storyline_path).scene(position, context.scene_size)
    return store.similar(scene, position, context.k_pairs), indexed


async def recall_similar_pairs(
    state: BaselineState, runtime: Runtime[RICLContext]
) -> dict[str, Any]:
    """Index the character's pairs up to the target, then ground on the closest ``k_pairs``."""
    pairs, indexed = await asyncio.to_thread(
        _recall, runtime.context, state["character"], state["position"]
    )
    return {
        "grounding": [pair.line() for pair in pairs],
        "memory_stats": {"pairs_retrieved": len(pairs), "pairs_indexed": indexed},
    }


builder = baseline_builder(RICLContext, recall_similar_pairs)
graph = builder.compile(name="ricl")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the RICL graph with an optional checkpointer (CLI, tests)."""
    return builder.compile(checkpointer=checkpointer, name="ricl")
