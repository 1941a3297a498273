"""The BOOKMARKS agent: propose questions, match them to bookmarks, sync, ground, act.

Why this shape: a character's next action depends on a few facts about the story so far; the
agent asks for them as typed questions and keeps every answer as a bookmark that is synced
forward incrementally, so a later step reuses earlier work and reads only the actions it has
not seen yet. The fair-benchmark invariant holds node by node: every node reads the storyline
only through positions before the target (scene, characters seen so far, sync suffixes, answers
valid at the target), for any target and in any order of targets.

Nodes: ``propose_questions`` -> ``match_bookmarks`` -> ``sync_bookmark`` (one ``Send`` per
active bookmark) -> ``ground_context`` -> ``act_in_character``.
"""

from __future__ import annotations

import asyncio
import operator
from bisect import bisect_left
from dataclasses import dataclass, fields
from typing import Annotated, Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Overwrite, Send
from typing_extensions import TypedDict

from personae.agents.actor import act
from personae.agents.bookmark_matcher import Match, match_question
from personae.agents.question_proposer import propose_questions as ask_proposer
from personae.errors import ConfigurationError
from personae.graphs import bookmark_sync
from personae.graphs.acting import ActingContext, ActInput, ActOutput
from personae.graphs.bookmark_resources import BookmarkResources, resources_for
from personae.llm import LLMUsage
from personae.memory.bookmark import Bookmark, BookmarkType
from personae.memory.bookmark_bank import BookmarkBank
from personae.memory.storyline import Storyline
from personae.run_context import described

STAT_KEYS = (
    "reuse",
    "derive",
    "new",
    "actions_read",
    "actions_from_scratch",
    "llm_calls",
    "input_tokens",
    "output_tokens",
)
"""Every counter in a step's ``stats``."""


_SYNC_DEFAULTS = bookmark_sync.SyncSettings()


@described
@dataclass(frozen=True, kw_only=True)
class BookmarksContext(ActingContext):  # type: ignore[misc,unused-ignore]
    """Run settings of the BOOKMARKS agent (the paper's K, K', near window and sync sizes).

    The sync sizes are flat fields (so LangGraph Studio shows them) whose defaults come from
    :class:`~personae.graphs.bookmark_sync.SyncSettings`, the operators' own settings.
    """

    k_questions: int = 5
    """K: questions proposed per step."""
    k_candidates: int = 5
    """K': candidates kept by the lexical filter for each question (0: never reuse, an
    ablation where every question starts a new bookmark)."""
    near_window: int = 5
    """Bookmarks synced within this many actions before the target also ground the actor."""
    state_chunk: int = _SYNC_DEFAULTS.state_chunk
    """State sync: actions per chunk."""
    behavior_batch: int = _SYNC_DEFAULTS.behavior_batch
    """Behavioral sync: actions checked per classifier call."""
    local_scene: int = _SYNC_DEFAULTS.local_scene
    """Behavioral sync: actions shown before each checked action."""
    concept_radius: int = _SYNC_DEFAULTS.concept_radius
    """Concept sync: context window radius around keyword hits."""
    concept_top_windows: int = _SYNC_DEFAULTS.concept_top_windows
    """Concept sync: windows summarised."""

    def __post_init__(self) -> None:
        """Reject impossible settings when the context is built, not mid-run."""
        super().__post_init__()
        for name in ("k_questions", "k_candidates", "near_window"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name} must not be negative", "use 0 or more")
        self.sync_settings()

    def sync_settings(self) -> bookmark_sync.SyncSettings:
        """The sync operators' settings taken from this context (every SyncSettings field)."""
        names = (f.name for f in fields(bookmark_sync.SyncSettings))
        return bookmark_sync.SyncSettings(**{name: getattr(self, name) for name in names})


class BookmarksOutput(ActOutput):  # type: ignore[misc,unused-ignore]
    """The acting contract's output plus the bookmarks that grounded the action."""

    bookmarks: list[dict[str, Any]]
    """``{"id", "type", "question", "answer", "position"}`` for each grounding bookmark; the
    answer is the one valid at the target, ``position`` where the bookmark is synced to."""


class BookmarksState(ActInput):  # type: ignore[misc,unused-ignore]
    """Everything one step carries between nodes (input fields documented on ActInput)."""

    questions: list[dict[str, Any]]
    """Proposed questions ``{"type", "question", "keyword"}`` after the code's checks."""
    active: list[dict[str, Any]]
    """One ``{"id", "decision", "question"}`` per question, in question order."""
    synced: Annotated[list[dict[str, Any]], operator.add]
    """Per synced bookmark: its grounding entry as stored (``bookmark``, see BookmarksOutput),
    actions read, actions from scratch, LLM usage (fan-in)."""
    propose_usage: dict[str, int]
    """LLM usage of the propose node."""
    match_usage: dict[str, int]
    """LLM usage of the match node plus the reuse / derive / new counts."""
    grounding: list[str]
    """``Q: ... A: ...`` lines shown to the actor."""
    bookmarks: list[dict[str, Any]]
    """The grounding bookmarks (see BookmarksOutput)."""
    action: str
    """The predicted action."""
    stats: dict[str, int]
    """This step's counters (see ``STAT_KEYS``)."""


