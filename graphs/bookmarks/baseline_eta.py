"""ETA baseline of the BOOKMARKS benchmark: a running profile, updated recurrently.

Extract-and-aggregate as the paper describes it (and the released runner runs it): "start from
empty, ETA updates the profile whenever a new action of the target character is observed by
aggregating the summarized new information". Two schedules (:data:`ProfileSchedule`):

- ``runner`` (ETA and the paper's method under the released roles): the released runner's
  ``maybe_update_profile`` (src/bookmarks/benchmark.py). At a target ``t`` of the character,
  once ``rebuild_every`` actions (16, ``--profile-update-every``) have passed since the last
  update point ``p``, the actions ``[p, t)`` are read in ``chunk``-action chunks (64,
  ``--step``), every chunk, each profiled (extract) and folded into the running profile
  (aggregate: previous profile + new chunk profile -> new profile); ``t`` becomes the update
  point. Closer than that, the profile of ``p`` is used as it is. Targets met in story order
  (as the benchmark meets them) give exactly the runner's update points.
- ``grid`` (ours, ``bookmarks-personae`` with a profile): the profile at
  ``r = rebuild_every * floor(t / rebuild_every) <= t``, built from ``[0, r)``; a chunk in
  which the character neither acts nor is named is skipped without a model call.

Either way the profile at ``t`` is built from actions before ``t`` only. A chunk's extraction
is stored by its exact ``[start, stop)``,
so another run that meets the same chunk reuses it. Both calls run on the strong model (the
paper's section 5.1: "profile updating in ETA"). Profiles persist under ``memory_dir`` (see
``memory/bookmarks/eta_profile_store.py``); the BOOKMARKS agent's ``with_profile`` grounding uses the same
:func:`profile_at`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from personae.agents.bookmarks.profile_extractor import (
    EMPTY_PROFILE,
    extract_profile,
    update_profile,
)
from personae.graphs.bookmarks.acting import ActingContext
from personae.graphs.bookmarks.baseline_resources import eta_profiles_for
from personae.graphs.bookmarks.baseline_vanilla import (
    BaselineState,
    baseline_builder,
    check_positive,
)
from personae.graphs.server_entry import server_entry
from personae.llm import InvalidAnswerError, LLMUsage
from personae.memory.bookmarks.eta_profile_store import ChunkFacts, ETAProfile, ETAProfileStore
from personae.memory.bookmarks.storyline import StoryAction, open_storyline
from personae.run_context import described


@described
@dataclass(frozen=True, kw_only=True)
class ETAContext(ActingContext):
    """Run settings of the ETA baseline (the released runner's defaults)."""

    chunk: int = 64
    """Actions per profile update chunk."""
    rebuild_every: int = 16
    """The profile is brought up to date at a target this many actions or more past the last
    update (the released ``--profile-update-every``)."""

    def __post_init__(self) -> None:
        """Reject settings no run could use, naming the field."""
        super().__post_init__()
        check_positive(self, "scene_size", "chunk", "rebuild_every")


ETA_COUNTERS = (
    "rebuild_point",
    "profile_from",
    "profile_updated",
    "chunks_extracted",
    "chunks_reused",
    "chunks_skipped",
    "actions_read",
    "actions_from_scratch",
)
"""The method counters every ETA run reports in ``stats`` (besides the LLM usage):
``profile_from`` is the point of the stored profile the update started from,
``actions_read`` counts the actions of the chunks profiled in this run,
``actions_from_scratch`` the ``r`` actions a profile built from nothing would read."""


ProfileSchedule = Literal["runner", "grid"]
"""When profiles are updated: the released runner's rule (the paper's protocol) or our grid."""


def rebuild_point(target: int, every: int) -> int:
    """The last update point at or before ``target``: ``every * floor(target / every)``."""
    return every * (target // every)


def update_chunks(start: int, point: int, size: int) -> list[tuple[int, int]]:
    """The ``[low, high)`` chunks of ``[start, point)``, ``size`` actions each (the last shorter)."""
    return [(low, min(low + size, point)) for low in range(start, point, size)]


def mentions(chunk: Sequence[StoryAction], character: str) -> bool:
    """Whether ``character`` acts in or is named by any action of ``chunk``."""
    name = character.lower()
    return any(action.by(character) or name in action.text.lower() for action in chunk)


@dataclass
class ProfileResult:
    """The running profile at an update point, and what bringing it there cost."""

    profile: str
    """The profile text (``""`` before the first update that saw the character)."""
    usage: LLMUsage = field(default_factory=LLMUsage)
    stats: dict[str, int] = field(default_factory=dict)


async def profile_at(
    storyline_path: str,
    memory_dir: str | None,
    *,
    character: str,
    target: int,
    model: BaseChatModel,
    every: int = 16,
    chunk: int = 64,
    story: str | None = None,
    schedule: ProfileSchedule = "runner",
) -> ProfileResult:
    """``character``'s running profile at ``target`` under ``schedule``, updated if due.

    Continues recurrently from the latest stored profile at or before the update point (the
    empty profile at 0), one extract + aggregate per chunk (under ``grid``, per chunk that
    observes the character). A chunk whose extract or update is still invalid after retries
    degrades the update: the profile as of the chunk before grounds this step, nothing is
    stored, and the next step retries.
    """
    store = await asyncio.to_thread(eta_profiles_for, storyline_path, memory_dir)
    storyline = await asyncio.to_thread(open_storyline, storyline_path)
    point = rebuild_point(target, every) if schedule == "grid" else target
    latest = await asyncio.to_thread(store.latest_profile, character, point)
    start = latest.rebuild_point if latest else 0
    if schedule == "runner" and target - start < every:
        point = start  # maybe_update_profile: fewer than `every` actions since the last update
    profile = latest.statements[0] if latest and latest.statements else ""
    result = ProfileResult(profile, stats=dict.fromkeys(ETA_COUNTERS, 0))
    result.stats.update(rebuild_point=point, profile_from=start, actions_from_scratch=point)
    if start == point:
        return result
    for low, high in update_chunks(start, point, chunk):
        actions = storyline.before(high, low)
        if schedule == "grid" and not mentions(actions, character):
            result.stats["chunks_skipped"] += 1
            continue
        try:
            await _update_with_chunk(result, store, model, character, story, (low, high), actions)
        except InvalidAnswerError as failed:
            result.usage = result.usage + failed.usage + LLMUsage(degraded=1)
            return result
    chunks = tuple(update_chunks(start, point, chunk))
    saved = ETAProfile(character, point, (result.profile,) if result.profile else (), chunks, start)
    await asyncio.to_thread(store.save_profile, saved)
    result.stats["profile_updated"] = 1
    return result


async def _update_with_chunk(
    result: ProfileResult,
    store: ETAProfileStore,
    model: BaseChatModel,
    character: str,
    story: str | None,
    span: tuple[int, int],
    actions: Sequence[StoryAction],
) -> None:
    """Extract the chunk's profile (or reuse the stored one) and aggregate it into ``result``."""
    low, high = span
    cached = await asyncio.to_thread(store.chunk_facts, character, low, high)
    if cached is not None and cached.facts:
        new_profile = cached.facts[0]
        result.stats["chunks_reused"] += 1
    else:
        new_profile, cost = await extract_profile(
            model, character=character, story=story, chunk=actions
        )
        result.usage = result.usage + cost
        extracted = ChunkFacts(low, high, (new_profile,))
        await asyncio.to_thread(store.save_chunk_facts, character, extracted)
        result.stats["chunks_extracted"] += 1
        result.stats["actions_read"] += high - low
    result.profile, cost = await update_profile(
        model, profile=result.profile, new_profile=new_profile
    )
    result.usage = result.usage + cost


async def build_profile(state: BaselineState, runtime: Runtime[ETAContext]) -> dict[str, Any]:
    """Bring the character's profile to the last update point before the target; ground on it."""
    context = runtime.context
    storyline = await asyncio.to_thread(open_storyline, context.storyline_path)
    result = await profile_at(
        context.storyline_path,
        context.memory_dir,
        character=state["character"],
        target=state["position"],
        model=context.llm("strong"),
        every=context.rebuild_every,
        chunk=context.chunk,
        story=context.story_title(storyline.name),
    )
    stats = {**result.stats, **result.usage.as_dict()}
    return {"grounding": [result.profile or EMPTY_PROFILE], "memory_stats": stats}


builder = baseline_builder(ETAContext, build_profile)
graph = builder.compile(name="eta")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the ETA graph with an optional checkpointer (CLI, tests)."""
    return builder.compile(checkpointer=checkpointer, name="eta")
