"""One ARCANE probe cell: (arc, anchor phase k, probe type) -> at most one validated probe.

Why a subgraph: each of an arc's 3N cells is its own little pipeline (App. B), and the parent
``probe_build`` fans them out with ``Send``. In-Scenario cells first ground a scene: the locator
(T25) may only pick an event the code offered, the extractor's passage must occur verbatim in
the chapter (whitespace-normalised), else the extractor is asked once more, then the next key
moment is tried; an ungrounded cell yields no probe. Every response is validated (Q-Voice T26,
Q-PhaseFit T27); a fail or ``off_phase`` earns exactly one regeneration, then ``unavailable``.
Q-Anchor (T28) or Q-World (T29) failing drops the probe; Q-Discrim (T30) only annotates.
A model answer still invalid after retries degrades its step (counted in ``usage.degraded``):
an unlocated or unextracted key moment is not grounded, a cell without a draft yields no
probe, a validator without a verdict counts as a fail (the probe keeps only what passed),
and Q-Discrim without one annotates nothing.

Nodes: ``ground_scene`` -> ``draft_probe`` -> ``validate_responses`` -> ``check_probe`` ->
``discriminate_phases``.
"""

from __future__ import annotations

import asyncio
import operator
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel
from typing_extensions import TypedDict

from personae.agents.arcane import designers as design
from personae.agents.arcane import validators as qa
from personae.agents.arcane.probe_prep import Abstraction, DecisionVariable, LifeStageTag
from personae.fanout import gather_all, gather_two
from personae.files import read_jsonl
from personae.graphs.arcane.context import ArcaneContext
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.arcane.novel_store import open_novel, slugify
from personae.memory.arcane.records import (
    ArcRecord,
    PhaseQuality,
    PhaseResponse,
    ProbeRecord,
    ProbeType,
    phase_query_chapter,
    probe_id_for,
)
from personae.memory.arcane.records_json import RecordJSON, dump, load
from personae.run_context import ModelSpec, described

BANNED_CUES = (
    "immediately",
    "at once",
    "decisively",
    "deliberately",
    "without hesitation",
    "instinctively",
    "swiftly",
    "instantly",
)
"""T17's banned distinctiveness cues."""
NOT_VERBATIM = (
    "That passage does not occur verbatim in the chapter. Copy the passage character for "
    "character from CHAPTER TEXT, or set verbatim_passage to null."
)


@described
@dataclass(frozen=True, kw_only=True)
class ProbeBuildContext(ArcaneContext):
    """Run settings of probe generation (spec §5 default 1); ``model`` designs the probes."""

    validator_model: ModelSpec = ""
    """Validator model (T26-T30). Empty: the designer model."""


class Anchor(TypedDict):
    """Where an In-Scenario probe's passage sits in the novel."""

    chapter: int
    """Chapter of the passage."""
    event_id: str
    """The event the locator chose."""
    char_start: int
    """Passage start in the chapter text."""
    char_end: int
    """Passage end in the chapter text."""
    first_words: str
    """Opening words (extractor)."""
    last_words: str
    """Closing words (extractor)."""
    passage: str
    """The passage as it occurs in the chapter."""


class CellTask(TypedDict):
    """What the parent sends for one cell."""

    arc: RecordJSON[ArcRecord]
    """The arc."""
    title: str
    """Novel title."""
    k: int
    """Anchor phase."""
    probe_type: ProbeType
    """in_scenario / in_world / out_of_world."""
    decision: RecordJSON[DecisionVariable]
    """T19's answer."""
    life_stages: list[RecordJSON[LifeStageTag]] | None
    """T20's tags (Out-of-World only)."""
    abstraction: RecordJSON[Abstraction] | None
    """T21's answer (Out-of-World only)."""
    era: tuple[str, str]
    """Target era (label, description) of this anchor phase (Out-of-World)."""


class CellOutput(TypedDict):
    """What a cell hands back to the parent (both lists are concatenated there)."""

    probes: Annotated[list[RecordJSON[ProbeRecord]], operator.add]
    """The kept probe, if any."""
    dropped: Annotated[list[str], operator.add]
    """Why no probe (ungrounded, Q-Anchor / Q-World fail) and unavailable responses."""
    calls: Annotated[list[dict[str, int]], operator.add]
    """Usage of every call."""


