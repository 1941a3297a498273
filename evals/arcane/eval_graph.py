"""The ARCANE evaluation (§4, App. E-G): role-play every probe phase in every mode, judge, record.

Why this shape: the unit of work is (probe, mode, model). ``plan_units`` skips units already in
``results.jsonl`` (a rerun repeats no finished unit) and sends one ``Send`` per remaining unit;
``evaluate_unit`` role-plays each available phase at its own query chapter through the
``arcane_roleplay`` graph (so the no-future audit runs on every prompt), judges each answer
with T35 and the trajectory with T36, and appends one line to ``results.jsonl``. The context's
``concurrency`` bounds how many units run at once (a semaphore per event loop). A judge
that fails three times is recorded as missing and counted, never invented (spec default 31);
the judge's schema is built for the scale (integers 1..scale), and ``max_failures`` stops a
run whose missing judgments pass the limit (the finished units stay in ``results.jsonl``).
Aggregation and reports (``evals/arcane/metrics.py``, ``evals/arcane/report.py``) read the file.
"""

from __future__ import annotations

import asyncio
import operator
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, NotRequired, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel
from typing_extensions import TypedDict

from personae.agents.arcane import judges
from personae.agents.arcane.roleplayer import ABLATION_MODES, MODES
from personae.answer_store import AnswerStore
from personae.degraded import DEFAULT_MAX_FAILURES, FailureBudget
from personae.errors import InputError
from personae.evals.arcane.results import RESULTS, UnitRecord, read_results
from personae.fanout import gather_all
from personae.files import append_jsonl, read_jsonl
from personae.graphs.arcane.context import ChunkStoreContext
from personae.graphs.arcane.roleplay import RoleplayContext
from personae.graphs.arcane.roleplay import graph as roleplay_graph
from personae.graphs.server_entry import server_entry
from personae.llm import InvalidAnswerError, LLMUsage, call_structured
from personae.memory.arcane.novel_store import open_novel
from personae.memory.arcane.records import PhaseResponse, ProbeRecord, load_probes
from personae.memory.arcane.records_json import RecordJSON, dump, load
from personae.process_caches import clears_on_reset
from personae.run_context import ModelSpec, described

Judged = TypeVar("Judged", bound=BaseModel)
DROPPED = "dropped_probes.jsonl"
"""Probes left out because every phase is unavailable (no answer to judge), one line each."""
DEFAULT_JUDGE = "openai:deepseek/deepseek-v4-flash"
"""The paper's judge (App. F: ``deepseek/deepseek-v4-flash`` on OpenRouter): the evaluation's
own default, never the role-play model, which would grade its own answers."""


