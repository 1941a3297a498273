"""ARCANE's ablation samples and the POV control's figures (§5.1 / App. K, §5.3 / App. G).

Why a module of its own: the ablations re-run part of the benchmark on a *sample* drawn from
a finished evaluation, then compare conditions on exactly that sample.

- App. K (MIXEDARC, ARCHINT): about 120 probes per model, stratified over the three categories
  (the paper: 15 characters x 8 probes). ``category_sample`` takes probes round-robin over the
  categories, each category in SHA-1 order of probe ids (deterministic; the paper's draw is
  not given).
- App. G (POV control): the pair-trace pool is two models' Arc results (the paper: Qwen3-32B vs
  ARCANE-32B-DPO). Per probe, Overall = mean of APF, RPF, RAE (phase means) and PTF; the delta
  (compare - base) is *positive* if > 1, *negative* if < -1, a *tie* otherwise (dropped). Six
  (category, sign) cells, 25 probes each (150), drawn in SHA-1 order. The base model is then
  re-run in the ``pov`` mode (the Arc prompt plus the register paragraph), rescored by the
  unchanged judge, and the three conditions are compared on the sample; the proposition coder
  (``agents/arcane/propositions.py``) codes each condition's per-phase set (Table 5).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import TYPE_CHECKING, Any

from personae.agents.arcane import propositions as coder
from personae.evals.arcane.metrics import CATEGORIES, CATEGORY_LABELS, PHASE_METRICS, probe_scores
from personae.fanout import gather_all
from personae.graphs.arcane.context import ArcaneContext
from personae.llm import InvalidAnswerError, call_structured
from personae.memory.arcane.records import ArcRecord, ProbeRecord

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

SIGNS = ("positive", "negative")
TIE = 1.0
"""|delta| <= 1 on the 1-100 scale is a tie (App. G)."""


def _order(probe_id: str) -> str:
    return hashlib.sha1(probe_id.encode()).hexdigest()


def category_sample(probes: Sequence[ProbeRecord], size: int) -> list[ProbeRecord]:
    """App. K's sample: ``size`` probes round-robin over the categories (SHA-1 order inside)."""
    queues = [
        sorted((p for p in probes if p.probe_type == c), key=lambda p: _order(p.probe_id))
        for c in CATEGORIES
    ]
    chosen: list[ProbeRecord] = []
    while len(chosen) < size and any(queues):
        for queue in queues:
            if queue and len(chosen) < size:
                chosen.append(queue.pop(0))
    return chosen


def probe_overall(record: Mapping[str, Any]) -> float | None:
    """App. G's per-probe Overall: mean of APF, RPF, RAE (phase means) and PTF present."""
    scores = probe_scores(record)
    return fmean(scores.values()) if scores else None


def arc_records(
    records: Sequence[Mapping[str, Any]], model: str, mode: str = "arc"
) -> dict[str, Mapping[str, Any]]:
    """One model's records of ``mode`` by probe id (thought-judged only)."""
    return {
        r["probe_id"]: r
        for r in records
        if r["model"] == model and r["mode"] == mode and r.get("judge_include_thought", True)
    }


def pov_sample(
    records: Sequence[Mapping[str, Any]], base: str, compare: str, per_cell: int = 25
) -> list[dict[str, Any]]:
    """App. G's stratified sample: (category, sign) cells of ``per_cell`` probes each.

    Returns ``{probe_id, novel, probe_type, sign, delta}`` rows; ties are dropped.
    """
    mine, theirs = arc_records(records, base), arc_records(records, compare)
    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for probe_id in sorted(set(mine) & set(theirs), key=_order):
        a, b = probe_overall(mine[probe_id]), probe_overall(theirs[probe_id])
        if a is None or b is None or abs(b - a) <= TIE:
            continue
        sign = "positive" if b - a > TIE else "negative"
        record = mine[probe_id]
        cells[(record["probe_type"], sign)].append(
            {
                "probe_id": probe_id,
                "novel": record["novel"],
                "probe_type": record["probe_type"],
                "sign": sign,
                "delta": round(b - a, 2),
            }
        )
    return [row for c in CATEGORIES for s in SIGNS for row in cells[(c, s)][:per_cell]]


def conditions(base: str, compare: str) -> list[tuple[str, str, str]]:
    """(label, model, mode) of the three POV-control conditions."""
    return [(base, base, "arc"), (f"POV-{base}", base, "pov"), (compare, compare, "arc")]


def pov_figures(
    records: Sequence[Mapping[str, Any]],
    sample: Sequence[Mapping[str, Any]],
    base: str,
    compare: str,
) -> list[dict[str, Any]]:
    """Per condition on the sample: per-probe Overall and per-phase mean, overall and per category.

    The paper's rubric figure (53.8 / 50.0 / 56.7) is the mean per-probe Overall.
    """
    wanted = {s["probe_id"] for s in sample}
    figures = []
    for label, model, mode in conditions(base, compare):
        rows = [r for pid, r in arc_records(records, model, mode).items() if pid in wanted]
        entry: dict[str, Any] = {"condition": label, "model": model, "mode": mode}
        entry["probes"] = len(rows)
        for scope, group in [("overall", rows)] + [
            (c, [r for r in rows if r["probe_type"] == c]) for c in CATEGORIES
        ]:
            overall = [v for r in group if (v := probe_overall(r)) is not None]
            per_phase = [
                fmean(s[m] for m in PHASE_METRICS)
                for r in group
                if all(m in (s := probe_scores(r)) for m in PHASE_METRICS)
            ]
            entry[scope] = {
                "probe_overall": round(fmean(overall), 2) if overall else None,
                "per_phase": round(fmean(per_phase), 2) if per_phase else None,
                "probes": len(group),
            }
        figures.append(entry)
    return figures


