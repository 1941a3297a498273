"""ARCANE role-play: one answer for (probe, phase, context mode, model), as of the query chapter.

Why this shape: the six context modes (Vanilla, Summary, RAG, LifeChoice, TimeChara, Arc) share
the Table 31 prompt and differ only in the context block or the TimeChara hint, so one graph
routes on the mode and every path ends in the same ``render_prompt`` -> ``audit_no_future`` ->
``act_in_character``. The audit enforces the benchmark's fairness invariant before any model
sees the prompt: every context segment (summary, chunk, arc phase) carries its chapter, and none
may come from after the query chapter. The novel's summaries and chunk index are built once
per novel (``personae arcane prepare``); here they are only read.

Nodes: ``load_task`` -> ``build_context`` | (``ask_experts`` -> ``make_hint``) ->
``render_prompt`` -> ``audit_no_future`` -> ``act_in_character``.
"""

from __future__ import annotations

import asyncio
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from personae.agents.arcane import timechara
from personae.agents.arcane.roleplayer import (
    ABLATION_MODES,
    MODES,
    arc_context,
    archint_lines,
    mixedarc_arc,
    mixedarc_donor,
    render_system,
    render_user,
    roleplay_messages,
    with_pov,
)
from personae.errors import InputError
from personae.graphs.arcane.context import ChunkStoreContext
from personae.graphs.server_entry import server_entry
from personae.llm import LLMUsage, call_text, with_sampling
from personae.memory.arcane.novel_chunks import ChunkIndex
from personae.memory.arcane.novel_store import Novel, open_novel, slugify
from personae.memory.arcane.records import (
    ArcRecord,
    ProbeRecord,
    load_arcs,
    load_probes,
    load_summaries,
)
from personae.memory.embeddings import TextEmbedding
from personae.process_caches import clears_on_reset
from personae.run_context import ModelSpec, described
from personae.settings import Settings


@described
@dataclass(frozen=True, kw_only=True)
class RoleplayContext(ChunkStoreContext):
    """Run settings of an ARCANE role-play (App. E defaults); ``model`` plays the character.

    Besides the models and folders of :class:`ArcaneContext` and the chunk index's store
    (:class:`ChunkStoreContext`): what each mode shows the character and the TimeChara experts.
    """

    # -- what the modes show (App. E)
    rag_k: int = 6
    """Chunks retrieved (RAG, LifeChoice)."""
    summary_max_chapters: int = 5
    """Summaries shown: chapters qc-4..qc."""
    arc_scope: Literal["axis", "character"] = "axis"
    """Arc payload: the probe's axis (T32) or every axis of the character."""
    # -- the TimeChara experts (App. D)
    expert_model: ModelSpec = ""
    """TimeChara experts' model. Empty: the role-play model (spec default 45)."""
    expert_temperature: float = 0.0
    """TimeChara experts' temperature (App. D: the two-stage hint extractor runs at T = 0,
    whatever the role-play sampling)."""


class RoleplayInput(TypedDict):
    """A stored probe's phase (``probe_id`` + ``phase_idx``) or an ad-hoc scene (``arcane act``)."""

    novel: str
    """Book slug or title."""
    mode: str
    """One of vanilla, summary, rag, lifechoice, timechara, arc."""
    probe_id: NotRequired[str]
    """A probe of probes.jsonl."""
    phase_idx: NotRequired[int]
    """The probe's phase to answer as (its query chapter applies)."""
    character: NotRequired[str]
    """Ad-hoc: who speaks."""
    chapter: NotRequired[int]
    """Ad-hoc: the point in the story (the query chapter)."""
    scenario: NotRequired[str]
    """Ad-hoc: the situation."""
    question: NotRequired[str]
    """Ad-hoc: the question (default: what the character does)."""
    axis_id: NotRequired[str]
    """Ad-hoc: the arc axis for Arc mode (default: every axis of the character)."""


def scene_input(
    novel: str,
    mode: str,
    character: str,
    chapter: int,
    scenario: str,
    question: str | None = None,
    axis: str | None = None,
) -> RoleplayInput:
    """The input of an ad-hoc scene (no stored probe): the runner's and the tool's one shape."""
    payload: RoleplayInput = {
        "novel": novel,
        "mode": mode,
        "character": character,
        "chapter": chapter,
        "scenario": scenario,
    }
    if question:
        payload["question"] = question
    if axis:
        payload["axis_id"] = axis
    return payload


