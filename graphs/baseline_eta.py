"""ETA baseline of the BOOKMARKS benchmark: a profile rebuilt by extract-then-aggregate.

Every ``rebuild_every`` actions (16) the character's profile is rebuilt: facts are extracted
from ``chunk``-action chunks (64) of the story so far and aggregated into a short profile that
grounds the actor. The profile used at target ``t`` is the one built at the last rebuild point
``r = rebuild_every * floor(t / rebuild_every) <= t`` from the chunks of ``[0, r)`` only.

Chunk choice: chunks are aligned on multiples of ``chunk`` (``[0, 64)``, ``[64, 128)``, ...)
and the last one ends at ``r`` (``[64 * floor(r / 64), r)``). Each extraction is stored by its
exact ``[start, stop)``, so a story-order run extracts every full chunk once and re-extracts
only the growing last chunk at each rebuild (one extraction per rebuild); a chunk extracted for
a later target is never reused for an earlier one because its bounds differ. Chunks in which
the character neither acts nor is named are recorded as empty without a model call.
Extraction and aggregation both run on the fast model: they summarise; the strong model acts.
Profiles and extractions persist under ``memory_dir`` (see ``memory/eta_profile_store.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from typing_extensions import TypedDict

from personae.agents.profile_extractor import aggregate_profile, extract_facts
from personae.graphs.acting import ActingContext, ActInput, ActOutput
from personae.graphs.baseline_resources import eta_profiles_for
from personae.graphs.baseline_vanilla import (
    BaselineState,
    act_next,
    check_positive,
    check_target,
)
from personae.llm import LLMUsage
from personae.memory.eta_profile_store import ChunkFacts, ETAProfile
from personae.memory.storyline import StoryAction, Storyline, open_storyline
from personae.run_context import described


@described
@dataclass(frozen=True, kw_only=True)
class ETAContext(ActingContext):  # type: ignore[misc,unused-ignore]
    """Run settings of the ETA baseline."""

    chunk: int = 64
    """Actions per extraction chunk."""
    rebuild_every: int = 16
    """The profile is rebuilt at every multiple of this position."""
    max_facts: int = 240
    """Most recent extracted facts given to the aggregator (bounds its prompt)."""
    extract_concurrency: int = 4
    """Chunk extractions run at once when several are missing (a first, late target)."""

    def __post_init__(self) -> None:
        """Reject settings no run could use, naming the field."""
        super().__post_init__()
        fields = ("scene_size", "chunk", "rebuild_every", "max_facts", "extract_concurrency")
        check_positive(self, *fields)


class ChunkFactsEntry(TypedDict):
    """One chunk's extraction, as carried in the state."""

    start: int
    """First position of the chunk."""
    stop: int
    """Position after the last action of the chunk (never above the rebuild point)."""
    facts: list[str]
    """Facts about the character the chunk revealed."""


class ETAState(BaselineState):  # type: ignore[misc,unused-ignore]
    """Baseline state plus the rebuild point and the extractions to aggregate."""

    rebuild_point: int
    """``r``: the profile is built from actions ``[0, r)`` only."""
    profile_found: bool
    """Whether a stored profile (or the empty one before the first rebuild) was recalled."""
    chunk_facts: list[ChunkFactsEntry]
    """Extractions of every chunk of ``[0, r)`` in story order."""


ETA_COUNTERS = (
    "rebuild_point",
    "profile_rebuilt",
    "profile_statements",
    "chunks_extracted",
    "chunks_reused",
    "chunks_skipped",
    "actions_read",
    "actions_from_scratch",
)
"""The method counters every ETA run reports in ``stats`` (besides the LLM usage):
``actions_read`` counts the actions of the chunks processed in this run,
``actions_from_scratch`` the ``r`` actions a rebuild from nothing would read."""


