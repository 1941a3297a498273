"""ARCANE arc construction for one character of one novel (§3.1, App. A).

Why this shape: Stage i reads the novel chapter by chapter in two independent streams (events,
T12; psychological state, T13), each carrying its own running context forward. One chapter per
super-step (both streams side by side, never reading each other) means the checkpointer saves
after every chapter, so a build killed at chapter j resumes at j+1 and pays for nothing twice
(every call is also cached on disk). Then axes are induced on each stream (T14), reconciled
(T15), tagged in code (artifact dropped, borderline flagged), rated by three critics (T16, one
``Send`` per axis and critic) and gated: train/unvalidated novels by a 2-of-3 critic majority,
eval novels by human votes collected through ``interrupt()`` (``personae arcane annotate-arcs``).

A model answer still invalid after retries degrades its item, listed in ``degraded``: a
chapter's stream keeps its running context and records nothing for the chapter (rerun the build
to ask it again: every other call is cached), a stream's axes are then induced from the
chapters read, a critic's verdict counts as "not valid"; only a failed reconciliation (T15)
leaves nothing usable.

Nodes: ``start_build`` -> ``process_chapter`` (loop) -> ``induce_axes`` -> ``reconcile_axes``
-> ``tag_axes`` -> ``critique_axis`` (Send) -> ``gate_axes`` -> ``await_annotation`` (eval)
-> ``save_arcs``.
"""

from __future__ import annotations

import asyncio
import json
import operator
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send, interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

from personae.agents.arcane import arc_rules, axes, streams
from personae.errors import InputError, NothingUsableError
from personae.fanout import gather_all, gather_two
from personae.files import write_json_atomic
from personae.graphs.arcane.context import ArcaneContext
from personae.graphs.server_entry import server_entry
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.arcane.novel_store import Novel, open_novel, slugify
from personae.memory.arcane.records import (
    AnnotatorVote,
    ArcRecord,
    CriticVerdict,
    load_arcs,
    write_jsonl_atomic,
)
from personae.memory.arcane.records_json import RecordJSON, dump, load
from personae.run_context import ModelSpec, described

Split = Literal["train", "eval", "unvalidated"]
Answer = TypeVar("Answer", bound=BaseModel)


@described
@dataclass(frozen=True, kw_only=True)
class ArcBuildContext(ArcaneContext):
    """Run settings of an arc build (spec §5 defaults 1, 3, 4); ``model`` is the analyst."""

    # -- the build (spec §5)
    critic_model: ModelSpec = ""
    """Critic model (T16). Empty: the analyst model."""
    max_chapter_chars: int = 60_000
    """Longer chapters are read in windows carrying the same running context."""
    running_context: Literal["summary", "events"] = "summary"
    """T12 running context: the last updated_running_summary, or every prior event."""


class ArcBuildInput(TypedDict):
    """Which character of which novel, and the split (which gate applies)."""

    novel: str
    """Book slug or title."""
    character: str
    """The character whose arcs are built."""
    split: Split
    """train / unvalidated: critic gate; eval: human votes (interrupt)."""


class ArcBuildOutput(TypedDict):
    """The arcs kept and the bookkeeping a user needs to trust them."""

    arcs: list[RecordJSON[ArcRecord]]
    """App. C records that passed the gate."""
    dropped: list[str]
    """Axes the code dropped, with the reason (artifacts, failed gate)."""
    flags: list[str]
    """Drift and borderline flags."""
    degraded: Annotated[list[str], operator.add]
    """Items whose model answer was still invalid after retries, and what was done instead."""
    usage: dict[str, int]
    """LLM calls and tokens of the whole build (cache hits cost 0)."""


class CritiqueTask(TypedDict):
    """One Send: one critic rates one axis."""

    axis: RecordJSON[axes.MergedAxis]
    """The merged axis."""
    critic: str
    """structuralist / psychological / historical."""
    title: str
    """Novel title."""
    character: str
    """The character."""


class Critique(TypedDict):
    """One critic's verdict on one axis."""

    axis_id: str
    """Final axis id."""
    critic: str
    """Perspective."""
    verdict: RecordJSON[CriticVerdict]
    """Verdict, reasoning, citations."""