class RoleplayOutput(TypedDict):
    """The answer and the exact prompt that produced it."""

    response: str
    """The character's answer."""
    system: str
    """T31 system message as sent."""
    user: str
    """T31 user message as sent."""
    query_chapter: int
    """The chapter the character is at."""
    context_chapters: list[int]
    """The chapter of every context segment (all <= query_chapter)."""
    hint: str | None
    """The TimeChara hint, if any."""
    usage: dict[str, int]
    """LLM calls and tokens of this answer (experts included; cache hits cost 0)."""


class RoleplayState(RoleplayInput, RoleplayOutput):
    """Input, output and the resolved task."""

    task: RoleplayTask
    """What to answer, resolved from the probe or the ad-hoc input."""
    context: str
    """The mode's context block."""
    predicted_chapter: int | None
    """TimeChara: the temporal expert's chapter (None: unknown)."""
    presence: Literal["present", "absent"] | None
    """TimeChara: the spatial expert's verdict (None: not asked)."""


class RoleplayTask(TypedDict):
    """A resolved role-play task."""

    title: str
    """Novel title shown to the model."""
    total_chapters: int
    """C (the temporal expert is told it)."""
    character: str
    """Who speaks."""
    query_chapter: int
    """Knowledge cutoff."""
    scenario: str
    """Scenario text."""
    question: str
    """Question text."""
    target: str | None
    """The relational axis's target (T31's "[If the axis is relational:]"); None otherwise."""
    axis_ids: list[str]
    """Axes for the Arc payload."""
    cache_scope: str
    """Probe id (or scenario) the TimeChara experts are cached under."""


@dataclass(frozen=True)
class NovelResources:
    """What role-play reads of a novel, loaded once per (folder, files' state)."""

    novel: Novel
    summaries: dict[int, str]
    arcs: list[ArcRecord]
    probes: dict[str, ProbeRecord]
    index: ChunkIndex | None


def _stamp(folder: Path) -> tuple[float, ...]:
    names = ("meta.json", "summaries.jsonl", "arcs.jsonl", "probes.jsonl", "chroma")
    return tuple((folder / n).stat().st_mtime if (folder / n).exists() else 0.0 for n in names)


def load_resources(
    data_dir: str,
    book: str,
    embedding: TextEmbedding | None = None,
    chroma: Settings | None = None,
) -> NovelResources:
    """The novel's resources, cached until one of its files changes (blocking: use a thread).

    ``embedding`` and ``chroma`` (None: hashing, embedded Chroma) are the run context's store
    settings. An index not found on a Chroma server is looked up again on the next call (the
    server's changes do not touch the novel's files).
    """
    novel = open_novel(Path(data_dir), book)  # cached; a one-line error for an unknown book
    res = _cached(str(novel.folder), embedding, chroma, _stamp(novel.folder))
    if res.index is None and chroma is not None:
        found = ChunkIndex.find(res.novel, embedding, chroma)
        if found is not None:
            res = NovelResources(res.novel, res.summaries, res.arcs, res.probes, found)
    return res


@functools.lru_cache(maxsize=16)
def _cached(
    folder: str,
    embedding: TextEmbedding | None,
    chroma: Settings | None,
    stamp: tuple[float, ...],
) -> NovelResources:
    path = Path(folder)
    novel = open_novel(path.parent.parent, path.name)
    index = ChunkIndex.find(novel, embedding, chroma)
    probes = {p.probe_id: p for p in load_probes(path)}
    return NovelResources(novel, load_summaries(path), load_arcs(path), probes, index)


clears_on_reset("graphs.arcane.roleplay.novel_resources", _cached.cache_clear)


def _check_mode(mode: str) -> str:
    if mode not in (*MODES, *ABLATION_MODES):
        known = ", ".join((*MODES, *ABLATION_MODES))
        raise InputError(f"unknown mode {mode!r}", f"use one of {known}")
    return mode


