"""PTF under perturbation (ARCANE App. N, Table 8): re-judge saved trajectories, shuffled.

Why: PTF is one judge call over N (reference, response) blocks, so it could be a re-summary of
per-phase fidelity or a reading of listing order. App. N re-calls the trajectory judge (T36) on
perturbed copies of each saved (probe, model, mode) trajectory under four conditions:

- ``orig``: the trajectory as evaluated, judged again (test-retest noise);
- ``shuffle_response``: the model responses permuted across the phase blocks, references fixed;
- ``reverse_response``: the model responses reversed, references fixed;
- ``block_shuffle``: whole (reference, response) blocks shuffled together, each pair intact
  (its ``[PHASE <idx>]`` header travels with it), only the listing order changes.

The sample is App. N's: per model, ``sample`` probes (75 in the paper) under one mode (Arc),
with N >= 3 judged phases, stratified across novels (round-robin over novels, a SHA-1 order of
probe ids inside each). Permutations are seeded by SHA-1 of the probe id and condition, so a
rerun builds the same prompts, and never the identity (a "shuffle" that changes nothing would
dilute the delta). ``orig`` is a fresh judge call (its cache name is marked ``#retest`` so the
cached answer of the main run is not reused; App. N reads it as test-retest noise); its
difference to the recorded PTF is reported too. Results go to ``OUT/perturb.jsonl`` (a rerun
skips done items) and the report reads that file: per model and condition, the mean sub-scores
and the paired deltas vs ``orig`` (Table 8's layout).

No graph: this re-judges saved results, one T36 call per (probe, condition), with nothing to
checkpoint beyond the JSONL itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import correlation, fmean
from typing import Any, Literal

from personae.agents.arcane import judges
from personae.errors import InputError
from personae.evals.arcane.metrics import mode_label, probe_scores
from personae.fanout import gather_all
from personae.files import append_jsonl, read_jsonl
from personae.graphs.arcane.context import ArcaneContext
from personae.llm import InvalidAnswerError, call_structured
from personae.memory.arcane.novel_store import open_novel
from personae.memory.arcane.records import ProbeRecord, load_probes

Condition = Literal["orig", "shuffle_response", "reverse_response", "block_shuffle"]
CONDITIONS: tuple[Condition, ...] = (
    "orig",
    "shuffle_response",
    "reverse_response",
    "block_shuffle",
)
CONDITION_FLAGS: dict[str, Condition] = {
    "shuffle": "shuffle_response",
    "reverse": "reverse_response",
    "block": "block_shuffle",
}
"""``--condition`` names (spec §4.8) -> App. N's condition names."""
SUB_SCORES = ("ptf_alignment", "ptf_direction", "ptf_shape")
PERTURB = "perturb.jsonl"
MIN_PHASES = 3
"""App. N samples trajectories with N >= 3 phases."""

Block = tuple[int, str, str | None, str, str]
"""(phase_idx, gt_action, gt_speech, gt_thought, model response): one T36 phase block."""


def permutation(n: int, seed: str) -> list[int]:
    """A seeded permutation of range(n) that is not the identity (for n >= 2)."""
    order = list(range(n))
    if n < 2:
        return order
    rng = random.Random(int(hashlib.sha1(seed.encode()).hexdigest(), 16))
    while order == sorted(order):
        rng.shuffle(order)
    return order


def perturb(blocks: Sequence[Block], condition: Condition, seed: str) -> list[Block]:
    """The T36 blocks of ``condition`` (see the module docstring)."""
    blocks = list(blocks)
    if condition == "orig":
        return blocks
    if condition == "block_shuffle":
        return [blocks[i] for i in permutation(len(blocks), f"{seed}|{condition}")]
    responses = [b[4] for b in blocks]
    if condition == "reverse_response":
        moved = responses[::-1]
    else:
        moved = [responses[i] for i in permutation(len(blocks), f"{seed}|{condition}")]
    return [(*b[:4], r) for b, r in zip(blocks, moved, strict=True)]


