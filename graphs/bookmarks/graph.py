"""The BOOKMARKS agent: propose questions, match them to bookmarks, sync, ground, act.

Why this shape: a character's next action depends on a few facts about the story so far; the
agent asks for them as typed questions and keeps every answer as a bookmark that is synced
forward incrementally, so a later step reuses earlier work and reads only the actions it has
not seen yet. The fair-benchmark invariant holds node by node: every node reads the storyline
only through positions before the target (scene, characters seen so far, sync suffixes, answers
valid at the target), for any target and in any order of targets.

Nodes: ``propose_questions`` -> ``match_bookmarks`` -> ``sync_bookmark`` (one ``Send`` per
active bookmark) -> ``save_bookmarks`` -> ``ground_context`` -> ``act_in_character``. The bank
is written once per step, by ``save_bookmarks``: matching creates no record and each sync
returns its bookmark in the state (where a checkpoint keeps it), so a step costs one upsert
however many bookmarks it touched, and a step killed before its save leaves the bank as it was.
"""

from __future__ import annotations

import asyncio
import operator
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from typing_extensions import TypedDict

from personae.agents.bookmarks.actor import act
from personae.agents.bookmarks.profile_extractor import EMPTY_PROFILE
from personae.agents.bookmarks.question_proposer import (
    ProposedQuestion,
    propose_released_questions,
)
from personae.agents.bookmarks.question_proposer import propose_questions as ask_proposer
from personae.errors import ConfigurationError
from personae.fanout import gather_all
from personae.graphs.bookmarks import sync as bookmark_sync
from personae.graphs.bookmarks.acting import ActingContext, ActInput, ActOutput
from personae.graphs.bookmarks.baseline_eta import profile_at
from personae.graphs.bookmarks.resources import BookmarkResources, resources_for
from personae.graphs.bookmarks.step import (
    ActiveBookmark,
    BookmarkStepSettings,
    GroundingEntry,
    Question,
    Resolution,
    SyncRecord,
    activate,
    active_bookmark,
    find_candidates,
    grounding_entry,
    outcome_record,
    resolve_question,
    save_records,
    sync_active,
)
from personae.graphs.server_entry import server_entry
from personae.graphs.store_context import EmbeddingAccess
from personae.llm import LLMUsage
from personae.memory.bookmarks.bookmark import Bookmark
from personae.memory.bookmarks.storyline import Storyline
from personae.run_context import described

STAT_KEYS = (
    "questions_dropped",
    "reuse",
    "derive",
    "new",
    "actions_read",
    "actions_from_scratch",
    "llm_calls",
    "input_tokens",
    "output_tokens",
    "degraded",
)
"""Every counter in a step's ``stats`` (``degraded``: model answers still invalid after
retries, each kept as it was, unknown or not evidence, per role)."""


RolePreset = Literal["paper", "released"]
"""Model roles as the paper's text gives them, or as the released runner assigns them."""
Task = Literal["propose", "match", "check", "summarize"]
"""Kinds of calls besides acting: propose questions; match and derive; state and evidence
checks; behavior summaries, concept keywords and concept answers."""
STRONG_TASKS: dict[str, frozenset[str]] = {
    "paper": frozenset(),
    "released": frozenset({"propose", "match", "summarize"}),
}
"""Calls the strong model makes under each preset (acting always; the rest on the fast one).
The paper (§5.1): "gpt-5.4-mini is applied for all other calls". The released runner: --model
(proposer, matcher, derive, concept keyword and update, behavior summary, profile) and
--disc-model (state check and update, behavioral yes / no)."""


