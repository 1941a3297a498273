"""ARCANE aggregation (§4.2, App. G): per probe, per category x metric, Overall, Arc gaps.

Per probe p (one mode, one model): APF(p), RPF(p), RAE(p) are means over p's scored phases;
PTF(p) is the recomputed mean of the three trajectory sub-checks. A category's metric is the
mean over its probes (probe-level macro average, spec default 29). Overall is the unweighted
mean of the 12 (category x metric) cells (spec default 30), which reproduces every Overall of
the paper's Tables 2, 6 and 7 within 0.06 when fed their printed cells (tested).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean
from typing import Any

CATEGORIES = ("in_scenario", "in_world", "out_of_world")
CATEGORY_LABELS = {
    "in_scenario": "In-Scenario",
    "in_world": "In-World",
    "out_of_world": "Out-of-World",
}
METRICS = ("apf", "rpf", "rae", "ptf")
PHASE_METRICS = ("apf", "rpf", "rae")


BASELINES = ("vanilla", "summary", "rag", "lifechoice", "timechara")
"""The paper's non-Arc modes: the Arc gap is against the best of these (never an ablation)."""
NO_THOUGHT = " [no-thought]"
"""Suffix of a mode judged without ref_thought (App. F's ablation): a row of its own."""


def mode_label(record: Mapping[str, Any]) -> str:
    """The record's mode, marked when its judge ran without ref_thought."""
    thought = record.get("judge_include_thought", True)
    mode = str(record["mode"])
    return mode if thought else mode + NO_THOUGHT


def probe_scores(record: Mapping[str, Any]) -> dict[str, float]:
    """APF/RPF/RAE means over the record's scored phases, and its PTF (absent when missing)."""
    scored = [p for p in record.get("phases", []) if p.get("scores")]
    result = {m: fmean(p["scores"][m] for p in scored) for m in PHASE_METRICS} if scored else {}
    ptf = record.get("ptf")
    if ptf is not None:
        result["ptf"] = float(ptf["ptf"])
    return result


def overall(cells: Mapping[tuple[str, str], float]) -> float | None:
    """Unweighted mean of the 12 (category x metric) cells; None unless all 12 exist."""
    wanted = [(c, m) for c in CATEGORIES for m in METRICS]
    if any(key not in cells for key in wanted):
        return None
    return fmean(cells[key] for key in wanted)


def table_cells(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], float]:
    """(category, metric) -> mean over the category's probes that have the metric."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for record in records:
        for metric, value in probe_scores(record).items():
            values[(record["probe_type"], metric)].append(value)
    return {key: fmean(v) for key, v in values.items()}


JudgementKey = tuple[str, int | str]
"""One judgement of a probe, whatever the mode: (probe_id, phase_idx) or (probe_id, "ptf")."""


def scored_judgements(record: Mapping[str, Any]) -> set[JudgementKey]:
    """The judgements a record holds a score for (missing ones and undefined PTF left out)."""
    probe = str(record.get("probe_id"))
    keys: set[JudgementKey] = {
        (probe, int(p["phase_idx"])) for p in record.get("phases", []) if p.get("scores")
    }
    if record.get("ptf") is not None:
        keys.add((probe, "ptf"))
    return keys


def shared_judgements(rows: Iterable[Sequence[Mapping[str, Any]]]) -> set[JudgementKey]:
    """The judgements every row (one mode's records) scored: the set its Table 2 rows compare.

    A judgement missing after three attempts leaves its mode only; averaging each mode over
    what it has would compare different probe sets, so the table's default is the judgements
    all the compared modes have.
    """
    sets = [set().union(*(scored_judgements(r) for r in group)) for group in rows]
    return set.intersection(*sets) if sets else set()


def restricted(record: Mapping[str, Any], keep: set[JudgementKey]) -> dict[str, Any]:
    """``record`` with only the scores in ``keep`` (the others read as absent)."""
    probe = str(record.get("probe_id"))
    phases = [
        {**p, "scores": p.get("scores") if (probe, int(p["phase_idx"])) in keep else None}
        for p in record.get("phases", [])
    ]
    ptf = record.get("ptf") if (probe, "ptf") in keep else None
    return {**record, "phases": phases, "ptf": ptf}


def summarize(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """summary.json's content: per (model, mode) row and per model Arc gap.

    A row's ``cells`` and ``overall`` cover the judgements every mode of its model (same judge
    setting) scored; ``own_cells`` / ``own_overall`` the row's own, beside them. Its counts keep
    apart what is missing after 3 attempts (``missing_phase_judgements``, ``missing_ptf``) and
    PTF undefined below two available phases (``undefined_ptf``), which is the probe's, not a
    failure.
    """
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        groups[(record["model"], mode_label(record))].append(record)
    compared: dict[tuple[str, bool], list[list[Mapping[str, Any]]]] = defaultdict(list)
    for (model, mode), group in groups.items():
        compared[(model, mode.endswith(NO_THOUGHT))].append(group)
    shared = {key: shared_judgements(rows) for key, rows in compared.items()}
    rows = []
    for (model, mode), group in sorted(groups.items()):
        keep = shared[(model, mode.endswith(NO_THOUGHT))]
        cells = table_cells(restricted(r, keep) for r in group)
        own = table_cells(group)
        rows.append(
            {
                "model": model,
                "mode": mode,
                "probes": len(group),
                **_cell_figures(cells),
                "own_cells": _cell_figures(own)["cells"],
                "own_overall": _cell_figures(own)["overall"],
                "judgements_shared": sum(len(scored_judgements(r) & keep) for r in group),
                "judgements_scored": sum(len(scored_judgements(r)) for r in group),
                "missing_phase_judgements": sum(
                    1 for r in group for p in r.get("phases", []) if not p.get("scores")
                ),
                "missing_ptf": sum(
                    1 for r in group if r.get("ptf") is None and len(r.get("phases", [])) >= 2
                ),
                "undefined_ptf": sum(1 for r in group if len(r.get("phases", [])) < 2),
            }
        )
    return {"rows": rows, "arc_gaps": arc_gaps(rows), "phase_curves": phase_curves(records)}


def _cell_figures(cells: Mapping[tuple[str, str], float]) -> dict[str, Any]:
    """The rounded cells, per-category Overall and Overall of one row."""
    per_category = {
        c: fmean(cells[(c, m)] for m in METRICS)
        for c in CATEGORIES
        if all((c, m) in cells for m in METRICS)
    }
    total = overall(cells)
    return {
        "cells": {f"{c}.{m}": round(v, 2) for (c, m), v in sorted(cells.items())},
        "category_overall": {c: round(v, 2) for c, v in per_category.items()},
        "overall": None if total is None else round(total, 2),
    }


def per_novel(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The summary of each novel's records on its own (App. L's per-novel breakdown)."""
    novels = sorted({str(r.get("novel", "")) for r in records})
    return {n: summarize([r for r in records if str(r.get("novel", "")) == n]) for n in novels}