def resolve_task(res: NovelResources, state: RoleplayInput, arc_scope: str) -> RoleplayTask:
    """The task for a stored probe's phase or an ad-hoc scene; one-line errors otherwise."""
    novel = res.novel
    if "probe_id" in state:
        probe = res.probes.get(state["probe_id"])
        if probe is None:
            raise InputError(
                f"unknown probe {state['probe_id']!r} in {novel.slug}",
                f"build probes with personae arcane build-probes {novel.slug}",
            )
        phases = {p.phase_idx: p for p in probe.phase_responses}
        phase = phases.get(int(state.get("phase_idx", -1)))
        if phase is None:
            raise InputError(
                f"probe {probe.probe_id} has no phase {state.get('phase_idx')}",
                f"use one of {sorted(phases)}",
            )
        arc = next(
            (a for a in res.arcs if a.character == probe.character and a.axis_id == probe.axis_id),
            None,
        )
        character, qc = probe.character, phase.query_chapter
        scenario, question = probe.scenario, probe.question
        axis_ids = [probe.axis_id] if arc_scope == "axis" else _axes(res, character)
        target, scope = (arc.relational_target if arc else None), probe.probe_id
    else:
        qc = novel.check_chapter(int(state.get("chapter", 0)))
        character = novel.check_character(str(state.get("character", "")), through=qc)
        scenario = str(state.get("scenario", "")).strip()
        if not scenario:
            raise InputError("the scenario is empty", 'pass a scenario, e.g. "A letter arrives."')
        question = str(state.get("question") or f"How does {character} respond?")
        axis_ids = [state["axis_id"]] if "axis_id" in state else _axes(res, character)
        target, scope = None, f"adhoc:{character}:{scenario}:{question}"
    return RoleplayTask(
        title=novel.title,
        total_chapters=novel.count,
        character=character,
        query_chapter=qc,
        scenario=scenario,
        question=question,
        target=target,
        axis_ids=axis_ids,
        cache_scope=scope,
    )


def _axes(res: NovelResources, character: str) -> list[str]:
    return [a.axis_id for a in res.arcs if a.character == character]


def _resources(state: RoleplayInput, runtime: Runtime[RoleplayContext]) -> NovelResources:
    context = runtime.context
    return load_resources(
        context.data_dir, state["novel"], context.text_embedding(), context.chroma_settings()
    )


async def load_task(state: RoleplayState, runtime: Runtime[RoleplayContext]) -> dict[str, Any]:
    """Resolve the probe (or ad-hoc scene) into the task; check the mode."""
    _check_mode(state["mode"])
    res = await asyncio.to_thread(_resources, state, runtime)
    task = resolve_task(res, state, runtime.context.arc_scope)
    return {
        "task": task,
        "query_chapter": task["query_chapter"],
        "hint": None,
        "predicted_chapter": None,
        "presence": None,
        "context": "",
        "context_chapters": [],
        "usage": LLMUsage().as_dict(),
    }


def route_mode(state: RoleplayState) -> Literal["build_context", "ask_experts"]:
    """TimeChara takes the experts' path; every other mode builds a context block."""
    return "ask_experts" if state["mode"] == "timechara" else "build_context"


def summary_block(res: NovelResources, qc: int, max_chapters: int) -> tuple[str, list[int]]:
    """Chapters max(1, qc-4)..qc, chronological, each ``Chapter <c>:`` (spec default 46)."""
    chapters = list(range(max(1, qc - max_chapters + 1), qc + 1))
    missing = [c for c in chapters if c not in res.summaries]
    if missing:
        raise InputError(
            f"chapter summaries are missing for {res.novel.slug} (chapters {missing[:5]})",
            f"run personae arcane prepare {res.novel.slug}",
        )
    return "\n\n".join(f"Chapter {c}: {res.summaries[c]}" for c in chapters), chapters


def _index(res: NovelResources) -> ChunkIndex:
    if res.index is None or len(res.index) == 0:
        raise InputError(
            f"the RAG index of {res.novel.slug} is missing",
            f"run personae arcane prepare {res.novel.slug}",
        )
    return res.index