class CellState(CellTask, CellOutput):
    """A cell's working state."""

    anchor: Anchor | None
    """In-Scenario grounding (None: none found, or not In-Scenario)."""
    draft: RecordJSON[design.ProbeDraft] | None
    """The designer's draft (None: still invalid after retries, no probe)."""
    style_lint: list[str]
    """T17 style problems found in code (annotation only)."""
    responses: list[RecordJSON[PhaseResponse]]
    """Validated phase responses."""
    probe_check: dict[str, Any]
    """Q-Anchor / Q-World verdict and note."""


def _arc(state: CellTask) -> ArcRecord:
    return load(ArcRecord, state["arc"])


def _decision(state: CellTask) -> DecisionVariable:
    return load(DecisionVariable, state["decision"])


def _life_stages(state: CellTask) -> list[LifeStageTag] | None:
    stages = state["life_stages"]
    return None if stages is None else [load(LifeStageTag, t) for t in stages]


def _abstraction(state: CellTask) -> Abstraction | None:
    found = state["abstraction"]
    return None if found is None else load(Abstraction, found)


def _draft(state: CellState) -> design.ProbeDraft:
    draft = state["draft"]
    assert draft is not None  # route_drafted ends a cell without a draft
    return load(design.ProbeDraft, draft)


async def _or_degraded(call: Any, instead: BaseModel) -> tuple[Any, LLMUsage]:
    """``call``'s answer; when still invalid after retries, ``instead``, counted degraded."""
    try:
        answer: tuple[Any, LLMUsage] = await call
    except InvalidAnswerError as failed:
        return instead, failed.usage + LLMUsage(degraded=1)
    return answer


def _responses(state: CellState) -> list[PhaseResponse]:
    return [load(PhaseResponse, r) for r in state["responses"]]


def verbatim_span(passage: str, chapter_text: str) -> tuple[int, int] | None:
    """Where ``passage`` occurs in ``chapter_text`` up to whitespace (spec default 15)."""
    words = passage.split()
    if not words:
        return None
    match = re.search(r"\s+".join(re.escape(w) for w in words), chapter_text)
    return (match.start(), match.end()) if match else None


def stream_events(folder: Path, character: str, start: int, end: int) -> list[tuple[int, str, str]]:
    """The event stream's events in chapters ``start..end``: (chapter, event_id, description)."""
    path = folder / "streams" / slugify(character) / "events.jsonl"
    found: list[tuple[int, str, str]] = []
    for row in read_jsonl(
        path, strict=True, fix=f"rebuild {character}'s arcs (personae arcane build-arcs)"
    ):
        if start <= int(row["chapter"]) <= end:
            found.extend(
                (int(row["chapter"]), e["event_id"], e["description"]) for e in row["events"]
            )
    return found


def key_moments_in_order(arc: ArcRecord, k: int) -> list[str]:
    """Spec default 14: the anchor phase's key moments, last first for the final phase."""
    moments = list(arc.trajectory[k].key_moments)
    return moments[::-1] if k == len(arc.trajectory) - 1 else moments


async def ground_scene(state: CellState, runtime: Runtime[ProbeBuildContext]) -> dict[str, Any]:
    """In-Scenario: locate and extract a verbatim passage for the anchor phase (T25)."""
    if state["probe_type"] != "in_scenario":
        return {"anchor": None}
    arc, k = _arc(state), state["k"]
    novel = await asyncio.to_thread(open_novel, Path(runtime.context.data_dir), arc.novel)
    span = arc.trajectory[k].chapter_range
    candidates = await asyncio.to_thread(stream_events, novel.folder, arc.character, *span)
    usage = LLMUsage()
    for moment in key_moments_in_order(arc, k):
        anchor, used = await _ground_moment(state, runtime, novel, moment, candidates)
        usage = usage + used
        if anchor is not None:
            return {"anchor": anchor, "calls": [usage.as_dict()]}
    note = f"{_probe_id(state)}: no key moment grounded in a verbatim passage (cell skipped)"
    return {"anchor": None, "dropped": [note], "calls": [usage.as_dict()]}