def rebuild_point(target: int, every: int) -> int:
    """The last rebuild point at or before ``target``: ``every * floor(target / every)``."""
    return every * (target // every)


def chunk_bounds(point: int, size: int) -> list[tuple[int, int]]:
    """The ``[start, stop)`` chunks of ``[0, point)``: aligned on ``size``, the last ends at it."""
    return [(start, min(start + size, point)) for start in range(0, point, size)]


def mentions(chunk: Sequence[StoryAction], character: str) -> bool:
    """Whether ``character`` acts in or is named by any action of ``chunk``."""
    name = character.lower()
    return any(action.by(character) or name in action.text.lower() for action in chunk)


def recall_profile(state: ETAState, runtime: Runtime[ETAContext]) -> dict[str, Any]:
    """Use the stored profile of the last rebuild point when there is one (none before 16)."""
    context = runtime.context
    point = rebuild_point(state["position"], context.rebuild_every)
    stored = eta_profiles_for(context.storyline_path, context.memory_dir).profile(
        state["character"], point
    )
    statements = list(stored.statements) if stored else []
    stats = {key: 0 for key in ETA_COUNTERS}
    stats.update({"rebuild_point": point, "actions_from_scratch": point})
    stats["profile_statements"] = len(statements)
    found = stored is not None or point == 0
    return {
        "rebuild_point": point,
        "profile_found": found,
        "chunk_facts": [],
        "grounding": statements,
        "memory_stats": stats,
    }


def route_profile(state: ETAState) -> Literal["extract_chunks", "act_next"]:
    """Rebuild when no profile is stored for the rebuild point."""
    return "act_next" if state["profile_found"] else "extract_chunks"


async def _extract_one(
    context: ETAContext,
    storyline: Storyline,
    character: str,
    bounds: tuple[int, int],
    gate: asyncio.Semaphore,
) -> tuple[ChunkFacts, LLMUsage, str]:
    store = eta_profiles_for(context.storyline_path, context.memory_dir)
    cached = store.chunk_facts(character, *bounds)
    if cached is not None:
        return cached, LLMUsage(), "chunks_reused"
    chunk = storyline.before(bounds[1], bounds[0])
    facts: list[str] = []
    usage, kind = LLMUsage(), "chunks_skipped"
    if mentions(chunk, character):
        async with gate:
            facts, usage = await extract_facts(
                context.llm("fast"),
                character=character,
                story=storyline.name,
                chunk=chunk,
            )
        kind = "chunks_extracted"
    extracted = ChunkFacts(bounds[0], bounds[1], tuple(facts))
    store.save_chunk_facts(character, extracted)
    return extracted, usage, kind


async def extract_chunks(state: ETAState, runtime: Runtime[ETAContext]) -> dict[str, Any]:
    """Extract (or reuse) the facts of every chunk of ``[0, r)``; nothing at or after ``r``."""
    context = runtime.context
    storyline = open_storyline(context.storyline_path)
    point = state["rebuild_point"]
    gate = asyncio.Semaphore(max(1, context.extract_concurrency))
    results = await asyncio.gather(
        *(
            _extract_one(context, storyline, state["character"], bounds, gate)
            for bounds in chunk_bounds(point, context.chunk)
        )
    )
    stats = dict(state["memory_stats"])
    usage = LLMUsage()
    for _, cost, kind in results:
        stats[kind] += 1
        usage = usage + cost
    stats["actions_read"] = sum(r.stop - r.start for r, _, k in results if k != "chunks_reused")
    stats.update(usage.as_dict())
    entries = [
        ChunkFactsEntry(start=r.start, stop=r.stop, facts=list(r.facts)) for r, _, _ in results
    ]
    return {"chunk_facts": entries, "memory_stats": stats}


def _latest_facts(entries: Sequence[ChunkFactsEntry], limit: int) -> list[tuple[str, list[str]]]:
    chunks: list[tuple[str, list[str]]] = []
    budget = limit
    for entry in reversed(entries):
        if budget <= 0:
            break
        facts = entry["facts"][-budget:] if entry["facts"] else []
        budget -= len(facts)
        chunks.append((f"Actions {entry['start']}-{entry['stop'] - 1}", facts))
    return list(reversed(chunks))


async def aggregate_chunks(state: ETAState, runtime: Runtime[ETAContext]) -> dict[str, Any]:
    """Aggregate the extracted facts into the profile for ``r`` and store it."""
    context = runtime.context
    character, point = state["character"], state["rebuild_point"]
    chunks = _latest_facts(state["chunk_facts"], context.max_facts)
    statements: list[str] = []
    usage = LLMUsage()
    if any(facts for _, facts in chunks):
        statements, usage = await aggregate_profile(
            context.llm("fast"),
            character=character,
            story=open_storyline(context.storyline_path).name,
            chunks=chunks,
        )
    bounds = tuple((e["start"], e["stop"]) for e in state["chunk_facts"])
    profile = ETAProfile(character, point, tuple(statements), bounds)
    eta_profiles_for(context.storyline_path, context.memory_dir).save_profile(profile)
    stats = dict(state["memory_stats"])
    for key, value in usage.as_dict().items():
        stats[key] = stats.get(key, 0) + value
    stats.update({"profile_rebuilt": 1, "profile_statements": len(statements)})
    return {"grounding": statements, "memory_stats": stats}


builder = StateGraph(
    ETAState,
    context_schema=ETAContext,
    input_schema=ActInput,
    output_schema=ActOutput,
)
builder.add_node(check_target)
builder.add_node(recall_profile)
builder.add_node(extract_chunks)
builder.add_node(aggregate_chunks)
builder.add_node(act_next)
builder.add_edge(START, "check_target")
builder.add_edge("check_target", "recall_profile")
builder.add_conditional_edges("recall_profile", route_profile)
builder.add_edge("extract_chunks", "aggregate_chunks")
builder.add_edge("aggregate_chunks", "act_next")
builder.add_edge("act_next", END)

graph = builder.compile(name="eta")


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None, store: BaseStore | None = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the ETA graph with an optional checkpointer and store (CLI, tests)."""
    return builder.compile(checkpointer=checkpointer, store=store, name="eta")