def build_block(
    res: NovelResources, task: RoleplayTask, mode: str, context: RoleplayContext
) -> tuple[str, list[int]]:
    """The Table 32 context block of ``mode`` and the chapter of each segment (blocking)."""
    qc = task["query_chapter"]
    if mode == "summary":
        return summary_block(res, qc, context.summary_max_chapters)
    if mode == "rag":
        query = f"{task['scenario']}\n{task['question']}"
        chunks = _index(res).search(query, max_chapter=qc, k=context.rag_k)
        return "\n\n".join(c.text for c in chunks), [c.chapter for c in chunks]
    if mode == "lifechoice":
        description, chapters = summary_block(res, qc, context.summary_max_chapters)
        chunks = _index(res).search(description, max_chapter=qc, k=context.rag_k)
        memory = "\n".join(f"[Chapter {c.chapter} excerpt]\n{c.text}" for c in chunks)
        block = f"[Character Description]\n{description}\n\n[Relevant Memory]\n{memory}"
        return block, chapters + [c.chapter for c in chunks]
    if mode in ("mixedarc", "archint"):
        return ablation_block(res, task, mode)
    if mode in ("arc", "pov"):
        arcs = [a for a in res.arcs if a.character == task["character"]]
        chosen = [a for a in arcs if a.axis_id in task["axis_ids"]]
        if not chosen:
            raise no_arc_error(res.novel, task["character"], arcs, task["axis_ids"])
        starts = [
            p.chapter_range[0] for a in chosen for p in a.trajectory if p.chapter_range[0] <= qc
        ]
        return arc_context(chosen, qc), starts
    return "", []


NO_ARC_MODES = tuple(m for m in MODES if m != "arc")
"""The modes whose context needs no arc (summary, RAG and LifeChoice need ``arcane prepare``)."""


def no_arc_error(
    novel: Novel, character: str, arcs: list[ArcRecord], axis_ids: list[str]
) -> InputError:
    """Why Arc mode has nothing to show, and what to do instead of rerunning the same build.

    A build that ran and kept nothing (its critics dropped every axis) answers the same from
    its cache on a rerun: the message names what the build dropped, the file that says why,
    and the modes that need no arc.
    """
    others = f"or answer without an arc: --mode {'|'.join(NO_ARC_MODES)}"
    if arcs:
        kept = ", ".join(a.axis_id for a in arcs)
        return InputError(
            f"{character} has no axis {', '.join(axis_ids)} in {novel.slug} (kept: {kept})",
            f"pass --axis with one of {kept}, or leave --axis out",
        )
    detail = novel.folder / "arcs" / f"{slugify(character)}.json"
    build = f"personae arcane build-arcs {novel.slug} --character {character!r}"
    try:
        dropped = json.loads(detail.read_text(encoding="utf-8")).get("dropped", [])
    except (OSError, ValueError):
        return InputError(f"no arc for {character} in {novel.slug}", f"run {build}, {others}")
    reasons = "; ".join(str(d) for d in dropped[:3]) or "no axis was induced"
    return InputError(
        f"the arc build of {character} in {novel.slug} kept no arc ({len(dropped)} axes "
        f"dropped: {reasons})",
        f"see {detail} for the critics' verdicts; {others} (a rerun of the build answers "
        "the same from its cache)",
    )


def ablation_block(res: NovelResources, task: RoleplayTask, mode: str) -> tuple[str, list[int]]:
    """MIXEDARC (another character's arc, renamed) or ARCHINT (one line per axis), App. K."""
    qc, character = task["query_chapter"], task["character"]
    own = [a for a in res.arcs if a.character == character]
    if mode == "archint":
        starts = [p.chapter_range[0] for a in own for p in a.trajectory if p.chapter_range[0] <= qc]
        return archint_lines(own, qc), starts
    donor = mixedarc_donor(task["cache_scope"], character, res.arcs)
    if donor is None:
        raise InputError(
            f"MIXEDARC needs arcs of another character of {res.novel.slug}",
            f"run personae arcane build-arcs {res.novel.slug} --character OTHER",
        )
    axis = task["axis_ids"][0] if task["axis_ids"] else "final_intra_01"
    arc = mixedarc_arc(donor, character, axis, res.arcs)
    starts = [p.chapter_range[0] for p in arc.trajectory if p.chapter_range[0] <= qc]
    return arc_context([arc], qc), starts


async def build_context(state: RoleplayState, runtime: Runtime[RoleplayContext]) -> dict[str, Any]:
    """Vanilla (empty), Summary, RAG, LifeChoice or Arc context, truncated at the query chapter."""
    res = await asyncio.to_thread(_resources, state, runtime)
    block, chapters = await asyncio.to_thread(
        build_block, res, state["task"], state["mode"], runtime.context
    )
    return {"context": block, "context_chapters": chapters}


def expert_llm(context: RoleplayContext) -> tuple[BaseChatModel, str]:
    """The TimeChara experts' model at ``expert_temperature`` (the paper's T = 0)."""
    model, name = context.model_for(context.expert_model)
    return with_sampling(model, {"temperature": context.expert_temperature}), name