async def _ground_moment(
    state: CellState,
    runtime: Runtime[ProbeBuildContext],
    novel: Any,
    moment: str,
    candidates: list[tuple[int, str, str]],
) -> tuple[Anchor | None, LLMUsage]:
    (model, spec), cache = runtime.context.model_for(), runtime.context.cache()
    offered = {eid: chapter for chapter, eid, _ in candidates}
    if not offered:
        return None, LLMUsage()
    messages = design.locator_messages(
        key_moment=moment,
        chapter_range=_arc(state).trajectory[state["k"]].chapter_range,
        candidates=candidates,
    )
    try:
        where, usage = await call_structured(
            model, design.location_schema(tuple(offered)), messages, store=cache, model_name=spec
        )
    except InvalidAnswerError as failed:  # degraded: this key moment is not grounded
        return None, failed.usage + LLMUsage(degraded=1)
    where = design.located(where, offered)
    if where.event_id is None or where.chapter is None:
        return None, usage
    text = await asyncio.to_thread(lambda: novel.chapter(where.chapter).text)
    event = next(d for c, e, d in candidates if e == where.event_id)
    ask = design.extractor_messages(
        novel=novel.title, chapter=where.chapter, key_moment=moment, event=event, chapter_text=text
    )
    for _ in range(2):  # one retry when the passage is not verbatim (spec default 15)
        try:
            got, used = await call_structured(
                model, design.ExtractedPassage, ask, store=cache, model_name=spec
            )
        except InvalidAnswerError as failed:
            return None, usage + failed.usage + LLMUsage(degraded=1)
        usage = usage + used
        found = verbatim_span(got.verbatim_passage or "", text)
        if found:
            return Anchor(
                chapter=where.chapter,
                event_id=where.event_id,
                char_start=found[0],
                char_end=found[1],
                first_words=got.first_words,
                last_words=got.last_words,
                passage=text[found[0] : found[1]],
            ), usage
        if got.verbatim_passage is None:
            break
        ask = [*ask, AIMessage(content=got.model_dump_json()), HumanMessage(content=NOT_VERBATIM)]
    return None, usage


def route_grounded(state: CellState) -> Literal["draft_probe", "__end__"]:
    """An In-Scenario cell without a grounded passage yields no probe."""
    if state["probe_type"] == "in_scenario" and state["anchor"] is None:
        return "__end__"
    return "draft_probe"


def _designer(state: CellState) -> list[Any]:
    abstraction = _abstraction(state)
    anchor = state["anchor"]
    return design.designer_messages(
        state["probe_type"],
        arc=_arc(state),
        novel_title=state["title"],
        k=state["k"],
        decision_variable=_decision(state).decision_variable,
        passage=anchor["passage"] if anchor else "",
        anchor_qc=anchor["chapter"] if anchor else None,
        life_stages=_life_stages(state),
        abstract_axis=abstraction.abstract_axis if abstraction else "",
        abstract_phases=abstraction.abstract_phases if abstraction else (),
        era=state["era"],
    )


def lint_style(draft: design.ProbeDraft, probe_type: ProbeType) -> list[str]:
    """T17's checkable limits; recorded on the probe, never a reason to drop it."""
    problems = []

    def words(text: str | None) -> int:
        return len((text or "").split())

    if words(draft.scenario) > 60 or len(re.findall(r"[.!?](\s|$)", draft.scenario)) > 2:
        problems.append("scenario longer than 2 sentences / 60 words")
    if len(re.findall(r"[.!?](\s|$)", draft.question.strip())) > 1:
        problems.append("question longer than 1 sentence")
    if re.search(r"\b(should|will|does|is)\b.*\bor\b.*\?", draft.question, re.I):
        problems.append("question enumerates options")
    limit = 35 if probe_type == "in_scenario" else 30
    for r in draft.phase_responses:
        text = f"{r.gt_action} {r.gt_speech or ''} {r.gt_thought}".lower()
        if words(r.gt_action) > limit:
            problems.append(f"phase {r.phase_idx}: gt_action over {limit} words")
        if words(r.gt_speech) > 25:
            problems.append(f"phase {r.phase_idx}: gt_speech over 25 words")
        if words(r.gt_thought) > 50:
            problems.append(f"phase {r.phase_idx}: gt_thought over 50 words")
        problems.extend(f"phase {r.phase_idx}: banned cue {c!r}" for c in BANNED_CUES if c in text)
    return problems