@described
@dataclass(frozen=True, kw_only=True)
class BookmarksContext(EmbeddingAccess, ActingContext):
    """Run settings of the BOOKMARKS agent (the paper's K, K', near window; its ablations).

    Besides the acting settings of :class:`ActingContext` (storyline, scene, title, memory).
    What follows from the paper is derived, not set: the sync operators' sizes are the
    released runner's (:meth:`sync_settings`), the running profile is updated as its runner
    does (:attr:`profile_every`, :attr:`profile_chunk`).
    """

    profile_every: ClassVar[int] = 16
    """With a profile: actions between its updates (the paper's method: at a target at least
    this far past the last update, as the released runner; ours: at every multiple)."""
    profile_chunk: ClassVar[int] = 64
    """With a profile: actions per profile update chunk (the released runner's)."""

    # -- the method: prompts and who runs which call
    prompts: bookmark_sync.PromptSet = "released"
    """released: the released runner's proposer, matcher, sync and actor prompts (the paper's
    method, ``bookmarks``); personae: ours (``bookmarks-personae``)."""
    roles: RolePreset = "paper"
    """Which model runs which call, and what the proposer and actor see. paper (§5.1): the
    strong model acts (and updates ETA profiles), the fast one makes every other call, grounding
    is the bookmarks; released (the released runner's defaults): the strong model also proposes,
    matches, derives and writes the behavior and concept answers, the fast one checks states and
    behavior evidence, and the proposer and actor also see the running profile (the proposer the
    search history too)."""
    # -- the paper's sizes (§5.1) and its ablations (Table 3)
    k_questions: int = 5
    """K: questions proposed per step."""
    k_candidates: int = 5
    """K': candidates kept by the lexical filter for each question (0: never reuse, an
    ablation where every question starts a new bookmark)."""
    near_window: int = 5
    """Bookmarks synced within this many actions before the target also ground the actor
    (0: none, the "w/o near notes" ablation)."""
    derive: bool = True
    """Whether a "derive" match derives a child from its parent's answer (off: an ablation
    where it starts a new bookmark from scratch)."""
    incremental_behavior: bool = False
    """The IBU ablation (Table 3): behavioral bookmarks synced chunk by chunk like states."""
    with_profile: bool = False
    """Also ground on the character's running ETA profile, as the released runner does
    (always under the released roles; off under the paper's, whose text grounds on bookmarks
    only)."""
    # -- plumbing: the bank's embedding (the server and folder: ActingContext)
    embedding: str = ""
    """Embedding of the bookmark bank: hashing (word overlap, offline), local (all-MiniLM-L6-v2
    on numpy, offline) or openai:<model> (the /embeddings endpoint of this run's server). Each
    embedding keeps its own collections. Empty: PERSONAE_EMBEDDINGS, else hashing."""

    def __post_init__(self) -> None:
        """Reject impossible settings when the context is built, not mid-run."""
        super().__post_init__()
        self.fill_embedding()
        for name in ("k_questions", "k_candidates", "near_window"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name} must not be negative", "use 0 or more")

    def task_llm(self, task: Task) -> BaseChatModel:
        """The chat model of one kind of call under this run's role preset."""
        return self.llm("strong" if task in STRONG_TASKS[self.roles] else "fast")

    @property
    def grounds_on_profile(self) -> bool:
        """Whether the running ETA profile grounds the actor (released roles, or asked)."""
        return self.with_profile or self.roles == "released"

    def sync_settings(self) -> bookmark_sync.SyncSettings:
        """The sync operators' settings: this run's prompts and IBU switch, the runner's sizes."""
        return bookmark_sync.SyncSettings(
            prompts=self.prompts, incremental_behavior=self.incremental_behavior
        )

    def step_settings(self) -> BookmarkStepSettings:
        """What one question's step may do (shared with the storyline_memory tool)."""
        return BookmarkStepSettings(
            k_candidates=self.k_candidates, derive=self.derive, sync=self.sync_settings()
        )


class BookmarksOutput(ActOutput):
    """The acting contract's output plus the bookmarks that grounded the action."""

    bookmarks: list[GroundingEntry]
    """Each grounding bookmark; the answer is the one valid at the target, ``position``
    where the bookmark is synced to."""


class BookmarksState(ActInput):
    """Everything one step carries between nodes (input fields documented on ActInput)."""

    questions: list[Question]
    """Proposed questions after the code's checks."""
    active: list[ActiveBookmark]
    """One per question, in question order."""
    synced: Annotated[list[SyncRecord], operator.add]
    """Per synced bookmark: the synced record (not stored yet), actions read and from scratch,
    LLM usage."""
    saved: list[GroundingEntry]
    """The active bookmarks as the step's one write stored them, at the target, in order."""
    propose_usage: dict[str, int]
    """LLM usage of the propose node."""
    match_usage: dict[str, int]
    """LLM usage of the match node plus the reuse / derive / new counts."""
    ground_usage: dict[str, int]
    """LLM usage of the grounding node (the running profile, when on)."""
    grounding: list[str]
    """``Q: ... A: ...`` lines shown to the actor (after ``Profile: ...`` when on)."""
    bookmarks: list[GroundingEntry]
    """The grounding bookmarks (see BookmarksOutput)."""
    action: str
    """The predicted action."""
    stats: dict[str, int]
    """This step's counters (see ``STAT_KEYS``)."""


