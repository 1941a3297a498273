"""ARCANE probe generation for one arc (§3.2, App. B): 3N cells, each a validated probe or none.

Why this shape: the three per-arc elements (decision variable T19, life stages T20, era-free
axis T21) are made once and shared; the era of each anchor phase is a SHA-1 walk through the
seven-era menu (code, App. B); then one ``Send`` per (anchor phase, probe type) cell runs the
``probe_cell`` subgraph. Arcs with fewer than two phases have no trajectory to probe (spec
default 22) and are skipped with a note. A per-arc element still invalid after retries degrades
what needs it (no T19: the arc is skipped; no T20 or T21: its Out-of-World cells are), noted in
``dropped`` and counted in ``usage.degraded`` with the cells' own degraded answers.

Nodes: ``prepare_arc`` -> ``build_cell`` (Send, subgraph) -> ``save_probes``.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel
from typing_extensions import TypedDict

from personae.agents.arcane import probe_prep as prep
from personae.errors import InputError
from personae.fanout import gather_all
from personae.graphs.arcane.probe_cell import CellTask, ProbeBuildContext, cell_graph
from personae.graphs.server_entry import server_entry
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.arcane.novel_store import open_novel
from personae.memory.arcane.records import (
    PROBE_TYPES,
    ArcRecord,
    ProbeRecord,
    ProbeType,
    load_arcs,
    load_probes,
    write_jsonl_atomic,
)
from personae.memory.arcane.records_json import RecordJSON, dump, load


class ProbeBuildInput(TypedDict):
    """One arc of one novel and the probe types to build."""

    novel: str
    """Book slug or title."""
    character: str
    """The arc's character."""
    axis_id: str
    """The arc's axis id."""
    types: list[ProbeType]
    """in_scenario / in_world / out_of_world."""


class ProbeBuildOutput(TypedDict):
    """The probes kept and what was dropped, with usage."""

    probes: Annotated[list[RecordJSON[ProbeRecord]], operator.add]
    """Validated probes (App. C)."""
    dropped: Annotated[list[str], operator.add]
    """Cells without a probe and unavailable responses, with the reason."""
    usage: dict[str, int]
    """LLM calls and tokens (cache hits cost 0)."""


class ProbeBuildState(ProbeBuildInput, ProbeBuildOutput):
    """The arc's working state."""

    arc: RecordJSON[ArcRecord]
    """The arc record."""
    title: str
    """Novel title."""
    decision: RecordJSON[prep.DecisionVariable] | None
    """T19's answer (None: arc skipped)."""
    life_stages: list[RecordJSON[prep.LifeStageTag]] | None
    """T20's answer (Out-of-World only)."""
    abstraction: RecordJSON[prep.Abstraction] | None
    """T21's answer (Out-of-World only)."""
    eras: list[tuple[str, str]]
    """Era of each phase (the SHA-1 walk)."""
    calls: Annotated[list[dict[str, int]], operator.add]
    """Usage of every node."""


def probes_of(state: Mapping[str, Any]) -> list[ProbeRecord]:
    """The built probes as records."""
    return [ProbeRecord.model_validate(p) for p in state["probes"]]


def find_arc(data_dir: str, novel: str, character: str, axis_id: str) -> tuple[ArcRecord, str]:
    """The arc and the novel title; one-line errors for unknown book, missing arcs, unknown axis."""
    book = open_novel(Path(data_dir), novel)
    arcs = [a for a in load_arcs(book.folder) if a.character == character]
    if not arcs:
        raise InputError(
            f"no arcs for {character!r} in {book.slug}",
            f"run personae arcane build-arcs {book.slug} --character {character!r} first",
        )
    for arc in arcs:
        if arc.axis_id == axis_id:
            return arc, book.title
    known = ", ".join(a.axis_id for a in arcs)
    raise InputError(f"unknown axis {axis_id!r} for {character!r}", f"use one of {known}")


ArcElement = tuple[
    str,
    Callable[[int], type[BaseModel]],
    Callable[[ArcRecord, str], list[BaseMessage]],
]
"""One per-arc element: its table, its answer schema for N phases, and its prompt."""

ARC_ELEMENTS: tuple[ArcElement, ...] = (
    ("T19", prep.decision_schema, prep.decision_messages),
    ("T20", prep.life_stages_schema, prep.life_stage_messages),
    ("T21", prep.abstraction_schema, prep.abstract_messages),
)
"""T19 for every probe type; T20 and T21 only for Out-of-World probes."""


async def ask_arc_elements(
    context: ProbeBuildContext, arc: ArcRecord, title: str, elements: Sequence[ArcElement]
) -> tuple[list[Any], LLMUsage, list[str]]:
    """Each element's answer (``None``: still invalid after retries), concurrently, cached."""
    (model, spec), cache = context.model_for(), context.cache()
    n = len(arc.trajectory)

    async def ask(table: str, schema: type[BaseModel], messages: list[BaseMessage]) -> Any:
        try:
            answer, used = await call_structured(
                model, schema, messages, store=cache, model_name=spec
            )
        except InvalidAnswerError as failed:
            line = f"{arc.axis_id}: {table} still invalid after retries: {failed.reason[:160]}"
            return None, failed.usage + LLMUsage(degraded=1), [line]
        return prep.with_phase_indices(answer), used, []

    answers = await gather_all(
        ask(table, schema(n), messages(arc, title)) for table, schema, messages in elements
    )
    usage = sum((u for _, u, _ in answers), LLMUsage())
    return [a for a, _, _ in answers], usage, [line for *_, lost in answers for line in lost]