async def draft_probe(state: CellState, runtime: Runtime[ProbeBuildContext]) -> dict[str, Any]:
    """The designer (T22 / T23 / T24): exactly N phase responses; style linted in code."""
    model, spec = runtime.context.model_for()
    schema = design.draft_schema(len(_arc(state).trajectory))
    try:
        draft, used = await call_structured(
            model, schema, _designer(state), store=runtime.context.cache(), model_name=spec
        )
    except InvalidAnswerError as failed:
        note = f"{_probe_id(state)}: no valid draft after retries (cell skipped)"
        usage = failed.usage + LLMUsage(degraded=1)
        return {"draft": None, "dropped": [note], "calls": [usage.as_dict()]}
    draft = design.numbered_draft(draft)
    return {
        "draft": dump(draft),
        "style_lint": lint_style(draft, state["probe_type"]),
        "calls": [used.as_dict()],
    }


def route_drafted(state: CellState) -> Literal["validate_responses", "__end__"]:
    """A cell whose designer gave no valid draft yields no probe."""
    return "validate_responses" if state["draft"] is not None else "__end__"


def _setting(state: CellState) -> str:
    if state["probe_type"] == "out_of_world":
        return f"target era '{state['era'][0]}'"
    start, end = _arc(state).trajectory[state["k"]].chapter_range
    return f"source novel's world at chs {start}-{end}"


def phase_qc(state: CellState, idx: int) -> int:
    """Spec default 10: the phase's range end; the In-Scenario anchor: the passage's chapter."""
    anchor = state["anchor"]
    if anchor is not None and idx == state["k"]:
        return anchor["chapter"]
    return phase_query_chapter(_arc(state).trajectory[idx])


async def _judge(
    state: CellState, runtime: Runtime[ProbeBuildContext], r: design.DraftResponse
) -> tuple[PhaseQuality, LLMUsage]:
    (model, spec), cache = (
        runtime.context.model_for(runtime.context.validator_model),
        runtime.context.cache(),
    )
    arc = _arc(state)
    phase = arc.trajectory[r.phase_idx]
    draft = _draft(state)
    voice_call = call_structured(
        model,
        qa.Verdict,
        qa.voice_messages(
            character=arc.character,
            k=r.phase_idx,
            label=phase.phase,
            position=phase.position_description,
            qc=phase_qc(state, r.phase_idx),
            setting=_setting(state),
            scenario=draft.scenario,
            response=r,
        ),
        store=cache,
        model_name=spec,
    )
    fit_call = call_structured(
        model,
        qa.phasefit_schema(len(arc.trajectory)),
        qa.phasefit_messages(
            decision_variable=_decision(state).decision_variable,
            pole_start=arc.pole_start,
            pole_end=arc.pole_end,
            phases=[(p.phase, p.position_description) for p in arc.trajectory],
            scenario=draft.scenario,
            question=draft.question,
            response=r,
        ),
        store=cache,
        model_name=spec,
    )
    no_verdict = qa.Verdict(verdict="fail", note="degraded: no valid verdict after retries")
    off_phase = -2  # far from every phase: a validator with no valid answer fails the response
    no_fit = qa.PhaseFit.model_construct(
        most_likely_phase_idx=off_phase, confidence="low", note="degraded"
    )
    (voice, used_a), (fit, used_b) = await gather_two(
        _or_degraded(voice_call, no_verdict), _or_degraded(fit_call, no_fit)
    )
    quality = PhaseQuality(
        q_voice=voice.verdict,
        q_phasefit=qa.phasefit_verdict(fit.most_likely_phase_idx, r.phase_idx),
        notes=[voice.note, fit.note],
    )
    return quality, used_a + used_b


def _failed(quality: PhaseQuality) -> bool:
    return quality.q_voice == "fail" or quality.q_phasefit == "off_phase"