class ArcBuildState(ArcBuildInput, ArcBuildOutput):
    """The whole build's state; lists with ``operator.add`` grow chapter by chapter.

    Records are plain JSON (:mod:`personae.memory.arcane.records_json`): checkpoints then need no
    registered types. The accessors below validate them back into the pydantic records.
    """

    title: str
    """Novel title."""
    chapters: int
    """C."""
    cursor: int
    """Next chapter to read (C + 1 when both streams are done)."""
    events: Annotated[list[RecordJSON[streams.ChapterEvents]], operator.add]
    """Event stream, one entry per chapter read."""
    states: Annotated[list[RecordJSON[streams.ChapterState]], operator.add]
    """State stream, one entry per chapter read."""
    running_context: str
    """T12 running context for the next chapter."""
    running_profile: str
    """T13 running profile for the next chapter."""
    axes_a: RecordJSON[axes.AxisInduction]
    """T14 on the event stream."""
    axes_b: RecordJSON[axes.AxisInduction]
    """T14 on the state stream."""
    reconciled: RecordJSON[axes.Reconciliation]
    """T15's merged set and comparison."""
    kept: list[RecordJSON[axes.MergedAxis]]
    """Merged axes that survived the tags."""
    tags: dict[str, str]
    """Reconciliation tag per kept axis id."""
    critiques: Annotated[list[Critique], operator.add]
    """Every critic verdict."""
    calls: Annotated[list[dict[str, int]], operator.add]
    """Usage of every node (summed into ``usage``)."""


def events_of(state: ArcBuildState) -> list[streams.ChapterEvents]:
    """The event stream read so far."""
    return [load(streams.ChapterEvents, e) for e in state["events"]]


def states_of(state: ArcBuildState) -> list[streams.ChapterState]:
    """The state stream read so far."""
    return [load(streams.ChapterState, s) for s in state["states"]]


def induction_of(state: ArcBuildState, key: Literal["axes_a", "axes_b"]) -> axes.AxisInduction:
    """T14's answer on one stream."""
    return load(axes.AxisInduction, state[key])


def reconciled_of(state: ArcBuildState) -> axes.Reconciliation:
    """T15's answer."""
    return load(axes.Reconciliation, state["reconciled"])


def kept_of(state: ArcBuildState) -> list[axes.MergedAxis]:
    """Merged axes that survived the tags."""
    return [load(axes.MergedAxis, a) for a in state["kept"]]


def arcs_of(state: Mapping[str, Any]) -> list[ArcRecord]:
    """The gated arc records."""
    return [ArcRecord.model_validate(a) for a in state["arcs"]]


def _novel(runtime: Runtime[ArcBuildContext], book: str) -> Novel:
    return open_novel(Path(runtime.context.data_dir), book)


async def start_build(state: ArcBuildState, runtime: Runtime[ArcBuildContext]) -> dict[str, Any]:
    """Check the novel and character (a character never mentioned costs nothing)."""
    novel = await asyncio.to_thread(_novel, runtime, state["novel"])
    character = await asyncio.to_thread(novel.check_character, state["character"])
    if state.get("split") not in ("train", "eval", "unvalidated"):
        raise InputError(f"unknown split {state.get('split')!r}", "use train, eval or unvalidated")
    return {
        "novel": novel.slug,
        "character": character,
        "title": novel.title,
        "chapters": novel.count,
        "cursor": 1,
        "running_context": "",
        "running_profile": "",
        "flags": [],
        "dropped": [],
        # A finished thread run again starts clean (its calls are cached, so it is free).
        "events": Overwrite([]),
        "states": Overwrite([]),
        "critiques": Overwrite([]),
        "degraded": Overwrite([]),
        "calls": Overwrite([]),
    }