def coder_prompt(
    probe: ProbeRecord, arc: ArcRecord | None, record: Mapping[str, Any]
) -> list[BaseMessage]:
    """The coder's messages over one condition's per-phase responses to ``probe``."""
    refs = {p.phase_idx: p for p in probe.phase_responses}
    phases = [
        (
            int(p["phase_idx"]),
            refs[int(p["phase_idx"])].phase_label,
            refs[int(p["phase_idx"])].gt_action,
            refs[int(p["phase_idx"])].gt_thought,
            str(p["response"]),
        )
        for p in record["phases"]
        if int(p["phase_idx"]) in refs
    ]
    return coder.coder_messages(
        axis_name=arc.axis_name if arc else probe.axis_id,
        dimension_label=arc.dimension_label if arc else "",
        scenario=probe.scenario,
        question=probe.question,
        phases=phases,
    )


def coding_jobs(
    records: Sequence[Mapping[str, Any]],
    sample: Sequence[Mapping[str, Any]],
    base: str,
    compare: str,
) -> list[tuple[Mapping[str, Any], str, Mapping[str, Any]]]:
    """(sample row, condition label, that condition's record) of every coder call to make."""
    jobs = []
    for label, mdl, mode in conditions(base, compare):
        by_probe = arc_records(records, mdl, mode)
        jobs += [
            (row, label, by_probe[row["probe_id"]]) for row in sample if row["probe_id"] in by_probe
        ]
    return jobs


async def code_propositions(
    *,
    records: Sequence[Mapping[str, Any]],
    sample: Sequence[Mapping[str, Any]],
    probes: Mapping[str, ProbeRecord],
    arcs: Sequence[ArcRecord],
    base: str,
    compare: str,
    context: ArcaneContext,
    coder_model: str,
    concurrency: int = 8,
) -> list[dict[str, Any]]:
    """Code P1-P4 for every (sampled probe, condition); a coder failing 3 times is skipped."""
    gate = asyncio.Semaphore(max(1, concurrency))
    axes = {(a.character, a.axis_id): a for a in arcs}
    model, name = context.judge_for(coder_model)

    async def one(row: Mapping[str, Any], label: str, record: Mapping[str, Any]) -> dict[str, Any]:
        probe = probes[row["probe_id"]]
        messages = coder_prompt(probe, axes.get((probe.character, probe.axis_id)), record)
        base_row = {
            "probe_id": row["probe_id"],
            "probe_type": row["probe_type"],
            "condition": label,
        }
        async with gate:
            try:
                answer, _ = await call_structured(
                    model, coder.PropositionCoding, messages, store=context.cache(), model_name=name
                )
            except InvalidAnswerError:  # still invalid after retries: left uncoded, counted
                return {**base_row, "coding": None}
        return {**base_row, "coding": answer.model_dump()}

    return await gather_all([one(*job) for job in coding_jobs(records, sample, base, compare)])


def table_5(coded: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Yes-rates (%, excluding na) per proposition x category (and Overall) x condition."""
    labels = list(dict.fromkeys(c["condition"] for c in coded))
    table: dict[str, Any] = {}
    for prop in coder.PROPOSITIONS:
        rows: dict[str, dict[str, float | None]] = {}
        for scope in (*CATEGORIES, "overall"):
            rows[scope] = {}
            for label in labels:
                answers = [
                    c["coding"][prop]["answer"]
                    for c in coded
                    if c["condition"] == label
                    and c.get("coding")
                    and (scope == "overall" or c["probe_type"] == scope)
                ]
                applicable = [a for a in answers if a != "na"]
                rows[scope][label] = (
                    round(100 * applicable.count("yes") / len(applicable), 1)
                    if applicable
                    else None
                )
        table[prop] = rows
    return {"conditions": labels, "yes_rates": table}


def markdown(figures: Sequence[Mapping[str, Any]], table5: Mapping[str, Any] | None) -> str:
    """The POV-control figures and, if coded, Table 5's layout."""
    lines = [
        "# POV control (ARCANE §5.3, App. G)",
        "",
        "| Condition | Probes | Per-probe Overall | Per-phase mean | "
        + " | ".join(f"{CATEGORY_LABELS[c]} Overall" for c in CATEGORIES)
        + " |",
        "|---|---|---|---|---|---|---|",
    ]

    def fmt(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    for f in figures:
        lines.append(
            f"| {f['condition']} | {f['probes']} | {fmt(f['overall']['probe_overall'])} | "
            f"{fmt(f['overall']['per_phase'])} | "
            + " | ".join(fmt(f[c]["probe_overall"]) for c in CATEGORIES)
            + " |"
        )
    if table5:
        labels = table5["conditions"]
        lines += [
            "",
            "## Proposition yes-rates (%, excluding na; Table 5)",
            "",
            "| Proposition | Category | " + " | ".join(labels) + " |",
            "|---|---|" + "---|" * len(labels),
        ]
        for prop, rows in table5["yes_rates"].items():
            for scope, values in rows.items():
                name = "Overall" if scope == "overall" else CATEGORY_LABELS[scope]
                lines.append(
                    f"| {coder.PROPOSITION_NAMES[prop]} | {name} | "
                    + " | ".join(fmt(values[label]) for label in labels)
                    + " |"
                )
    return "\n".join(lines)