@described
@dataclass(frozen=True, kw_only=True)
class ArcaneEvalContext(ChunkStoreContext):
    """Run settings of the evaluation; ``model`` is the role-play model under test.

    The judge has its own setting (default the paper's, at temperature 0); role-play is sampled
    with the server's defaults, as in the paper (a run's ``temperature`` still wins).
    """

    default_judge: ClassVar[str] = DEFAULT_JUDGE

    # -- the judge (App. F)
    judge_model: ModelSpec = ""
    """Judge model. Empty: PERSONAE_JUDGE_MODEL, else openai:deepseek/deepseek-v4-flash (the
    paper's judge, on the run's OpenAI-compatible server, e.g. OpenRouter), sampled at T = 0."""
    judge_scale: int = 100
    """Score maximum (__SCALE__)."""
    judge_include_thought: bool = True
    """False: the no-thought ablation (the judge does not see ref_thought)."""
    # -- the role-play under test (App. D, E)
    expert_model: ModelSpec = ""
    """TimeChara experts' model. Empty: the role-play model."""
    expert_temperature: float = 0.0
    """TimeChara experts' temperature (the paper: T = 0)."""
    rag_k: int = 6
    """Chunks retrieved (RAG, LifeChoice)."""
    summary_max_chapters: int = 5
    """Summaries shown: chapters qc-4..qc."""
    # -- the run
    concurrency: int = 8
    """(probe, mode) units evaluated at once (the paper's judge pool: 200 threads)."""
    max_failures: str = DEFAULT_MAX_FAILURES
    """Judgments recorded missing (still invalid after retries) tolerated before the run stops:
    a count (``5``) or a share of the run's judgments (``10%``)."""

    def __post_init__(self) -> None:
        """Fill the judge by the settings rule (this is the edge; the store is filled first)."""
        super().__post_init__()
        object.__setattr__(self, "judge_model", self.judge_spec(self.judge_model))
        FailureBudget(self.max_failures)  # a malformed limit fails here, not mid-run

    def judge_llm(self) -> tuple[BaseChatModel, str]:
        """The judge's chat model, sampled as the ``judge`` role, and its cache name."""
        return self.judge_for(self.judge_model)

    def run_settings(self) -> dict[str, Any]:
        """What every result records about how it was made: judge, sampling, experts, sizes."""
        return {
            "judge_sampling": self.sampling("judge"),
            "roleplay_sampling": self.sampling("strong"),
            "expert_model": self.cache_name(self.expert_model or self.model),
            "expert_temperature": self.expert_temperature,
            "embedding": self.embedding,
            "rag_k": self.rag_k,
            "summary_max_chapters": self.summary_max_chapters,
        }

    def roleplay_context(self) -> RoleplayContext:
        """The role-play graph's context for this evaluation."""
        return self.derived(
            RoleplayContext,
            model=self.model,
            fast_model=self.fast_model,
            openai_base_url=self.openai_base_url,
            temperature=self.temperature,
            top_p=self.top_p,
            llm_retry_seconds=self.llm_retry_seconds,
            data_dir=self.data_dir,
            cache_dir=self.cache_dir,
            expert_model=self.expert_model,
            expert_temperature=self.expert_temperature,
            embedding=self.embedding,
            chroma_host=self.chroma_host,
            chroma_port=self.chroma_port,
            rag_k=self.rag_k,
            summary_max_chapters=self.summary_max_chapters,
        )


class EvalInput(TypedDict):
    """What to evaluate and where the results go."""

    novels: list[str]
    """Book slugs or titles (each needs probes.jsonl)."""
    modes: list[str]
    """Context modes."""
    limit: int | None
    """At most this many probes per novel (first by probe id); None: all."""
    out_dir: str
    """Folder of results.jsonl; empty: nothing is read or written, the records are only
    returned (``arcane eval --server``: the client writes them)."""
    probe_ids: NotRequired[list[str] | None]
    """Only these probes (an ablation's sample, e.g. App. G's POV control); None: all."""


class EvalOutput(TypedDict):
    """What this run did (the report reads results.jsonl)."""

    done: Annotated[list[str], operator.add]
    """Unit keys finished in this run."""
    skipped: int
    """Units already in results.jsonl."""
    usage: Annotated[list[dict[str, int]], operator.add]
    """LLM usage per unit."""
    records: Annotated[list[UnitRecord], operator.add]
    """The results.jsonl line of each unit finished in this run."""


class Unit(TypedDict):
    """One Send: a probe in one mode."""

    probe: RecordJSON[ProbeRecord]
    """The probe (plain JSON: checkpoints need no registered types)."""
    novel: str
    """Novel slug."""
    mode: str
    """Context mode."""
    out_dir: str
    """Where to append the result."""


class EvalState(EvalInput, EvalOutput):
    """The evaluation's state."""

    units: list[Unit]
    """Units to run."""


def probe_of(unit: Unit) -> ProbeRecord:
    """The unit's probe as a record."""
    return load(ProbeRecord, unit["probe"])


def unit_key(probe_id: str, mode: str, model: str, judge: str, thought: bool = True) -> str:
    """The resume key of a unit (a no-thought judge is another judge: App. F's ablation)."""
    key = f"{probe_id}|{mode}|{model}|{judge}"
    return key if thought else f"{key}|no_thought"


