"""What ``personae arcane eval`` will cost, counted before the first model call.

The units are planned as the run plans them (:func:`~personae.evals.arcane.eval_graph.plan`,
without writing): every (probe, mode) of each role-play model not yet in ``results.jsonl``, so
a rerun's estimate counts only what is left. Per unit, each available phase costs one role-play
answer (T31) and one judge call (T35), TimeChara two expert calls more (the temporal one, and
the spatial one it skips only when the scene is placed after the query chapter: counted), and a
unit with two phases or more one trajectory judgment (T36). Retries of an invalid judgment are
not counted (a run reports them as degraded).

Tokens are the prompts rendered as the run renders them and counted as usage is counted
(:mod:`personae.agents.costs`): the T31 messages with each mode's context block as of the
phase's query chapter (summaries, arcs and the ablations' blocks read from the novel's files;
RAG's ``rag_k`` chunks at the mean size of the chunks before the query chapter, as the index
cuts them, since the search itself would embed the query), the judges' prompts with an answer
of ``ANSWER_TOKENS``, and the answers below. ``benchmarks/bench_estimates.py --only
eval-arcane`` prints the estimate beside a scripted run's usage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from personae.agents.arcane import judges, timechara
from personae.agents.arcane.roleplayer import (
    render_system,
    render_user,
    roleplay_messages,
    with_pov,
)
from personae.agents.costs import Estimate, message_tokens
from personae.errors import InputError
from personae.evals.arcane.ablation import arc_records, coder_prompt, coding_jobs
from personae.evals.arcane.eval_graph import (
    ArcaneEvalContext,
    EvalInput,
    Unit,
    phase_judge_prompt,
    plan,
    probe_of,
)
from personae.graphs.arcane.roleplay import (
    NovelResources,
    RoleplayContext,
    RoleplayTask,
    build_block,
)
from personae.memory.arcane.novel_chunks import chunk_chapter
from personae.memory.arcane.novel_store import open_novel
from personae.memory.arcane.records import (
    ArcRecord,
    PhaseResponse,
    ProbeRecord,
    load_arcs,
    load_probes,
    load_summaries,
)

ANSWER_TOKENS = 150
"""A role-play answer (T31: action, speech and thought in a paragraph or two)."""
JUDGE_OUTPUT_TOKENS = 30
"""A judgment: three integer scores (T35) or three and their average (T36), as JSON."""
EXPERT_OUTPUT_TOKENS = 8
"""A TimeChara expert's answer: ``Chapter: N`` or ``Presence: present``."""
HINT_TOKENS = 30
"""The TimeChara hint a phase's prompt may carry (future or absent character)."""


def estimate_evaluation(
    books: Sequence[str],
    *,
    context: ArcaneEvalContext,
    modes: Sequence[str],
    models: Sequence[str],
    limit: int | None = None,
    out: Path | None = None,
    probe_ids: Sequence[str] | None = None,
) -> Estimate:
    """Calls and tokens of evaluating ``models`` on the units left in ``out`` (None: all).

    Raises:
        InputError: as the run would, before any call: an unknown mode, a book without probes.
    """
    calls = tokens = units = skipped = 0
    reader = _Reader(context)
    for model in models:
        run_context = context.replaced(model=model)
        state: EvalInput = {
            "novels": list(books),
            "modes": list(modes),
            "limit": limit,
            "out_dir": str(out) if out is not None else "",
            "probe_ids": None if probe_ids is None else list(probe_ids),
        }
        left, done = plan(state, run_context, record=False)
        units, skipped = units + len(left), skipped + done
        for unit in left:
            unit_calls, unit_tokens = reader.unit_cost(unit)
            calls, tokens = calls + unit_calls, tokens + unit_tokens
    detail = f"{units} (probe, mode, model) units"
    if skipped:
        detail += f", {skipped} already done"
    return Estimate(calls, tokens, detail)