async def ask_experts(state: RoleplayState, runtime: Runtime[RoleplayContext]) -> dict[str, Any]:
    """T33's experts: the temporal one places the scene in a chapter, the spatial one the character.

    A scene after the query chapter needs no spatial call (Table 33): its hint is the future
    one whoever is present. Both answers are cached per probe and model.
    """
    task, (model, name) = state["task"], expert_llm(runtime.context)
    store, usage = runtime.context.cache(), LLMUsage.from_dict(state["usage"])
    title, scene, question = task["title"], task["scenario"], task["question"]
    temporal = timechara.temporal_messages(
        novel=title, total_chapters=task["total_chapters"], scenario=scene, question=question
    )
    answer, used = await call_text(model, temporal, store=store, model_name=name)
    predicted, presence, usage = timechara.parse_chapter(answer), None, usage + used
    if predicted is None or predicted <= task["query_chapter"]:
        spatial = timechara.spatial_messages(
            novel=title, character=task["character"], scenario=scene, question=question
        )
        answer, used = await call_text(model, spatial, store=store, model_name=name)
        presence, usage = timechara.parse_presence(answer), usage + used
    return {"predicted_chapter": predicted, "presence": presence, "usage": usage.as_dict()}


def make_hint(state: RoleplayState) -> dict[str, Any]:
    """The future or absent-character hint, or none."""
    task = state["task"]
    hint = timechara.make_hint(
        character=task["character"],
        predicted=state["predicted_chapter"],
        presence=state["presence"],
        query_chapter=task["query_chapter"],
    )
    return {"hint": hint}


def render_prompt(state: RoleplayState) -> dict[str, Any]:
    """The T31 system and user messages."""
    task = state["task"]
    system = render_system(
        character=task["character"],
        novel=task["title"],
        query_chapter=task["query_chapter"],
        target=task["target"],
        context=state["context"],
    )
    if state["mode"] == "pov":
        system = with_pov(system)
    user = render_user(scenario=task["scenario"], question=task["question"], hint=state["hint"])
    return {"system": system, "user": user}


class FutureLeakError(RuntimeError):
    """A context segment from after the query chapter reached a role-play prompt."""


def audit_no_future(state: RoleplayState) -> dict[str, Any]:
    """Refuse to send a prompt holding any segment from a chapter after the query chapter."""
    qc = state["task"]["query_chapter"]
    late = sorted({c for c in state["context_chapters"] if c > qc})
    if late:
        raise FutureLeakError(f"context holds chapters {late} after query chapter {qc}")
    return {}


async def act_in_character(
    state: RoleplayState, runtime: Runtime[RoleplayContext]
) -> dict[str, Any]:
    """One role-play sample (T31); the answer is cached by prompt, model and mode.

    The mode scopes the cache: two modes whose prompts coincide (Vanilla, and TimeChara when
    the experts give no hint) are two samples, never one answer reported twice.
    """
    model, name = runtime.context.model_for()
    messages = roleplay_messages(state["system"], state["user"])
    store = runtime.context.cache().scoped(f"roleplay:{state['mode']}")
    response, usage = await call_text(model, messages, store=store, model_name=name)
    total = LLMUsage.from_dict(state["usage"]) + usage
    return {"response": response.strip(), "usage": total.as_dict()}


builder = StateGraph(
    RoleplayState,
    context_schema=RoleplayContext,
    input_schema=RoleplayInput,
    output_schema=RoleplayOutput,
)
builder.add_node(load_task)
builder.add_node(build_context)
builder.add_node(ask_experts)
builder.add_node(make_hint)
builder.add_node(render_prompt)
builder.add_node(audit_no_future)
builder.add_node(act_in_character)
builder.add_edge(START, "load_task")
builder.add_conditional_edges("load_task", route_mode, ["build_context", "ask_experts"])
builder.add_edge("build_context", "render_prompt")
builder.add_edge("ask_experts", "make_hint")
builder.add_edge("make_hint", "render_prompt")
builder.add_edge("render_prompt", "audit_no_future")
builder.add_edge("audit_no_future", "act_in_character")
builder.add_edge("act_in_character", END)

graph = builder.compile(name="arcane_roleplay")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[RoleplayState, RoleplayContext, RoleplayInput, RoleplayOutput]:
    """The graph compiled with a checkpointer (CLI, tests); ``graph`` has none."""
    return builder.compile(checkpointer=checkpointer, name="arcane_roleplay")