def done_keys(out_dir: Path) -> set[str]:
    """Keys already in results.jsonl (a torn last line is ignored and redone)."""
    keys = set()
    for row in read_results(out_dir, missing_ok=True):
        thought = row.get("judge_include_thought", True)
        keys.add(
            unit_key(row["probe_id"], row["mode"], row["model"], row.get("judge", ""), thought)
        )
    return keys


def has_available_phase(probe: ProbeRecord) -> bool:
    """Whether any phase of ``probe`` can be role-played (App. B keeps "the rest of the probe")."""
    return any(not p.unavailable for p in probe.phase_responses)


def plan(
    state: EvalInput, context: ArcaneEvalContext, *, record: bool = True
) -> tuple[list[Unit], int]:
    """Every (probe, mode) not yet done; one-line errors for unknown modes, missing probes.

    A probe whose every phase is unavailable has no answer to judge: it is dropped, as the
    paper drops probes without judge scores, and listed in ``dropped_probes.jsonl`` (unless
    not ``record``: the cost estimate plans without writing).
    """
    known = (*MODES, *ABLATION_MODES)
    bad = [m for m in state["modes"] if m not in known]
    if bad or not state["modes"]:
        raise InputError(f"unknown mode {(bad or [''])[0]!r}", f"use {', '.join(known)}")
    done = done_keys(Path(state["out_dir"])) if state["out_dir"] else set()
    units, skipped = [], 0
    for book in state["novels"]:
        novel = open_novel(Path(context.data_dir), book)
        probes = sorted(load_probes(novel.folder), key=lambda p: p.probe_id)
        if not probes:
            raise InputError(
                f"no probes for {novel.slug}",
                f"run personae arcane build-probes {novel.slug} first",
            )
        wanted = state.get("probe_ids")
        if wanted is not None:
            probes = [p for p in probes if p.probe_id in set(wanted)]
        thought = context.judge_include_thought
        chosen = probes[: state["limit"]] if state["limit"] else probes
        if record and state["out_dir"]:
            record_dropped(
                Path(state["out_dir"]), [p.probe_id for p in chosen if not has_available_phase(p)]
            )
        for probe in (p for p in chosen if has_available_phase(p)):
            for mode in state["modes"]:
                if (
                    unit_key(probe.probe_id, mode, context.model, context.judge_model, thought)
                    in done
                ):
                    skipped += 1
                else:
                    units.append(
                        Unit(
                            probe=dump(probe), novel=novel.slug, mode=mode, out_dir=state["out_dir"]
                        )
                    )
    return units, skipped


def record_dropped(out_dir: Path, probe_ids: list[str]) -> None:
    """Append the probes not in ``dropped_probes.jsonl`` yet (the report counts them)."""
    if not probe_ids:
        return
    known = {row.get("probe_id") for row in read_jsonl(out_dir / DROPPED)}
    for probe_id in probe_ids:
        if probe_id not in known:
            append_jsonl(
                out_dir / DROPPED, {"probe_id": probe_id, "reason": "every phase unavailable"}
            )


def dropped_probes(out_dir: Path) -> list[str]:
    """Probe ids left out of ``out_dir``'s evaluation because every phase is unavailable."""
    return sorted({str(row["probe_id"]) for row in read_jsonl(out_dir / DROPPED)})


async def plan_units(state: EvalState, runtime: Runtime[ArcaneEvalContext]) -> dict[str, Any]:
    """Read what is done; list the units left (and count their judgments for the budget)."""
    units, skipped = await asyncio.to_thread(plan, state, runtime.context)
    _TALLIES.setdefault(asyncio.get_running_loop(), {})[state["out_dir"]] = _Tally(
        sum(judgments_of(probe_of(u)) for u in units)
    )
    return {"units": units, "skipped": skipped}


@dataclass
class _Tally:
    """Judgments this run plans, and those recorded missing so far."""

    judgments: int
    missing: int = 0