class SyncTask(TypedDict):
    """One fan-out branch: bring one bookmark up to the target."""

    bookmark_id: str
    """Id of the active bookmark."""
    created: str
    """A bookmark the step created: its record (JSON); ``""``: read ``bookmark_id`` from the
    bank."""
    position: int
    """The target: the bookmark is synced through actions [0, position)."""


async def _resources(runtime: Runtime[BookmarksContext]) -> BookmarkResources:
    """The run's storyline, index and bank, opened in a thread (paths, Chroma and files block)."""
    context = runtime.context

    def open_resources() -> BookmarkResources:  # the embedding may load a model: in the thread
        return resources_for(
            context.storyline_path, context.memory_dir, context.chroma, context.text_embedding()
        )

    return await asyncio.to_thread(open_resources)


def characters_before(storyline: Storyline, target: int) -> list[str]:
    """Characters who acted before ``target``, most active (before it) first."""
    counts = {c: bisect_left(storyline.positions_of(c), target) for c in storyline.characters}
    return sorted((c for c, n in counts.items() if n), key=lambda c: (-counts[c], c))


async def propose_questions(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """Ask K typed questions about the story so far that would help the next action."""
    context, resources = runtime.context, await _resources(runtime)
    storyline = resources.storyline
    character = storyline.check_character(state["character"])
    target = storyline.check_position(state["position"])
    if context.prompts == "released":
        questions, usage, dropped = await _propose_released(context, resources, character, target)
    else:
        questions, usage, dropped = await ask_proposer(
            context.task_llm("propose"),
            character=character,
            story=context.story_title(storyline.name),
            scene=storyline.scene(target, context.scene_size),
            characters=characters_before(storyline, target),
            k=context.k_questions,
            do_not_ask=resources.unknown.questions(character, before=target),
            acting_format=storyline.acting_format,
        )
    return {
        "questions": [
            Question(type=q.type, question=q.question, keyword=q.keyword) for q in questions
        ],
        "propose_usage": {**usage.as_dict(), "questions_dropped": dropped},
        "synced": Overwrite([]),
    }


async def _propose_released(
    context: BookmarksContext, resources: BookmarkResources, character: str, target: int
) -> tuple[list[ProposedQuestion], LLMUsage, int]:
    """The released proposer; under the released roles it also sees profile and history."""
    storyline, profile, history, usage = resources.storyline, None, None, LLMUsage()
    if context.roles == "released":
        profile, usage = await running_profile(context, storyline.name, character, target)
        near = await asyncio.to_thread(
            resources.bank.near, target, character=character, window=context.near_window
        )
        history = released_report([grounding_entry(b, target) for b in near])
    questions, used, dropped = await propose_released_questions(
        context.task_llm("propose"),
        character=character,
        scene=storyline.scene(target, context.scene_size),
        k=context.k_questions,
        acting_format=storyline.acting_format,
        profile=profile,
        history=history,
    )
    return questions, usage + used, dropped


def released_report(entries: Sequence[Mapping[str, Any]]) -> str:
    """The released ``build_report``: ``# Query: ...`` / ``# Answer: ...`` / ``---`` per bookmark.

    An answer not found yet shows as "unknown", which the proposer reads as a failed trial.
    """
    return "\n".join(
        f"# Query: {e['question']}\n# Answer: {e['answer'] or 'unknown'}\n---" for e in entries
    )


async def match_bookmarks(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """Match every question to the bank's candidates: reuse, derive, or start a new bookmark.

    The candidates of all questions are found together (one embedding call, one product per
    scope, in a thread); the model calls (match, derive) run concurrently; new bookmarks then
    get their ids in question order, so ids do not depend on which call finished first.
    Nothing is written: they are stored, synced, by ``save_bookmarks``.
    """
    context, resources = runtime.context, await _resources(runtime)
    target, character, questions = state["position"], state["character"], state["questions"]
    settings, fast_model = context.step_settings(), context.task_llm("match")
    scene = resources.storyline.scene(target, context.scene_size)
    found = await asyncio.to_thread(
        find_candidates, resources, questions, character=character, target=target, settings=settings
    )
    resolved = await gather_all(
        resolve_question(
            resources,
            question,
            character=character,
            target=target,
            fast_model=fast_model,
            settings=settings,
            scene=scene,
            candidates=candidates,
        )
        for question, candidates in zip(questions, found, strict=True)
    )
    active = await asyncio.to_thread(_activate_all, resources, questions, resolved, character)
    usage = sum((r.usage for r in resolved), LLMUsage())
    counts = {"reuse": 0, "derive": 0, "new": 0}
    for item in active:
        counts["new" if item["decision"] == "none" else item["decision"]] += 1
    return {"active": active, "match_usage": {**usage.as_dict(), **counts}}


def _activate_all(
    resources: BookmarkResources,
    questions: Sequence[Question],
    resolved: Sequence[Resolution],
    character: str,
) -> list[ActiveBookmark]:
    """The bookmark each resolution activates, in question order (new ids in that order)."""
    active: list[ActiveBookmark] = []
    for question, resolution in zip(questions, resolved, strict=True):
        bookmark = activate(
            resources.bank,
            resolution.match,
            question=question,
            character=character,
            answer=resolution.answer,
        )
        active.append(active_bookmark(question, bookmark, resolution.match.decision))
    return active


def route_syncs(state: BookmarksState) -> list[Send] | Literal["save_bookmarks"]:
    """One ``Send`` per distinct active bookmark; straight to saving when there is none."""
    unique = list({item["id"]: item for item in state["active"]}.values())
    if not unique:
        return "save_bookmarks"
    return [
        Send(
            "sync_bookmark",
            SyncTask(
                bookmark_id=item["id"], created=item.get("created", ""), position=state["position"]
            ),
        )
        for item in unique
    ]


async def sync_bookmark(state: SyncTask, runtime: Runtime[BookmarksContext]) -> dict[str, Any]:
    """Bring one bookmark from its position to the target, reading only the unseen suffix.

    The synced bookmark goes into the state, not the bank: ``save_bookmarks`` writes them all.
    """
    context = runtime.context
    start = (
        Bookmark.model_validate_json(state["created"]) if state["created"] else state["bookmark_id"]
    )
    outcome = await sync_active(
        await _resources(runtime),
        start,
        target=state["position"],
        fast_model=context.task_llm("check"),
        model=context.task_llm("summarize"),
        settings=context.step_settings(),
    )
    return {"synced": [outcome_record(outcome, created=bool(state["created"]))]}


async def save_bookmarks(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """Store the step's synced bookmarks in one write; record the answers still unknown.

    Entries follow the active bookmarks' order, whatever order the fan-in gathered the records
    in. A bookmark another step synced further meanwhile is kept as stored.
    """
    resources = await _resources(runtime)
    by_id = {record["id"]: record for record in state["synced"]}
    records = [by_id[i] for i in dict.fromkeys(item["id"] for item in state["active"])]
    saved = await asyncio.to_thread(
        save_records,
        resources,
        records,
        character=state["character"],
        target=state["position"],
    )
    return {"saved": saved}


def grounding_line(entry: Mapping[str, Any]) -> str:
    """``Q: question A: answer`` for a grounding entry."""
    return f"Q: {entry['question']} A: {entry['answer']}"


async def ground_context(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """Active bookmarks plus those synced near the target; answers as valid at the target.

    Active bookmarks come from the step's save (the stored copies), so they are not read from
    the bank again; only the near ones are (none with ``near_window`` 0). The paper's method
    shows them as the released report (``# Query`` / ``# Answer`` / ``---``); under the released
    roles (or ``with_profile``) the character's running ETA profile comes first, as the
    released runner's grounding is ``profile + bookmark report``.
    """
    context, target = runtime.context, state["position"]
    resources = await _resources(runtime)
    near: list[Bookmark] = []
    if context.near_window > 0:
        near = await asyncio.to_thread(
            resources.bank.near,
            target,
            character=state["character"],
            window=context.near_window,
        )
    entries = [*state.get("saved", []), *(grounding_entry(b, target) for b in near)]
    unique = list({e["id"]: e for e in entries}.values())
    known = [e for e in unique if e["answer"]]
    if context.prompts == "released":  # the released report, "unknown" answers included
        lines = [released_report(unique)] if unique else []
    else:
        lines = [grounding_line(e) for e in known]
    usage = LLMUsage()
    if context.grounds_on_profile:  # the released runner's grounding: profile + report
        name = resources.storyline.name
        profile, usage = await running_profile(context, name, state["character"], target)
        if context.prompts == "released":  # the runner's `profile + "\n\n" + report`
            lines = [profile or EMPTY_PROFILE, "", *lines]
        elif profile:
            lines = [f"Profile: {profile}", *lines]
    return {"grounding": lines, "bookmarks": known, "ground_usage": usage.as_dict()}


async def running_profile(
    context: BookmarksContext, story: str, character: str, target: int
) -> tuple[str, LLMUsage]:
    """The character's running ETA profile at ``target`` (strong model).

    The paper's method updates it on the released runner's schedule (at the character's own
    targets, 16 actions or more after the last update, every chunk read); ours on a fixed grid.
    """
    result = await profile_at(
        context.storyline_path,
        context.memory_dir,
        character=character,
        target=target,
        model=context.llm("strong"),
        every=context.profile_every,
        chunk=context.profile_chunk,
        story=context.story_title(story),
        schedule="runner" if context.prompts == "released" else "grid",
    )
    return result.profile, result.usage


def step_warnings(stats: Mapping[str, int]) -> list[str]:
    """What a step's user must know: no question kept means no bookmark grounded the action.

    The proposer's questions are the agent's only way into its memory; when the code drops all
    of them (or the model proposed none), the action rests on the scene and nearby bookmarks
    alone, and that must be visible rather than look like an ordinary step.
    """
    asked = sum(int(stats.get(key, 0)) for key in ("reuse", "derive", "new"))
    if asked:
        return []
    dropped = int(stats.get("questions_dropped", 0))
    why = f"the model proposed {dropped}, all dropped by the code" if dropped else "none proposed"
    return [f"no question kept this step ({why}): no bookmark was matched or synced"]


def step_stats(state: BookmarksState, acting: LLMUsage) -> dict[str, int]:
    """Sum this step's counters: match decisions, sync reads and every LLM call."""
    stats: dict[str, int] = dict.fromkeys(STAT_KEYS, 0)
    synced = [{k: v for k, v in r.items() if isinstance(v, int)} for r in state["synced"]]
    parts: list[Mapping[str, int]] = [
        state["propose_usage"],
        state["match_usage"],
        *synced,
        state["ground_usage"],
        acting.as_dict(),
    ]
    for part in parts:
        for key in STAT_KEYS:
            stats[key] += int(part.get(key, 0))
    return stats


async def act_in_character(
    state: BookmarksState, runtime: Runtime[BookmarksContext]
) -> dict[str, Any]:
    """The character's next action from the scene and the grounding (strong model)."""
    context, storyline = runtime.context, (await _resources(runtime)).storyline
    target = state["position"]
    action, usage = await act(
        context.llm("strong"),
        character=state["character"],
        story=context.story_title(storyline.name),
        scene=storyline.scene(target, context.scene_size),
        grounding=state["grounding"],
        acting_format=storyline.acting_format,
        plain=context.prompts == "released",
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
builder.add_node(save_bookmarks)
builder.add_node(ground_context)
builder.add_node(act_in_character)
builder.add_edge(START, "propose_questions")
builder.add_edge("propose_questions", "match_bookmarks")
builder.add_conditional_edges("match_bookmarks", route_syncs, ["sync_bookmark", "save_bookmarks"])
builder.add_edge("sync_bookmark", "save_bookmarks")
builder.add_edge("save_bookmarks", "ground_context")
builder.add_edge("ground_context", "act_in_character")
builder.add_edge("act_in_character", END)

graph = builder.compile(name="bookmarks")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[BookmarksState, BookmarksContext, ActInput, BookmarksOutput]:
    """The graph compiled with a checkpointer (CLI, tests); ``graph`` has none."""
    return builder.compile(checkpointer=checkpointer, name="bookmarks")