class _Reader:
    """Renders the prompts of one estimate, each novel's files read once."""

    def __init__(self, context: ArcaneEvalContext) -> None:
        self.context = context
        self.roleplay: RoleplayContext = context.roleplay_context()
        self.novels: dict[str, NovelResources] = {}
        self.chunk_sizes: dict[str, list[tuple[int, int]]] = {}

    def unit_cost(self, unit: Unit) -> tuple[int, int]:
        """The calls and tokens of one (probe, mode) unit."""
        context, mode = self.context, unit["mode"]
        probe = probe_of(unit)
        available = [p for p in probe.phase_responses if not p.unavailable]
        res = self.resources(unit["novel"])
        answer = "x" * (4 * ANSWER_TOKENS)
        calls = tokens = 0
        for phase in available:
            task = _task(res, probe, phase)
            calls += 2
            tokens += self.roleplay_tokens(res, task, mode) + ANSWER_TOKENS
            judged = phase_judge_prompt(probe, phase, answer, context)
            tokens += message_tokens(judged) + JUDGE_OUTPUT_TOKENS
            if mode == "timechara":
                calls += 2
                tokens += _expert_tokens(task)
        if len(available) >= 2:
            calls += 1
            trajectory = judges.trajectory_judge_messages(
                scenario=probe.scenario,
                question=probe.question,
                phases=[
                    (p.phase_idx, p.gt_action, p.gt_speech, p.gt_thought, answer) for p in available
                ],
                scale=context.judge_scale,
                include_thought=context.judge_include_thought,
            )
            tokens += message_tokens(trajectory) + JUDGE_OUTPUT_TOKENS
        return calls, tokens

    def resources(self, slug: str) -> NovelResources:
        """What role-play reads of a novel, without its chunk index (RAG is approximated)."""
        if slug not in self.novels:
            novel = open_novel(Path(self.context.data_dir), slug)
            folder = novel.folder
            probes = {p.probe_id: p for p in load_probes(folder)}
            self.novels[slug] = NovelResources(
                novel, load_summaries(folder), load_arcs(folder), probes, None
            )
        return self.novels[slug]

    def roleplay_tokens(self, res: NovelResources, task: RoleplayTask, mode: str) -> int:
        """The T31 prompt of ``mode`` at the task's query chapter, as ``render_prompt`` has it."""
        system = render_system(
            character=task["character"],
            novel=task["title"],
            query_chapter=task["query_chapter"],
            target=task["target"],
            context=self.block(res, task, mode),
        )
        if mode == "pov":
            system = with_pov(system)
        user = render_user(scenario=task["scenario"], question=task["question"], hint=None)
        hint = HINT_TOKENS if mode == "timechara" else 0
        return message_tokens(roleplay_messages(system, user)) + hint

    def block(self, res: NovelResources, task: RoleplayTask, mode: str) -> str:
        """The mode's context block; RAG's chunks at their mean size.

        A block that cannot be built counts empty: the run stops at it and says why.
        """
        chunks = "\n\n".join(self.chunks(res, task["query_chapter"]))
        try:
            if mode == "rag":
                return chunks
            if mode == "lifechoice":
                description, _ = build_block(res, task, "summary", self.roleplay)
                return f"[Character Description]\n{description}\n\n[Relevant Memory]\n{chunks}"
            return build_block(res, task, mode, self.roleplay)[0]
        except InputError:
            return ""

    def chunks(self, res: NovelResources, query_chapter: int) -> list[str]:
        """Stand-ins for the ``rag_k`` chunks the search returns.

        As many as the index holds up to ``query_chapter`` (at most ``rag_k``), each of their
        mean length.
        """
        novel = res.novel
        if novel.slug not in self.chunk_sizes:
            self.chunk_sizes[novel.slug] = [
                (len(cut), sum(len(c.text) for c in cut))
                for cut in (
                    chunk_chapter(idx, novel.chapter(idx).text) for idx in range(1, novel.count + 1)
                )
            ]
        before = self.chunk_sizes[novel.slug][:query_chapter]
        count = sum(n for n, _ in before)
        mean = sum(total for _, total in before) // max(1, count)
        return ["x" * mean] * min(count, self.roleplay.rag_k)


def _task(res: NovelResources, probe: ProbeRecord, phase: PhaseResponse) -> RoleplayTask:
    """The role-play task of a probe's phase, as ``resolve_task`` makes it (Arc: the axis)."""
    arc = next(
        (a for a in res.arcs if a.character == probe.character and a.axis_id == probe.axis_id),
        None,
    )
    return RoleplayTask(
        title=res.novel.title,
        total_chapters=res.novel.count,
        character=probe.character,
        query_chapter=phase.query_chapter,
        scenario=probe.scenario,
        question=probe.question,
        target=arc.relational_target if arc else None,
        axis_ids=[probe.axis_id],
        cache_scope=probe.probe_id,
    )


def _expert_tokens(task: RoleplayTask) -> int:
    """The temporal and spatial experts' prompts and answers (T33)."""
    common: dict[str, Any] = {"scenario": task["scenario"], "question": task["question"]}
    temporal = timechara.temporal_messages(
        novel=task["title"], total_chapters=task["total_chapters"], **common
    )
    spatial = timechara.spatial_messages(novel=task["title"], character=task["character"], **common)
    return message_tokens(temporal) + message_tokens(spatial) + 2 * EXPERT_OUTPUT_TOKENS


CODER_OUTPUT_TOKENS = 100
"""The proposition coder's answer: four yes/no/na answers with a one-sentence reason each."""


def estimate_propositions(
    records: Sequence[Mapping[str, Any]],
    sample: Sequence[Mapping[str, Any]],
    probes: Mapping[str, ProbeRecord],
    arcs: Sequence[ArcRecord],
    base: str,
    compare: str,
) -> Estimate:
    """Calls and tokens of App. G's proposition coder over the sample's three conditions.

    The coder's prompts are rendered as the run renders them; the POV condition's responses,
    not written yet, are ``base``'s Arc phases with an answer of ``ANSWER_TOKENS``. A coding
    already in the run's cache is counted too (the run then pays nothing for it).
    """
    placeholder = "x" * (4 * ANSWER_TOKENS)
    done = arc_records(records, base, "pov")
    planned = [
        {
            "model": base,
            "mode": "pov",
            "probe_id": probe_id,
            "phases": [{**p, "response": placeholder} for p in record["phases"]],
        }
        for probe_id, record in arc_records(records, base).items()
        if probe_id not in done
    ]
    axes = {(a.character, a.axis_id): a for a in arcs}
    jobs = coding_jobs([*records, *planned], sample, base, compare)
    tokens = 0
    for row, _, record in jobs:
        probe = probes[row["probe_id"]]
        prompt = coder_prompt(probe, axes.get((probe.character, probe.axis_id)), record)
        tokens += message_tokens(prompt) + CODER_OUTPUT_TOKENS
    return Estimate(len(jobs), tokens, f"{len(jobs)} proposition codings")