_TALLIES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Tally]] = (
    weakref.WeakKeyDictionary()
)
"""The tally of each running evaluation, by event loop and output folder."""
clears_on_reset("evals.arcane.eval_graph.tallies", _TALLIES.clear)


def judgments_of(probe: ProbeRecord) -> int:
    """T35 calls (one per available phase) and the T36 call (with two phases or more)."""
    available = sum(not p.unavailable for p in probe.phase_responses)
    return available + (available >= 2)


def count_missing(out_dir: str, missing: int, budget: str) -> None:
    """Add a unit's missing judgments; stop the run when there are too many."""
    tally = _TALLIES.get(asyncio.get_running_loop(), {}).get(out_dir)
    if tally is not None and missing:
        tally.missing += missing
        FailureBudget(budget).check(tally.missing, tally.judgments, "judgments")


def route_units(state: EvalState) -> list[Send] | Literal["__end__"]:
    """One Send per unit (``concurrency`` bounds how many run at once)."""
    sends = [Send("evaluate_unit", u) for u in state["units"]]
    return sends if sends else "__end__"


async def _roleplay(unit: Unit, phase: PhaseResponse, context: ArcaneEvalContext) -> dict[str, Any]:
    request: Any = {
        "novel": unit["novel"],
        "mode": unit["mode"],
        "probe_id": unit["probe"]["probe_id"],
        "phase_idx": phase.phase_idx,
    }
    result: dict[str, Any] = await roleplay_graph.ainvoke(
        request, context=context.roleplay_context()
    )
    return result


def _judge_store(context: ArcaneEvalContext, unit: Unit) -> AnswerStore:
    """The judge's cache, scoped by mode: two modes never share a verdict, even on one answer."""
    return context.cache().scoped(f"judge:{unit['mode']}")


async def _ask_judge(
    context: ArcaneEvalContext, unit: Unit, schema: type[Judged], messages: list[BaseMessage]
) -> tuple[Judged | None, LLMUsage]:
    """The judge's answer; ``None`` when still invalid after retries (spec default 31).

    A missing judgement is recorded missing and counted degraded, never guessed.
    """
    model, name = context.judge_llm()
    try:
        return await call_structured(
            model, schema, messages, store=_judge_store(context, unit), model_name=name
        )
    except InvalidAnswerError as failed:
        return None, failed.usage + LLMUsage(degraded=1)


def phase_judge_prompt(
    probe: Any, phase: PhaseResponse, response: str, context: ArcaneEvalContext
) -> list[Any]:
    """The judge's messages for one phase's ``response`` (the run's and the estimate's)."""
    return judges.phase_judge_messages(
        scenario=probe.scenario,
        question=probe.question,
        phase_label=phase.phase_label,
        gt_action=phase.gt_action,
        gt_speech=phase.gt_speech,
        gt_thought=phase.gt_thought,
        response=response,
        scale=context.judge_scale,
        include_thought=context.judge_include_thought,
    )


async def _judge_phase(
    unit: Unit, phase: PhaseResponse, response: str, context: ArcaneEvalContext
) -> tuple[dict[str, int] | None, LLMUsage]:
    messages = phase_judge_prompt(probe_of(unit), phase, response, context)
    schema = judges.phase_judgement_schema(context.judge_scale)
    answer, usage = await _ask_judge(context, unit, schema, messages)
    return (None if answer is None else answer.scores.model_dump()), usage


async def _judge_trajectory(
    unit: Unit, phases: list[tuple[PhaseResponse, str]], context: ArcaneEvalContext
) -> tuple[dict[str, Any] | None, LLMUsage]:
    if len(phases) < 2:
        return None, LLMUsage()  # PTF undefined below two phases (spec default 32)
    probe = probe_of(unit)
    messages = judges.trajectory_judge_messages(
        scenario=probe.scenario,
        question=probe.question,
        phases=[(p.phase_idx, p.gt_action, p.gt_speech, p.gt_thought, r) for p, r in phases],
        scale=context.judge_scale,
        include_thought=context.judge_include_thought,
    )
    schema = judges.trajectory_judgement_schema(context.judge_scale)
    answer, usage = await _ask_judge(context, unit, schema, messages)
    if answer is None:
        return None, usage
    ptf = answer.ptf()
    return {
        **answer.scores.model_dump(),
        "ptf": ptf,
        "judge_average": answer.average,
        "average_disagrees": answer.average is not None and abs(answer.average - ptf) > 0.01,
    }, usage