def parse_conditions(names: Sequence[str]) -> list[Condition]:
    """``orig`` plus the ``--condition`` values (default all three); one-line error otherwise."""
    chosen: list[Condition] = ["orig"]
    for name in names or list(CONDITION_FLAGS):
        for part in (p.strip() for p in name.split(",")):
            condition = CONDITION_FLAGS.get(part) or (part if part in CONDITIONS else None)
            if condition is None:
                raise InputError(f"unknown condition {part!r}", f"use {', '.join(CONDITION_FLAGS)}")
            if condition not in chosen:
                chosen.append(condition)
    return chosen


def _order_key(probe_id: str) -> str:
    return hashlib.sha1(probe_id.encode()).hexdigest()


def sample(
    records: Sequence[Mapping[str, Any]], mode: str, per_model: int, include_thought: bool = True
) -> list[dict[str, Any]]:
    """App. N's sample: per model, ``per_model`` trajectories of ``mode`` with >= 3 phases.

    Stratified across novels: round-robin over the novels (sorted), each novel's probes in
    SHA-1 order of their ids. Only trajectories the main run judged (PTF present) with the
    same judge variant (with or without ref_thought) qualify, so each appears once.
    """
    by_model: dict[str, dict[str, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        if record.get("mode") != mode or record.get("ptf") is None:
            continue
        if record.get("judge_include_thought", True) != include_thought:
            continue
        if len(record.get("phases", [])) < MIN_PHASES:
            continue
        by_model[record["model"]][record["novel"]].append(record)
    chosen: list[dict[str, Any]] = []
    for model in sorted(by_model):
        queues = [
            sorted(group, key=lambda r: _order_key(r["probe_id"]))
            for _, group in sorted(by_model[model].items())
        ]
        taken = 0
        while taken < per_model and any(queues):
            for queue in queues:
                if queue and taken < per_model:
                    chosen.append(dict(queue.pop(0)))
                    taken += 1
    return chosen


def blocks_of(record: Mapping[str, Any], probe: ProbeRecord) -> list[Block]:
    """The T36 blocks of a saved trajectory: the probe's references, the saved responses."""
    references = {p.phase_idx: p for p in probe.phase_responses}
    blocks: list[Block] = []
    for phase in record["phases"]:
        ref = references.get(int(phase["phase_idx"]))
        if ref is None:
            raise InputError(
                f"probe {probe.probe_id} has no phase {phase['phase_idx']} any more",
                "rerun personae arcane eval on the current probes",
            )
        blocks.append(
            (ref.phase_idx, ref.gt_action, ref.gt_speech, ref.gt_thought, phase["response"])
        )
    return blocks


def load_probe_index(data_dir: Path, novels: set[str]) -> dict[str, ProbeRecord]:
    """Every probe of the given novels by id (blocking)."""
    index: dict[str, ProbeRecord] = {}
    for book in sorted(novels):
        novel = open_novel(data_dir, book)
        index.update({p.probe_id: p for p in load_probes(novel.folder)})
    return index


def item_key(row: Mapping[str, Any]) -> str:
    """Resume key of one re-judged (trajectory, condition)."""
    return "|".join(
        str(row[k]) for k in ("probe_id", "mode", "model", "judge", "condition", "include_thought")
    )


def done_keys(out: Path) -> set[str]:
    """Keys already in ``OUT/perturb.jsonl``."""
    keys = set()
    for row in read_jsonl(out / PERTURB):
        try:
            keys.add(item_key(row))
        except KeyError:
            continue
    return keys


async def rejudge(
    *,
    records: Sequence[Mapping[str, Any]],
    probes: Mapping[str, ProbeRecord],
    conditions: Sequence[Condition],
    context: ArcaneContext,
    out: Path,
    judge_model: str = "",
    include_thought: bool = True,
    scale: int = 100,
    concurrency: int = 8,
) -> dict[str, int]:
    """Judge every (record, condition) not yet in perturb.jsonl; returns counts.

    ``judge_model`` empty: each record's own judge (the one that scored the main run).
    """
    done = done_keys(out)
    gate = asyncio.Semaphore(max(1, concurrency))
    counts = {"judged": 0, "skipped": 0, "missing": 0, "llm_calls": 0}

    async def one(record: Mapping[str, Any], condition: Condition) -> None:
        probe = probes[record["probe_id"]]
        judge = judge_model or record["judge"]
        row: dict[str, Any] = {
            "probe_id": record["probe_id"],
            "novel": record["novel"],
            "probe_type": record["probe_type"],
            "mode": record["mode"],
            "model": record["model"],
            "judge": judge,
            "condition": condition,
            "include_thought": include_thought,
        }
        if item_key(row) in done:
            counts["skipped"] += 1
            return
        blocks = perturb(blocks_of(record, probe), condition, record["probe_id"])
        messages = judges.trajectory_judge_messages(
            scenario=probe.scenario,
            question=probe.question,
            phases=blocks,
            scale=scale,
            include_thought=include_thought,
        )
        model, name = context.judge_for(judge)
        if condition == "orig":
            name += "#retest"  # a fresh call, not the main run's cached answer
        async with gate:
            try:
                answer, usage = await call_structured(
                    model,
                    judges.trajectory_judgement_schema(scale),
                    messages,
                    store=context.cache(),
                    model_name=name,
                )
            except InvalidAnswerError:  # still invalid after retries: missing, counted
                counts["missing"] += 1
                return
        counts["judged"] += 1
        counts["llm_calls"] += usage.calls
        row |= {
            "listing": [b[0] for b in blocks],
            "responses_from": [_source_phase(record, b[4]) for b in blocks],
            "scores": answer.scores.model_dump(),
            "ptf": answer.ptf(),
            "recorded_ptf": (record.get("ptf") or {}).get("ptf"),
        }
        await asyncio.to_thread(append_jsonl, out / PERTURB, row)

    await gather_all(one(r, c) for r in records for c in conditions)
    return counts


def _source_phase(record: Mapping[str, Any], response: str) -> int | None:
    """The phase whose saved response this is (for the record; equal texts: the first)."""
    for phase in record["phases"]:
        if phase["response"] == response:
            return int(phase["phase_idx"])
    return None


def read_perturb(out: Path) -> list[dict[str, Any]]:
    """The rows of perturb.jsonl (a torn line is skipped)."""
    return read_jsonl(out / PERTURB)


def summarize_perturb(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (model, mode, judge) and condition: n, mean sub-scores and PTF, paired deltas vs orig.

    Deltas are paired: over the probes judged under both the condition and ``orig``. The
    ``orig`` row also carries the mean difference to the recorded (main-run) PTF.
    """
    groups: dict[tuple[str, str, str], dict[str, dict[str, Mapping[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for row in rows:
        judge = row["judge"] if row.get("include_thought", True) else row["judge"] + " [no-thought]"
        key = (row["model"], row["mode"], judge)
        groups[key][row["condition"]][row["probe_id"]] = row
    table = []
    for (model, mode, judge), by_condition in sorted(groups.items()):
        base = by_condition.get("orig", {})
        for condition in CONDITIONS:
            items = by_condition.get(condition)
            if not items:
                continue
            entry: dict[str, Any] = {
                "model": model,
                "mode": mode,
                "judge": judge,
                "condition": condition,
                "probes": len(items),
                **{s: round(fmean(r["scores"][s] for r in items.values()), 2) for s in SUB_SCORES},
                "ptf": round(fmean(r["ptf"] for r in items.values()), 2),
            }
            paired = [p for p in items if p in base]
            if condition == "orig":
                recorded = [r for r in items.values() if r.get("recorded_ptf") is not None]
                if recorded:
                    entry["retest_delta"] = round(
                        fmean(r["ptf"] - r["recorded_ptf"] for r in recorded), 2
                    )
            elif paired:
                entry["delta"] = {
                    s: round(fmean(items[p]["scores"][s] - base[p]["scores"][s] for p in paired), 2)
                    for s in SUB_SCORES
                } | {"ptf": round(fmean(items[p]["ptf"] - base[p]["ptf"] for p in paired), 2)}
                entry["paired"] = len(paired)
            table.append(entry)
    return table


def _ranks(values: Sequence[float]) -> list[float]:
    """Average ranks (ties share the mean of their positions), 1-based."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start : end + 1]:
            ranks[i] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return round(correlation(x, y), 3)


def ptf_correlations(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """App. N's convergent-validity check: per (model, mode), PTF vs the per-phase average.

    The per-phase average of a probe is (APF + RPF + RAE) / 3 over its phase means; Pearson and
    Spearman (Pearson on average ranks) over the probes with both. Undefined (None) below three
    probes or without variance.
    """
    pairs: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for record in records:
        scores = probe_scores(record)
        if "ptf" in scores and all(m in scores for m in ("apf", "rpf", "rae")):
            per_phase = (scores["apf"] + scores["rpf"] + scores["rae"]) / 3
            pairs[(record["model"], mode_label(record))].append((scores["ptf"], per_phase))
    cells = []
    for (model, mode), values in sorted(pairs.items()):
        ptf, phase = [v[0] for v in values], [v[1] for v in values]
        cells.append(
            {
                "model": model,
                "mode": mode,
                "probes": len(values),
                "pearson": _pearson(ptf, phase),
                "spearman": _pearson(_ranks(ptf), _ranks(phase)),
            }
        )
    return cells


def markdown(
    table: Sequence[Mapping[str, Any]], correlations: Sequence[Mapping[str, Any]] = ()
) -> str:
    """Table 8's layout: per model, each condition's Align / Dir / Shape / Avg, then deltas.

    With ``correlations``, App. N's PTF vs per-phase table follows.
    """
    lines = ["# PTF under perturbation (ARCANE App. N, Table 8)", ""]
    models = sorted({(t["model"], t["mode"], t["judge"]) for t in table})
    for model, mode, judge in models:
        mine = [t for t in table if (t["model"], t["mode"], t["judge"]) == (model, mode, judge)]
        lines += [
            f"## {model} / {mode} (judge {judge})",
            "",
            "| Condition | N | Align | Dir | Shape | Avg |",
            "|---|---|---|---|---|---|",
        ]
        for t in mine:
            lines.append(
                f"| {t['condition']} | {t['probes']} | {t['ptf_alignment']:.1f} | "
                f"{t['ptf_direction']:.1f} | {t['ptf_shape']:.1f} | {t['ptf']:.1f} |"
            )
        for t in mine:
            if "delta" in t:
                d = t["delta"]
                lines.append(
                    f"| Δ {t['condition']} | {t['paired']} | {d['ptf_alignment']:+.1f} | "
                    f"{d['ptf_direction']:+.1f} | {d['ptf_shape']:+.1f} | {d['ptf']:+.1f} |"
                )
        retest = next((t.get("retest_delta") for t in mine if t["condition"] == "orig"), None)
        if retest is not None:
            lines += [
                "",
                f"orig minus the recorded PTF of the main run (test-retest): {retest:+.2f}",
            ]
        lines.append("")
    if correlations:
        lines += [
            "## PTF vs per-phase average (App. N, convergent but not redundant)",
            "",
            "| Model | Mode | Probes | Pearson | Spearman |",
            "|---|---|---|---|---|",
        ]
        for c in correlations:
            pearson = "–" if c["pearson"] is None else f"{c['pearson']:.2f}"
            spearman = "–" if c["spearman"] is None else f"{c['spearman']:.2f}"
            lines.append(f"| {c['model']} | {c['mode']} | {c['probes']} | {pearson} | {spearman} |")
        lines.append("")
    return "\n".join(lines)