async def _validated(
    state: CellState, runtime: Runtime[ProbeBuildContext], r: design.DraftResponse
) -> tuple[PhaseResponse, LLMUsage]:
    quality, usage = await _judge(state, runtime, r)
    retries = 0
    if _failed(quality):  # exactly one regeneration (App. B)
        retries = 1
        model, spec = runtime.context.model_for()
        messages = design.regenerate_messages(
            _designer(state), _draft(state), r.phase_idx, " ".join(quality.notes)
        )
        call = call_structured(
            model, design.DraftResponse, messages, store=runtime.context.cache(), model_name=spec
        )
        again, used = await _or_degraded(call, r)  # no valid regeneration: r stays, failed
        if again is not r:
            r = again.model_copy(update={"phase_idx": r.phase_idx})
            quality, judged = await _judge(state, runtime, r)
            used = used + judged
        usage = usage + used
    phase = _arc(state).trajectory[r.phase_idx]
    record = PhaseResponse(
        phase_idx=r.phase_idx,
        phase_label=phase.phase,
        query_chapter=phase_qc(state, r.phase_idx),
        gt_action=r.gt_action,
        gt_speech=r.gt_speech,
        gt_thought=r.gt_thought,
        gt_typicality=r.gt_typicality,
        quality=quality,
        retry_count=retries,
        unavailable=_failed(quality),
    )
    return record, usage


async def validate_responses(
    state: CellState, runtime: Runtime[ProbeBuildContext]
) -> dict[str, Any]:
    """Q-Voice + Q-PhaseFit per response; one regeneration; then ``unavailable``."""
    results = await gather_all(_validated(state, runtime, r) for r in _draft(state).phase_responses)
    responses = [r for r, _ in results]
    lost = [
        f"{_probe_id(state)}: phase {r.phase_idx} unavailable after one regeneration"
        for r in responses
        if r.unavailable
    ]
    usage = sum((u for _, u in results), LLMUsage())
    if responses and all(r.unavailable for r in responses):
        lost.append(f"{_probe_id(state)}: {ALL_UNAVAILABLE}")
    return {"responses": [dump(r) for r in responses], "dropped": lost, "calls": [usage.as_dict()]}


ALL_UNAVAILABLE = "every phase unavailable: probe dropped"
"""The reason a cell whose responses all failed gives no probe (App. B keeps "the rest of the
probe": with no rest there is nothing to role-play or judge, so it is dropped, and counted)."""


def route_validated(state: CellState) -> Literal["check_probe", "__end__"]:
    """A probe whose every phase is unavailable is dropped before the probe-level checks."""
    responses = state.get("responses") or []
    if responses and all(r["unavailable"] for r in responses):
        return "__end__"
    return "check_probe"


def _world_context(state: CellState) -> str:
    arc = _arc(state)
    if state["probe_type"] == "out_of_world":
        stages = _life_stages(state) or []
        listed = "\n".join(
            f"    phase_idx={t.phase_idx}: must be {t.life_stage} (~{t.approx_age})" for t in stages
        )
        return qa.WORLD_OOW.format(
            era_label=state["era"][0],
            era_description=state["era"][1],
            stages=listed,
            character=arc.character,
        )
    return qa.WORLD_IW.format(novel=state["title"], qc=phase_qc(state, state["k"]))


async def check_probe(state: CellState, runtime: Runtime[ProbeBuildContext]) -> dict[str, Any]:
    """Q-Anchor (In-Scenario) or Q-World (In-World, Out-of-World) over the whole probe."""
    model, spec = runtime.context.model_for(runtime.context.validator_model)
    draft, k = _draft(state), state["k"]
    anchor = state["anchor"]
    if anchor is not None:
        messages = qa.anchor_messages(
            passage=anchor["passage"],
            scenario=draft.scenario,
            question=draft.question,
            k=k,
            response=draft.phase_responses[k],
        )
        name = "q_anchor"
    else:
        messages = qa.world_messages(
            character=_arc(state).character,
            scenario=draft.scenario,
            responses=draft.phase_responses,
            type_context=_world_context(state),
        )
        name = "q_world"
    no_verdict = qa.Verdict(verdict="fail", note="degraded: no valid verdict after retries")
    verdict, used = await _or_degraded(
        call_structured(
            model, qa.Verdict, messages, store=runtime.context.cache(), model_name=spec
        ),
        no_verdict,
    )
    check = {name: verdict.verdict, f"{name}_note": verdict.note}
    dropped = (
        [] if verdict.verdict == "pass" else [f"{_probe_id(state)}: {name} failed ({verdict.note})"]
    )
    return {"probe_check": check, "dropped": dropped, "calls": [used.as_dict()]}