def _windows(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


async def process_chapter(
    state: ArcBuildState, runtime: Runtime[ArcBuildContext]
) -> dict[str, Any]:
    """Both streams on the cursor chapter, side by side; each with its own running context."""
    novel = await asyncio.to_thread(_novel, runtime, state["novel"])
    idx = state["cursor"]
    text = await asyncio.to_thread(lambda: novel.chapter(idx).text)
    windows = _windows(text, runtime.context.max_chapter_chars)
    (events, used_a, lost_a), (chapter_state, used_b, lost_b) = await gather_two(
        _event_stream(state, runtime, idx, windows), _state_stream(state, runtime, idx, windows)
    )
    running = events.updated_running_summary
    if runtime.context.running_context == "events":
        prior = [e.model_dump(mode="json") for c in [*events_of(state), events] for e in c.events]
        running = json.dumps(prior, ensure_ascii=False)
    return {
        "events": [dump(events)],
        "states": [dump(chapter_state)],
        "running_context": running,
        "running_profile": chapter_state.updated_running_profile,
        "cursor": idx + 1,
        "degraded": lost_a + lost_b,
        "calls": [(used_a + used_b).as_dict()],
    }


DEGRADED_KINDS = {
    "chapter_streams": "degraded (rerun to ask again)",
    "axis_inductions": "stream axes (T14) degraded",
    "critiques": "critic (T16) degraded",
}
"""Each kind of degraded item and the words its line in ``degraded`` carries (written below)."""


def degraded_kinds(lines: list[str]) -> dict[str, int]:
    """How many of the ``degraded`` lines are of each kind, for the command's ``degraded:`` line."""
    return {kind: sum(mark in line for line in lines) for kind, mark in DEGRADED_KINDS.items()}


async def _read_windows(
    stream: streams.Stream[Answer],
    state: ArcBuildState,
    runtime: Runtime[ArcBuildContext],
    idx: int,
    windows: list[str],
    running: str,
) -> tuple[list[Answer], str, LLMUsage, list[str]]:
    """One stream over a chapter's windows in order, each carrying the running text it updated.

    Long chapters are read in windows; a window still invalid after retries ends the chapter
    there: the answers so far and the running text they reached are kept, the failure is
    counted degraded and named in the returned line.
    """
    (model, spec), cache = runtime.context.model_for(), runtime.context.cache()
    answers: list[Answer] = []
    usage = LLMUsage()
    for window in windows:
        messages = stream.messages(
            novel=state["title"],
            character=state["character"],
            chapter=idx,
            text=window,
            running=running,
        )
        try:
            answer, used = await call_structured(
                model, stream.answer, messages, store=cache, model_name=spec
            )
        except InvalidAnswerError as failed:
            reason = failed.reason[:160]
            lost = [f"chapter {idx}: {stream.name} degraded (rerun to ask again): {reason}"]
            return answers, running, usage + failed.usage + LLMUsage(degraded=1), lost
        answers.append(answer)
        usage, running = usage + used, stream.running_of(answer)
    return answers, running, usage, []


async def _event_stream(
    state: ArcBuildState, runtime: Runtime[ArcBuildContext], idx: int, windows: list[str]
) -> tuple[streams.ChapterEvents, LLMUsage, list[str]]:
    """T12 over the chapter's windows: the events of every window read, in order."""
    answers, running, usage, lost = await _read_windows(
        streams.EVENT_STREAM, state, runtime, idx, windows, state["running_context"]
    )
    found = [event for answer in answers for event in answer.events]
    done = streams.ChapterEvents(events=found, updated_running_summary=running)
    return streams.stamp_events(done, idx, state["character"]), usage, lost


async def _state_stream(
    state: ArcBuildState, runtime: Runtime[ArcBuildContext], idx: int, windows: list[str]
) -> tuple[streams.ChapterState, LLMUsage, list[str]]:
    """T13 over the chapter's windows: the last window's state (none read: absent, unchanged)."""
    answers, profile, usage, lost = await _read_windows(
        streams.STATE_STREAM, state, runtime, idx, windows, state["running_profile"]
    )
    unread = streams.ChapterState(
        present_in_chapter=False, change_magnitude="none", updated_running_profile=profile
    )
    last = answers[-1] if answers else unread
    return streams.stamp_state(last, idx, state["character"]), usage, lost


def route_chapter(state: ArcBuildState) -> Literal["process_chapter", "induce_axes"]:
    """Next chapter until every chapter was read by both streams."""
    return "process_chapter" if state["cursor"] <= state["chapters"] else "induce_axes"


def state_summary(state: streams.ChapterState) -> dict[str, object]:
    """What T14 reads of one chapter of the state stream."""
    return {
        "chapter": state.chapter,
        "present": state.present_in_chapter,
        "summary": state.chapter_summary,
        "change_magnitude": state.change_magnitude,
    }


async def induce_axes(state: ArcBuildState, runtime: Runtime[ArcBuildContext]) -> dict[str, Any]:
    """T14 on each stream independently (events; state-stream summaries)."""
    (model, spec), cache = runtime.context.model_for(), runtime.context.cache()
    events: list[object] = [e.model_dump(mode="json") for c in events_of(state) for e in c.events]
    summaries: list[object] = [state_summary(s) for s in states_of(state)]
    schema = axes.induction_schema(state["chapters"])

    def messages(data: list[object], is_state: bool) -> list[BaseMessage]:
        return axes.induction_messages(
            novel=state["title"],
            character=state["character"],
            stream_json=data,
            state_stream=is_state,
        )

    calls = [
        _induce(
            call_structured(model, schema, messages(data, is_state), store=cache, model_name=spec),
            state,
            name,
        )
        for data, is_state, name in ((events, False, "event"), (summaries, True, "state"))
    ]
    (a, used_a, lost_a), (b, used_b, lost_b) = await gather_all(calls)
    flags = arc_rules.drift_flags("event", a) + arc_rules.drift_flags("state", b)
    return {
        "axes_a": dump(a),
        "axes_b": dump(b),
        "flags": flags,
        "degraded": lost_a + lost_b,
        "calls": [(used_a + used_b).as_dict()],
    }


async def _induce(
    call: Awaitable[tuple[axes.AxisInduction, LLMUsage]], state: ArcBuildState, stream: str
) -> tuple[axes.AxisInduction, LLMUsage, list[str]]:
    """One stream's T14 answer in order; still invalid after retries: no axis from it."""
    try:
        answer, used = await call
    except InvalidAnswerError as failed:
        empty = axes.AxisInduction(character=state["character"], arc_richness="flat")
        line = f"{stream} stream axes (T14) degraded, none induced: {failed.reason[:160]}"
        return empty, failed.usage + LLMUsage(degraded=1), [line]
    return axes.in_order(answer), used, []


async def reconcile_axes(state: ArcBuildState, runtime: Runtime[ArcBuildContext]) -> dict[str, Any]:
    """T15: compare the two sets and merge them (the final ids and the order are the code's).

    Without a valid merge there is no axis to build on: nothing usable is left.
    """
    model, spec = runtime.context.model_for()
    messages = axes.reconcile_messages(
        novel=state["title"],
        character=state["character"],
        axes_events=induction_of(state, "axes_a"),
        axes_psych=induction_of(state, "axes_b"),
    )
    schema = axes.reconciliation_schema(state["chapters"])
    try:
        merged, used = await call_structured(
            model, schema, messages, store=runtime.context.cache(), model_name=spec
        )
    except InvalidAnswerError as failed:
        raise NothingUsableError(
            f"the reconciliation (T15) of {state['character']}'s axes failed: {failed.reason}"
        ) from failed
    merged = axes.number_final_axes(axes.in_order(merged))
    return {"reconciled": dump(merged), "calls": [used.as_dict()]}


def tag_axes(state: ArcBuildState) -> dict[str, Any]:
    """App. A post-processing in code: drop artifacts, flag borderline and N < 2."""
    reconciled = reconciled_of(state)
    kept, dropped, flags = arc_rules.apply_tags(reconciled)
    merged = reconciled.intrapersonal_axes
    if merged and not arc_rules.is_agency_communion(
        f"{merged[0].dimension_label} {merged[0].axis_name}"
    ):
        flags.append("merged set: first intrapersonal axis is not Agency-Communion (drift)")
    return {
        "kept": [dump(t.axis) for t in kept],
        "tags": {t.axis.axis_id: t.tag for t in kept},
        "dropped": state["dropped"] + dropped,
        "flags": state["flags"] + flags,
    }


def route_critiques(state: ArcBuildState) -> list[Send] | Literal["gate_axes"]:
    """One Send per (axis, critic); straight to the gate when nothing was kept."""
    if not state["kept"]:
        return "gate_axes"
    return [
        Send(
            "critique_axis",
            CritiqueTask(axis=a, critic=c, title=state["title"], character=state["character"]),
        )
        for a in state["kept"]
        for c in axes.CRITICS
    ]


async def critique_axis(state: CritiqueTask, runtime: Runtime[ArcBuildContext]) -> dict[str, Any]:
    """T16 from one critic's perspective (still invalid after retries: "not valid", counted)."""
    task, axis = state, load(axes.MergedAxis, state["axis"])
    model, spec = runtime.context.model_for(runtime.context.critic_model)
    messages = axes.critic_messages(
        task["critic"], novel=task["title"], character=task["character"], axis=axis
    )
    lost: list[str] = []
    try:
        answer, used = await call_structured(
            model, axes.CriticAnswer, messages, store=runtime.context.cache(), model_name=spec
        )
    except InvalidAnswerError as failed:
        answer = axes.CriticAnswer(verdict=False, reasoning=f"degraded: {failed.reason[:200]}")
        used = failed.usage + LLMUsage(degraded=1)
        lost = [f"{axis.axis_id}: {task['critic']} critic (T16) degraded, counted as not valid"]
    critique = Critique(
        axis_id=axis.axis_id, critic=task["critic"], verdict=dump(answer.as_verdict())
    )
    return {"critiques": [critique], "degraded": lost, "calls": [used.as_dict()]}


def verdicts_of(state: ArcBuildState, axis_id: str) -> dict[str, CriticVerdict]:
    """The critics' verdicts on one axis, by perspective."""
    return {
        c["critic"]: load(CriticVerdict, c["verdict"])
        for c in state["critiques"]
        if c["axis_id"] == axis_id
    }


def _records(state: ArcBuildState, votes: dict[str, list[AnnotatorVote]]) -> list[ArcRecord]:
    richness = state["axes_a"]["arc_richness"]
    return [
        arc_rules.to_arc_record(
            arc_rules.TaggedAxis(a, state["tags"][a.axis_id]),  # type: ignore[arg-type]
            novel=state["novel"],
            character=state["character"],
            split=state["split"],
            critiques=verdicts_of(state, a.axis_id),
            votes=votes.get(a.axis_id, []),
            richness=richness,
        )
        for a in kept_of(state)
    ]


def gate_axes(state: ArcBuildState) -> dict[str, Any]:
    """Train / unvalidated: keep axes with a 2-of-3 critic majority (eval waits for humans)."""
    records = _records(state, {})
    if state["split"] == "eval":
        return {"arcs": [dump(r) for r in records]}
    kept = [r for r in records if arc_rules.critic_majority(r.literary_validation)]
    failed = [
        f"{r.axis_id}: fewer than 2 of 3 critics found it valid" for r in records if r not in kept
    ]
    return {"arcs": [dump(r) for r in kept], "dropped": state["dropped"] + failed}


def route_split(state: ArcBuildState) -> Literal["await_annotation", "save_arcs"]:
    """Eval novels need human validity votes."""
    return "await_annotation" if state["split"] == "eval" and state["arcs"] else "save_arcs"


def annotation_sheet(state: ArcBuildState) -> list[dict[str, Any]]:
    """What annotators see per axis: the axis, its trajectory and the critics' citations."""
    return [
        {
            "novel": state["novel"],
            "character": state["character"],
            "axis_id": r.axis_id,
            "axis_name": r.axis_name,
            "dimension_label": r.dimension_label,
            "pole_start": r.pole_start,
            "pole_end": r.pole_end,
            "trajectory": " | ".join(
                f"{p.phase} (ch {p.chapter_range[0]}-{p.chapter_range[1]}): {p.position_description}"
                for p in r.trajectory
            ),
            "critics": " | ".join(
                f"{name}: {'valid' if v.verdict else 'invalid'} "
                + "; ".join(f"{c.author}, {c.title} ({c.year})" for c in v.citations)
                for name, v in r.literary_validation.items()
            ),
        }
        for r in arcs_of(state)
    ]


def await_annotation(state: ArcBuildState) -> dict[str, Any]:
    """Pause for human votes (``interrupt``); resume with ``{axis_id: [votes]}``."""
    answer = interrupt({"kind": "arc_annotation", "axes": annotation_sheet(state)})
    votes = {
        axis_id: [AnnotatorVote.model_validate(v) for v in given]
        for axis_id, given in dict(answer).items()
    }
    records = _records(state, votes)
    kept = [r for r in records if arc_rules.human_majority(r.annotation)]
    failed = [
        f"{r.axis_id}: fewer than 2 annotators found it valid" for r in records if r not in kept
    ]
    return {"arcs": [dump(r) for r in kept], "dropped": state["dropped"] + failed}


def write_outputs(folder: Path, state: ArcBuildState, usage: dict[str, int]) -> None:
    """arcs.jsonl (this character's records replaced), arcs/<c>.json, streams/<c>/*.jsonl."""
    character = state["character"]
    others = [a for a in load_arcs(folder) if a.character != character]
    write_jsonl_atomic(folder / "arcs.jsonl", [*others, *arcs_of(state)])
    slug = slugify(character)
    write_jsonl_atomic(folder / "streams" / slug / "events.jsonl", events_of(state))
    write_jsonl_atomic(folder / "streams" / slug / "states.jsonl", states_of(state))
    detail = {
        "character": character,
        "split": state["split"],
        "axes_a": state["axes_a"],
        "axes_b": state["axes_b"],
        "reconciled": state["reconciled"],
        "critiques": [
            {"axis_id": c["axis_id"], "critic": c["critic"], **c["verdict"]}
            for c in state["critiques"]
        ],
        "arcs": [a["axis_id"] for a in state["arcs"]],
        "dropped": state["dropped"],
        "flags": state["flags"],
        "degraded": state["degraded"],
        "usage": usage,
    }
    write_json_atomic(folder / "arcs" / f"{slug}.json", detail)


def total_usage(calls: list[dict[str, int]]) -> dict[str, int]:
    """Sum of the nodes' usage (cache hits included)."""
    return sum((LLMUsage.from_dict(c) for c in calls), LLMUsage()).as_dict()


async def save_arcs(state: ArcBuildState, runtime: Runtime[ArcBuildContext]) -> dict[str, Any]:
    """Write the records and the build's detail; report usage."""
    novel = await asyncio.to_thread(_novel, runtime, state["novel"])
    usage = total_usage(state["calls"])
    await asyncio.to_thread(write_outputs, novel.folder, state, usage)
    return {"usage": usage}


builder = StateGraph(
    ArcBuildState,
    context_schema=ArcBuildContext,
    input_schema=ArcBuildInput,
    output_schema=ArcBuildOutput,
)
builder.add_node(start_build)
builder.add_node(process_chapter)
builder.add_node(induce_axes)
builder.add_node(reconcile_axes)
builder.add_node(tag_axes)
builder.add_node("critique_axis", critique_axis, input_schema=CritiqueTask)
builder.add_node(gate_axes)
builder.add_node(await_annotation)
builder.add_node(save_arcs)
builder.add_edge(START, "start_build")
builder.add_edge("start_build", "process_chapter")
builder.add_conditional_edges("process_chapter", route_chapter, ["process_chapter", "induce_axes"])
builder.add_edge("induce_axes", "reconcile_axes")
builder.add_edge("reconcile_axes", "tag_axes")
builder.add_conditional_edges("tag_axes", route_critiques, ["critique_axis", "gate_axes"])
builder.add_edge("critique_axis", "gate_axes")
builder.add_conditional_edges("gate_axes", route_split, ["await_annotation", "save_arcs"])
builder.add_edge("await_annotation", "save_arcs")
builder.add_edge("save_arcs", END)

graph = builder.compile(name="arc_build")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[ArcBuildState, ArcBuildContext, ArcBuildInput, ArcBuildOutput]:
    """The graph compiled with a checkpointer (CLI, tests); ``graph`` has none."""
    return builder.compile(checkpointer=checkpointer, name="arc_build")