class SyncTask(TypedDict):
    """One fan-out branch: bring one bookmark up to the target."""

    bookmark_id: str
    """Bank id of the active bookmark."""
    character: str
    """The character acting in this step (records unknown answers for them)."""
    position: int
    """The target: the bookmark is synced through actions [0, position)."""


def _resources(runtime: Runtime[BookmarksContext]) -> BookmarkResources:
    return resources_for(runtime.context.storyline_path, runtime.context.memory_dir)


def characters_before(storyline: Storyline, target: int) -> list[str]:
    """Characters who acted before ``target``, most active (before it) first."""
    counts = {c: bisect_left(storyline.positions_of(c), target) for c in storyline.characters}
    return sorted((c for c, n in counts.items() if n), key=lambda c: (-counts[c], c))


async def propose_questions(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """Ask K typed questions about the story so far that would help the next action."""
    context, resources = runtime.context, _resources(runtime)
    storyline = resources.storyline
    character = storyline.check_character(state["character"])
    target = storyline.check_position(state["position"])
    questions, usage = await ask_proposer(
        context.llm("strong"),
        character=character,
        story=storyline.name,
        scene=storyline.scene(target, context.scene_size),
        characters=characters_before(storyline, target),
        k=context.k_questions,
        do_not_ask=resources.unknown.questions(character),
    )
    return {
        "questions": [q.model_dump() for q in questions],
        "propose_usage": usage.as_dict(),
        "synced": Overwrite([]),
    }


def activate(
    bank: BookmarkBank, match: Match, *, question: dict[str, Any], character: str
) -> Bookmark:
    """The bookmark a match activates: the reused one, a derived child, or a new empty one.

    A derived bookmark starts from its parent's answer at the parent's position (at most the
    target, since candidates are synced by it); a new one starts empty at position 0.
    """
    if match.decision == "reuse" and match.bookmark is not None:
        return match.bookmark
    parent = match.bookmark if match.decision == "derive" else None
    return bank.create(
        question=question["question"],
        type=BookmarkType(question["type"]),
        character=character,
        answer=parent.answer_at(parent.position) if parent else "",
        position=parent.position if parent else 0,
        parent_id=parent.id if parent else None,
        keyword=question.get("keyword"),
    )


async def match_bookmarks(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """Match every question to the bank's candidates: reuse, derive, or start a new bookmark."""
    context, bank = runtime.context, _resources(runtime).bank
    target, character = state["position"], state["character"]
    fast_model = context.llm("fast")
    # Chroma queries block: run them in threads so other characters' steps keep moving.
    pools = await asyncio.gather(
        *(
            asyncio.to_thread(
                bank.candidates,
                q["question"],
                type=BookmarkType(q["type"]),
                character=character,
                synced_by=target,
                k=context.k_candidates,
            )
            for q in state["questions"]
        )
    )
    decided = await asyncio.gather(
        *(
            match_question(
                fast_model, question=q["question"], type=q["type"], candidates=pool, target=target
            )
            for q, pool in zip(state["questions"], pools, strict=True)
        )
    )
    usage, counts, active = LLMUsage(), {"reuse": 0, "derive": 0, "new": 0}, []
    for question, (match, used) in zip(state["questions"], decided, strict=True):
        bookmark = await asyncio.to_thread(
            activate, bank, match, question=question, character=character
        )
        usage = usage + used
        counts["new" if match.decision == "none" else match.decision] += 1
        active.append({"id": bookmark.id, "decision": match.decision, "question": question})
    return {"active": active, "match_usage": {**usage.as_dict(), **counts}}


def route_syncs(state: BookmarksState) -> list[Send] | Literal["ground_context"]:
    """One ``Send`` per distinct active bookmark; straight to grounding when there is none."""
    ids = list(dict.fromkeys(item["id"] for item in state["active"]))
    if not ids:
        return "ground_context"
    return [
        Send(
            "sync_bookmark",
            SyncTask(bookmark_id=i, character=state["character"], position=state["position"]),
        )
        for i in ids
    ]


def save_synced(bank: BookmarkBank, bookmark: Bookmark) -> Bookmark:
    """Store a synced bookmark; if the bank already holds it further ahead, keep the stored one.

    Another step (a later target run first, a parallel character) may have synced it past
    this target: positions only move forward, and readers use ``answer_at(target)``.
    """
    try:
        bank.save(bookmark)
    except ValueError:
        return bank.get(bookmark.id)
    return bookmark


async def sync_bookmark(state: SyncTask, runtime: Runtime[BookmarksContext]) -> dict[str, Any]:
    """Bring one bookmark from its position to the target, reading only the unseen suffix."""
    context, resources = runtime.context, _resources(runtime)
    target = state["position"]
    bookmark = await asyncio.to_thread(resources.bank.get, state["bookmark_id"])
    settings = context.sync_settings()
    result = await bookmark_sync.sync_bookmark(
        bookmark,
        target,
        storyline=resources.storyline,
        index=resources.index,
        settings=settings,
        fast_model=context.llm("fast"),
        model=context.llm("strong"),
    )
    scratch = bookmark_sync.actions_from_scratch(
        bookmark, target, storyline=resources.storyline, index=resources.index, settings=settings
    )
    stored = await asyncio.to_thread(save_synced, resources.bank, result.bookmark)
    entry = grounding_entry(stored, target)
    if not entry["answer"]:
        resources.unknown.record(state["character"], stored.question)
    record = {
        "bookmark": entry,
        "actions_read": result.actions_read,
        "actions_from_scratch": scratch,
        **result.usage.as_dict(),
    }
    return {"synced": [record]}


def grounding_entry(bookmark: Bookmark, target: int) -> dict[str, Any]:
    """A bookmark as grounding at ``target`` shows it (see BookmarksOutput.bookmarks)."""
    return {
        "id": bookmark.id,
        "type": str(bookmark.type),
        "question": bookmark.question,
        "answer": bookmark.answer_at(target),
        "position": bookmark.position,
    }


def grounding_line(entry: dict[str, Any]) -> str:
    """``Q: question A: answer`` for a grounding entry."""
    return f"Q: {entry['question']} A: {entry['answer']}"


async def ground_context(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """Active bookmarks plus those synced near the target; answers as valid at the target.

    Active bookmarks come from their sync records (the stored copy each sync left), so they
    are not read from the bank again; only the near ones are.
    """
    target = state["position"]
    near = await asyncio.to_thread(
        _resources(runtime).bank.near,
        target,
        character=state["character"],
        window=runtime.context.near_window,
    )
    synced = {record["bookmark"]["id"]: record["bookmark"] for record in state["synced"]}
    active = [synced[i] for i in dict.fromkeys(item["id"] for item in state["active"])]
    entries = [*active, *(grounding_entry(b, target) for b in near)]
    known = [e for e in {e["id"]: e for e in entries}.values() if e["answer"]]
    return {"grounding": [grounding_line(e) for e in known], "bookmarks": known}


def step_stats(state: BookmarksState, acting: LLMUsage) -> dict[str, int]:
    """Sum this step's counters: match decisions, sync reads and every LLM call."""
    stats = dict.fromkeys(STAT_KEYS, 0)
    parts = [state["propose_usage"], state["match_usage"], *state["synced"], acting.as_dict()]
    for part in parts:
        for key in STAT_KEYS:
            stats[key] += int(part.get(key, 0))
    return stats


async def act_in_character(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """The character's next action from the scene and the grounding (strong model)."""
    context, storyline = runtime.context, _resources(runtime).storyline
    target = state["position"]
    action, usage = await act(
        context.llm("strong"),
        character=state["character"],
        story=storyline.name,
        scene=storyline.scene(target, context.scene_size),
        grounding=state["grounding"],
    )
    return {"action": action, "stats": step_stats(state, usage)}


builder = StateGraph(
    BookmarksState,
    context_schema=BookmarksContext,
    input_schema=ActInput,
    output_schema=BookmarksOutput,
)
builder.add_node(propose_questions)
builder.add_node(match_bookmarks)
builder.add_node("sync_bookmark", sync_bookmark, input_schema=SyncTask)
builder.add_node(ground_context)
builder.add_node(act_in_character)
builder.add_edge(START, "propose_questions")
builder.add_edge("propose_questions", "match_bookmarks")
builder.add_conditional_edges("match_bookmarks", route_syncs, ["sync_bookmark", "ground_context"])
builder.add_edge("sync_bookmark", "ground_context")
builder.add_edge("ground_context", "act_in_character")
builder.add_edge("act_in_character", END)

graph = builder.compile(name="bookmarks")


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None, store: BaseStore | None = None
) -> CompiledStateGraph[BookmarksState, BookmarksContext, ActInput, BookmarksOutput]:
    """The graph compiled with a checkpointer / store (CLI, tests); ``graph`` has none."""
    return builder.compile(checkpointer=checkpointer, store=store, name="bookmarks")