def route_probe(state: CellState) -> Literal["discriminate_phases", "__end__"]:
    """Q-Anchor / Q-World fail drops the probe."""
    passed = "pass" in state["probe_check"].values()
    return "discriminate_phases" if passed else "__end__"


def _probe_id(state: CellState) -> str:
    arc = _arc(state)
    return probe_id_for(arc.novel, arc.character, arc.axis_id, state["probe_type"], state["k"])


async def discriminate_phases(
    state: CellState, runtime: Runtime[ProbeBuildContext]
) -> dict[str, Any]:
    """Q-Discrim (T30): annotate weak adjacent pairs; never drops. Emit the probe record."""
    model, spec = runtime.context.model_for(runtime.context.validator_model)
    draft, arc = _draft(state), _arc(state)
    available = [
        design.DraftResponse(
            **r.model_dump(
                include={"phase_idx", "gt_action", "gt_speech", "gt_thought", "gt_typicality"}
            )
        )
        for r in _responses(state)
    ]
    messages = qa.discrim_messages(
        decision_variable=_decision(state).decision_variable,
        scenario=draft.scenario,
        question=draft.question,
        phases=[(p.phase, p.position_description) for p in arc.trajectory],
        responses=available,
    )
    schema = qa.discrimination_schema(len(arc.trajectory))
    found, used = await _or_degraded(
        call_structured(model, schema, messages, store=runtime.context.cache(), model_name=spec),
        qa.Discrimination(note="degraded: no valid answer after retries"),
    )
    found = qa.adjacent_pairs(found)
    weak = [p.model_dump() for p in found.weak_pairs if p.separation != "separated"]
    return {"probes": [dump(_record(state, weak))], "calls": [used.as_dict()]}


def _record(state: CellState, weak: list[dict[str, Any]]) -> ProbeRecord:
    arc, draft, anchor = _arc(state), _draft(state), state["anchor"]
    abstraction = _abstraction(state)
    oow = state["probe_type"] == "out_of_world"
    source = {key: value for key, value in anchor.items() if key != "passage"} if anchor else None
    return ProbeRecord(
        probe_id=_probe_id(state),
        probe_type=state["probe_type"],
        novel=arc.novel,
        character=arc.character,
        axis_id=arc.axis_id,
        anchor_phase_idx=state["k"],
        anchor_query_chapter=phase_qc(state, state["k"]),
        scenario=draft.scenario,
        question=draft.question,
        phase_responses=_responses(state),
        anchor_source=source,
        era_label=state["era"][0] if oow else None,
        era_description=state["era"][1] if oow else None,
        abstract_axis=abstraction.abstract_axis if oow and abstraction else None,
        abstract_phases=abstraction.abstract_phases if oow and abstraction else None,
        decision_variable=_decision(state).decision_variable,
        life_stages=[t.model_dump() for t in _life_stages(state) or []] if oow else [],
        style_lint=state["style_lint"],
        probe_check={**state["probe_check"], "q_discrim": {"weak_pairs": weak}},
    )


cell_builder = StateGraph(
    CellState, context_schema=ProbeBuildContext, input_schema=CellTask, output_schema=CellOutput
)
cell_builder.add_node(ground_scene)
cell_builder.add_node(draft_probe)
cell_builder.add_node(validate_responses)
cell_builder.add_node(check_probe)
cell_builder.add_node(discriminate_phases)
cell_builder.add_edge(START, "ground_scene")
cell_builder.add_conditional_edges("ground_scene", route_grounded, ["draft_probe", END])
cell_builder.add_conditional_edges("draft_probe", route_drafted, ["validate_responses", END])
cell_builder.add_conditional_edges("validate_responses", route_validated, ["check_probe", END])
cell_builder.add_conditional_edges("check_probe", route_probe, ["discriminate_phases", END])
cell_builder.add_edge("discriminate_phases", END)
cell_graph = cell_builder.compile(name="probe_cell")