_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)
clears_on_reset("evals.arcane.eval_graph.gates", _GATES.clear)


def gate(limit: int) -> asyncio.Semaphore:
    """The semaphore bounding concurrent units on this event loop (one per limit)."""
    loop = asyncio.get_running_loop()
    return _GATES.setdefault(loop, {}).setdefault(max(1, limit), asyncio.Semaphore(max(1, limit)))


async def evaluate_unit(state: Unit, runtime: Runtime[ArcaneEvalContext]) -> dict[str, Any]:
    """Role-play each available phase, judge each answer (T35) and the trajectory (T36)."""
    async with gate(runtime.context.concurrency):
        return await _evaluate(state, runtime.context)


async def _evaluate(state: Unit, context: ArcaneEvalContext) -> dict[str, Any]:
    probe = probe_of(state)
    available = [p for p in probe.phase_responses if not p.unavailable]
    played = await gather_all(_roleplay(state, p, context) for p in available)
    judged = await gather_all(
        _judge_phase(state, p, r["response"], context)
        for p, r in zip(available, played, strict=True)
    )
    ptf, ptf_usage = await _judge_trajectory(
        state, [(p, r["response"]) for p, r in zip(available, played, strict=True)], context
    )
    usage = sum((u for _, u in judged), ptf_usage)
    usage = usage + sum((LLMUsage.from_dict(r["usage"]) for r in played), LLMUsage())
    record: UnitRecord = {
        "probe_id": probe.probe_id,
        "novel": state["novel"],
        "character": probe.character,
        "axis_id": probe.axis_id,
        "probe_type": probe.probe_type,
        "mode": state["mode"],
        "model": context.model,
        "judge": context.judge_model,
        "judge_include_thought": context.judge_include_thought,
        "settings": context.run_settings(),
        "phases": [
            {
                "phase_idx": p.phase_idx,
                "query_chapter": p.query_chapter,
                "response": r["response"],
                "context_chapters": r["context_chapters"],
                "hint": r["hint"],
                "scores": s,
            }
            for p, r, (s, _) in zip(available, played, judged, strict=True)
        ],
        "unavailable_phases": [p.phase_idx for p in probe.phase_responses if p.unavailable],
        "ptf": ptf,
        "usage": usage.as_dict(),
    }
    if state["out_dir"]:
        await asyncio.to_thread(append_jsonl, Path(state["out_dir"]) / RESULTS, record)
    count_missing(state["out_dir"], usage.degraded, context.max_failures)
    key = unit_key(
        probe.probe_id,
        state["mode"],
        context.model,
        context.judge_model,
        context.judge_include_thought,
    )
    return {"done": [key], "usage": [usage.as_dict()], "records": [record]}


builder = StateGraph(
    EvalState, context_schema=ArcaneEvalContext, input_schema=EvalInput, output_schema=EvalOutput
)
builder.add_node(plan_units)
builder.add_node("evaluate_unit", evaluate_unit, input_schema=Unit)
builder.add_edge(START, "plan_units")
builder.add_conditional_edges("plan_units", route_units, ["evaluate_unit", END])
builder.add_edge("evaluate_unit", END)

graph = builder.compile(name="arcane_eval")
served = server_entry(graph)
"""What langgraph.json serves: ``graph``, once a server run's raw context passed its check."""


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[EvalState, ArcaneEvalContext, EvalInput, EvalOutput]:
    """The graph compiled with a checkpointer (CLI, tests); ``graph`` has none."""
    return builder.compile(checkpointer=checkpointer, name="arcane_eval")