def arc_gaps(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per model: Arc Overall minus the best non-Arc mode's Overall (§4.3 claims).

    Rows judged without ref_thought are compared only with each other.
    """
    gaps = []
    models = sorted({(r["model"], r["mode"].endswith(NO_THOUGHT)) for r in rows})
    for model, blind in models:
        mine = [
            r
            for r in rows
            if r["model"] == model
            and r["overall"] is not None
            and r["mode"].endswith(NO_THOUGHT) == blind
        ]
        arc_name = "arc" + NO_THOUGHT if blind else "arc"
        arc = next((r for r in mine if r["mode"] == arc_name), None)
        others = [r for r in mine if r["mode"].removesuffix(NO_THOUGHT) in BASELINES]
        if arc is None or not others:
            continue
        best = max(others, key=lambda r: r["overall"])
        gaps.append(
            {
                "model": model,
                "best_other_mode": best["mode"],
                "gap": round(arc["overall"] - best["overall"], 2),
                "per_category": category_gaps(arc, best),
            }
        )
    return gaps


def category_gaps(arc: Mapping[str, Any], other: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """§4.3 per category: Arc minus the other mode on Overall, PTF and per-phase metrics.

    The per-phase figure is the mean of APF, RPF and RAE.
    """
    gaps: dict[str, dict[str, float]] = {}
    for c in CATEGORIES:
        a, b = arc["cells"], other["cells"]
        keys = [f"{c}.{m}" for m in METRICS]
        if not all(k in a and k in b for k in keys):
            continue
        per_phase = [f"{c}.{m}" for m in PHASE_METRICS]
        gaps[c] = {
            "overall": round(fmean(a[k] for k in keys) - fmean(b[k] for k in keys), 2),
            "ptf": round(a[f"{c}.ptf"] - b[f"{c}.ptf"], 2),
            "per_phase": round(fmean(a[k] for k in per_phase) - fmean(b[k] for k in per_phase), 2),
        }
    return gaps


def phase_curves(records: Iterable[Mapping[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """Per mode: mean per-phase fidelity (mean of APF, RPF, RAE) at each phase index."""
    values: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        for phase in record.get("phases", []):
            if phase.get("scores"):
                score = fmean(phase["scores"][m] for m in PHASE_METRICS)
                values[f"{record['model']} / {mode_label(record)}"][int(phase["phase_idx"])].append(
                    score
                )
    return {
        name: [(k, round(fmean(v), 2)) for k, v in sorted(by_phase.items())]
        for name, by_phase in sorted(values.items())
    }


def tier_lifts(
    records: Sequence[Mapping[str, Any]], central: Iterable[str]
) -> list[dict[str, Any]]:
    """App. M: per model, Arc-over-Vanilla Overall lift for central vs supporting characters.

    ``central`` names the central characters (the paper: 6 of 25, chosen by the authors); every
    other character is supporting. Overall is the mean of the (category x metric) cells both
    modes have in the tier (all 12 when the tier covers every category), so a tier with few
    probes still gets a figure; ``cells`` says how many went in.
    """
    names = {n.casefold() for n in central}
    results = []
    for model in sorted({r["model"] for r in records}):
        entry: dict[str, Any] = {"model": model}
        for tier in ("central", "supporting"):
            mine = [
                r
                for r in records
                if r["model"] == model
                and r.get("judge_include_thought", True)
                and (str(r.get("character", "")).casefold() in names) == (tier == "central")
            ]
            arc = table_cells(r for r in mine if r["mode"] == "arc")
            vanilla = table_cells(r for r in mine if r["mode"] == "vanilla")
            shared = sorted(set(arc) & set(vanilla))
            if not shared:
                continue
            a, v = fmean(arc[k] for k in shared), fmean(vanilla[k] for k in shared)
            entry[tier] = {
                "arc": round(a, 2),
                "vanilla": round(v, 2),
                "lift": round(a - v, 2),
                "cells": len(shared),
                "probes": len({r["probe_id"] for r in mine if r["mode"] == "arc"}),
            }
        if len(entry) > 1:
            results.append(entry)
    return results