async def prepare_arc(
    state: ProbeBuildState, runtime: Runtime[ProbeBuildContext]
) -> dict[str, Any]:
    """T19 (always), T20 and T21 (Out-of-World only), and the era walk."""
    arc, title = await asyncio.to_thread(
        find_arc, runtime.context.data_dir, state["novel"], state["character"], state["axis_id"]
    )
    bad = [t for t in state["types"] if t not in PROBE_TYPES]
    if bad:
        raise InputError(f"unknown probe type {bad[0]!r}", f"use {', '.join(PROBE_TYPES)}")
    n = len(arc.trajectory)
    base = {
        "arc": dump(arc),
        "title": title,
        "decision": None,
        "life_stages": None,
        "abstraction": None,
    }
    if n < 2:
        return {**base, "eras": [], "dropped": [f"{arc.axis_id}: fewer than 2 phases, no probes"]}
    oow = "out_of_world" in state["types"]
    answers, usage, lost = await ask_arc_elements(
        runtime.context, arc, title, ARC_ELEMENTS if oow else ARC_ELEMENTS[:1]
    )
    oow = oow and answers[1] is not None and answers[2] is not None
    return {
        **base,
        "decision": None if answers[0] is None else dump(answers[0]),
        "life_stages": [dump(t) for t in answers[1].phases] if oow else None,
        "abstraction": dump(answers[2]) if oow else None,
        "eras": prep.era_walk(arc.novel, arc.character, arc.axis_id, n),
        "dropped": lost,
        "calls": [usage.as_dict()],
    }


def route_cells(state: ProbeBuildState) -> list[Send] | Literal["save_probes"]:
    """One Send per (anchor phase, probe type): 3N cells for all three types."""
    decision = state["decision"]
    if decision is None:
        return "save_probes"
    types = [t for t in state["types"] if t != "out_of_world" or state["abstraction"] is not None]
    return [
        Send(
            "build_cell",
            CellTask(
                arc=state["arc"],
                title=state["title"],
                k=k,
                probe_type=kind,
                decision=decision,
                life_stages=state["life_stages"],
                abstraction=state["abstraction"],
                era=state["eras"][k],
            ),
        )
        for kind in PROBE_TYPES
        if kind in types
        for k in range(len(state["arc"]["trajectory"]))
    ]


def store_probes(folder: Path, state: ProbeBuildState) -> None:
    """Replace this arc's probes of the built types in probes.jsonl; mirror weak pairs to the arc."""
    arc = load(ArcRecord, state["arc"])

    def ours(p: ProbeRecord) -> bool:
        return (
            p.character == arc.character
            and p.axis_id == arc.axis_id
            and p.probe_type in state["types"]
        )

    kept = [p for p in load_probes(folder) if not ours(p)]
    new = sorted(probes_of(state), key=lambda p: p.probe_id)
    write_jsonl_atomic(folder / "probes.jsonl", [*kept, *new])
    weak = [
        {"probe_id": p.probe_id, **pair}
        for p in new
        for pair in p.probe_check.get("q_discrim", {}).get("weak_pairs", [])
    ]
    arcs = load_arcs(folder)
    for i, record in enumerate(arcs):
        if record.character == arc.character and record.axis_id == arc.axis_id:
            arcs[i] = record.model_copy(update={"weak_pairs": weak})
    write_jsonl_atomic(folder / "arcs.jsonl", arcs)


async def save_probes(
    state: ProbeBuildState, runtime: Runtime[ProbeBuildContext]
) -> dict[str, Any]:
    """Write probes.jsonl and the arc's weak pairs; sum the usage."""
    novel = await asyncio.to_thread(open_novel, Path(runtime.context.data_dir), state["novel"])
    await asyncio.to_thread(store_probes, novel.folder, state)
    return {"usage": sum((LLMUsage.from_dict(c) for c in state["calls"]), LLMUsage()).as_dict()}


builder = StateGraph(
    ProbeBuildState,
    context_schema=ProbeBuildContext,
    input_schema=ProbeBuildInput,
    output_schema=ProbeBuildOutput,
)
builder.add_node(prepare_arc)
builder.add_node("build_cell", cell_graph, input_schema=CellTask)
builder.add_node(save_probes)
builder.add_edge(START, "prepare_arc")
builder.add_conditional_edges("prepare_arc", route_cells, ["build_cell", "save_probes"])
builder.add_edge("build_cell", "save_probes")
builder.add_edge("save_probes", END)

graph = builder.compile(name="probe_build")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[ProbeBuildState, ProbeBuildContext, ProbeBuildInput, ProbeBuildOutput]:
    """The graph compiled with a checkpointer (CLI, tests); ``graph`` has none."""
    return builder.compile(checkpointer=checkpointer, name="probe_build")
