"""Benchmark arithmetic over result records: scores, hit rates, reading saved, LLM cost.

Pure functions over the dicts stored in ``results.jsonl`` so the numbers can be recomputed and
tested by hand. Method stats may lack keys (baselines have no bookmarks): a missing counter is
not zero, it is "not applicable", and the derived rate is ``None`` rather than a fake 0 %.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Record = Mapping[str, Any]
"""One line of results.jsonl: artifact, method, character, position, judge, score, stats, …"""

_COUNTERS = ("llm_calls", "input_tokens", "output_tokens")


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class Totals:
    """Running sums over a group of records."""

    n: int = 0
    score_sum: float = 0.0
    reuse: int = 0
    derive: int = 0
    new: int = 0
    has_matching: bool = False
    actions_read: int = 0
    actions_from_scratch: int = 0
    has_reading: bool = False
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTERS, 0))
    judge_calls: int = 0
    judge_tokens: int = 0
    judge_cache_hits: int = 0

    def add(self, record: Record) -> None:
        """Count one result record."""
        stats: Mapping[str, Any] = record.get("stats") or {}
        self.n += 1
        self.score_sum += float(record.get("score", 0))
        if any(key in stats for key in ("reuse", "derive", "new")):
            self.has_matching = True
            self.reuse += int(stats.get("reuse", 0))
            self.derive += int(stats.get("derive", 0))
            self.new += int(stats.get("new", 0))
        if "actions_from_scratch" in stats:
            self.has_reading = True
            self.actions_read += int(stats.get("actions_read", 0))
            self.actions_from_scratch += int(stats["actions_from_scratch"])
        for key in _COUNTERS:
            self.counters[key] += int(stats.get(key, 0))
        judge_usage: Mapping[str, Any] = record.get("judge_usage") or {}
        self.judge_calls += int(judge_usage.get("llm_calls", 0))
        self.judge_cache_hits += int(judge_usage.get("cache_hits", 0))
        self.judge_tokens += int(judge_usage.get("input_tokens", 0)) + int(
            judge_usage.get("output_tokens", 0)
        )

    def summary(self) -> dict[str, Any]:
        """The JSON-friendly figures of this group."""
        questions = self.reuse + self.derive + self.new
        read_share = _ratio(self.actions_read, self.actions_from_scratch)
        matching = self.has_matching and questions > 0
        reading = self.has_reading and self.actions_from_scratch > 0
        return {
            "n": self.n,
            "score": self.score_sum / self.n if self.n else None,
            "questions": questions if self.has_matching else None,
            "reuse": self.reuse if self.has_matching else None,
            "derive": self.derive if self.has_matching else None,
            "new": self.new if self.has_matching else None,
            "hit_rate": _ratio(self.reuse + self.derive, questions) if matching else None,
            "reuse_rate": _ratio(self.reuse, questions) if matching else None,
            "derive_rate": _ratio(self.derive, questions) if matching else None,
            "actions_read": self.actions_read if self.has_reading else None,
            "actions_from_scratch": self.actions_from_scratch if self.has_reading else None,
            "read_share": read_share if reading else None,
            "saved": 1 - read_share if reading and read_share is not None else None,
            **self.counters,
            "tokens": self.counters["input_tokens"] + self.counters["output_tokens"],
            "judge_llm_calls": self.judge_calls,
            "judge_tokens": self.judge_tokens,
            "judge_cache_hits": self.judge_cache_hits,
        }


def totals_of(records: Iterable[Record]) -> Totals:
    """Sum ``records`` into one :class:`Totals`."""
    totals = Totals()
    for record in records:
        totals.add(record)
    return totals


BENCHMARKS = {"action": "Fandom", "utterance": "Bandori"}
"""Acting format → the paper's benchmark name (Fine-grained Fandom / Bandori Conversational)."""


def benchmark_of(record: Record) -> str:
    """``Fandom`` or ``Bandori``: the benchmark a record's artifact belongs to (by its format)."""
    return BENCHMARKS.get(str(record.get("format") or "action"), "Fandom")


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


InstanceKey = tuple[str, str, int]
"""An instance, whatever the method: (artifact, character, position)."""

OWN_FIGURES = ("n", "average_score", "fandom_average", "bandori_average", "pooled_score")
"""A method's figures over every instance it finished, kept beside the shared-instance ones."""


def instance_key(record: Record) -> InstanceKey:
    """The instance a record answers, the same for every method."""
    return (str(record["artifact"]), str(record["character"]), int(record["position"]))


def shared_instances(records: Iterable[Record]) -> set[InstanceKey]:
    """The instances every method of ``records`` finished: the set Table 2 rows compare.

    A failed instance is left out of its method's results; averaging each method over what it
    finished would compare different instance sets (vanilla on 1 of 4 Haruhi instances against
    bookmarks on 3), so the table's default is the instances all of them finished.
    """
    finished: dict[str, set[InstanceKey]] = {}
    for record in records:
        finished.setdefault(str(record["method"]), set()).add(instance_key(record))
    sets = list(finished.values())
    return set.intersection(*sets) if sets else set()


def summarize(records: Iterable[Record]) -> dict[str, Any]:
    """Table 2 figures over the instances every method finished, each method's own beside.

    Every figure (``artifacts``, ``methods``) is computed over :func:`shared_instances`, so the
    rows compare one instance set; ``methods[m]["own"]`` and ``artifacts[a][m]["own"]`` hold the
    same averages over every instance ``m`` finished, with ``n`` and the degraded in-step
    answers of those steps. ``shared_instances`` and ``instances_finished`` count both sets.
    """
    records = list(records)
    shared = shared_instances(records)
    summary = _summarize([r for r in records if instance_key(r) in shared])
    own = _summarize(records)
    for method, figures in own["methods"].items():
        mine = [r for r in records if r["method"] == method]
        summary["methods"].setdefault(method, _no_figures())["own"] = {
            **{key: figures[key] for key in OWN_FIGURES},
            "degraded_answers": sum(int((r.get("stats") or {}).get("degraded", 0)) for r in mine),
        }
    for artifact, methods in own["artifacts"].items():
        for method, figures in methods.items():
            if method in summary["artifacts"].get(artifact, {}):
                own_cell = {"n": figures["n"], "score": figures["score"]}
                summary["artifacts"][artifact][method]["own"] = own_cell
    summary["shared_instances"] = len(shared)
    summary["instances_finished"] = len({instance_key(r) for r in records})
    return summary


def _no_figures() -> dict[str, Any]:
    """A method with no shared instance: counters zero, every average ``None``."""
    figures = totals_of([]).summary()
    figures["pooled_score"] = figures.pop("score")
    figures["average_score"] = None
    for bench in BENCHMARKS.values():
        figures[f"{bench.lower()}_average"] = None
    return figures


def _summarize(records: list[Record]) -> dict[str, Any]:
    """Figures per artifact × method (with per-character detail) and per method overall.

    Scores follow the paper's Table 2: a character's score is the mean over its instances, an
    artifact's ``score`` the unweighted mean of its characters' scores (Poppin'Party's five
    character scores average to its table value; pooling instances would weight talkative
    characters more), and a method's ``fandom_average`` / ``bandori_average`` the mean of its
    artifact scores in that benchmark (the "Avg." columns). ``pooled_score`` (mean over every
    instance) is given beside them, labelled, for readers who want the instance-weighted view.
    """
    groups: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        groups.setdefault((str(record["artifact"]), str(record["method"])), []).append(record)
    artifacts: dict[str, dict[str, Any]] = {}
    benchmarks: dict[str, str] = {}
    by_method: dict[str, list[Record]] = {}
    for (artifact, method), rows in sorted(groups.items()):
        figures = totals_of(rows).summary()
        characters: dict[str, list[Record]] = {}
        for row in rows:
            characters.setdefault(str(row["character"]), []).append(row)
        figures["characters"] = {
            name: totals_of(mine).summary() for name, mine in sorted(characters.items())
        }
        figures["pooled_score"] = figures["score"]
        figures["score"] = _mean(
            [c["score"] for c in figures["characters"].values() if c["score"] is not None]
        )
        artifacts.setdefault(artifact, {})[method] = figures
        benchmarks[artifact] = benchmark_of(rows[0])
        by_method.setdefault(method, []).extend(rows)
    methods: dict[str, Any] = {}
    for method, rows in sorted(by_method.items()):
        scores = {
            a: artifacts[a][method]["score"]
            for a in artifacts
            if method in artifacts[a] and artifacts[a][method]["score"] is not None
        }
        figures = totals_of(rows).summary()
        figures["pooled_score"] = figures.pop("score")
        figures["average_score"] = _mean(list(scores.values()))
        for bench in BENCHMARKS.values():
            mine = [score for a, score in scores.items() if benchmarks[a] == bench]
            figures[f"{bench.lower()}_average"] = _mean(mine)
        methods[method] = figures
    return {"artifacts": artifacts, "benchmarks": benchmarks, "methods": methods}


def score_table(
    summary: Mapping[str, Any], method_order: Sequence[str] = (), benchmark: str | None = None
) -> tuple[list[str], list[tuple[str, list[float | None], float | None]]]:
    """Table 2 layout: artifact columns, and one row per method of (scores, average).

    With ``benchmark`` (``Fandom`` / ``Bandori``), only that benchmark's artifacts and its
    average; without, every artifact and the mean of all artifact scores.
    """
    kinds: Mapping[str, str] = summary.get("benchmarks", {})
    artifacts = sorted(
        a for a in summary["artifacts"] if benchmark is None or kinds.get(a) == benchmark
    )
    present = [
        m for m in summary["methods"] if any(m in summary["artifacts"][a] for a in artifacts)
    ]
    ordered = [m for m in method_order if m in present] + [
        m for m in present if m not in method_order
    ]
    key = "average_score" if benchmark is None else f"{benchmark.lower()}_average"
    rows = []
    for method in ordered:
        cells = [
            summary["artifacts"][a][method]["score"] if method in summary["artifacts"][a] else None
            for a in artifacts
        ]
        rows.append((method, cells, summary["methods"][method].get(key)))
    return artifacts, rows


HIT_RATE_WINDOW = 20
"""Steps each point of the hit-rate plot covers (a moving window over the steps)."""


def hit_rate_curve(
    records: Iterable[Record], window: int = HIT_RATE_WINDOW
) -> list[tuple[int, float]]:
    """Hit rate (reuse + derive over questions) of the last ``window`` steps, by position.

    A moving window, not a running total: the paper's Figure 3 shows the hit rate fluctuating
    along the storyline ("when the story moves to a new situation, more new bookmarks are
    required"), which a cumulative rate flattens. Records of every character are merged by
    position, as the bank is shared along the story. Steps with no question are left out.
    """
    rows = [
        r
        for r in sorted(
            (r for r in records if "reuse" in (r.get("stats") or {})),
            key=lambda r: (int(r["position"]), str(r["character"])),
        )
        if _questions(r)
    ]
    curve: list[tuple[int, float]] = []
    for end in range(len(rows)):
        recent = rows[max(0, end - window + 1) : end + 1]
        hits = sum(_hits(r) for r in recent)
        curve.append((int(rows[end]["position"]), hits / sum(_questions(r) for r in recent)))
    return curve


def overall_hit_rate(records: Iterable[Record]) -> float | None:
    """Reuse + derive over all questions (the figure a legend quotes); ``None``: no question."""
    rows = [r for r in records if "reuse" in (r.get("stats") or {})]
    questions = sum(_questions(r) for r in rows)
    return sum(_hits(r) for r in rows) / questions if questions else None


def _hits(record: Record) -> int:
    stats = record["stats"]
    return int(stats.get("reuse", 0)) + int(stats.get("derive", 0))


def _questions(record: Record) -> int:
    return _hits(record) + int(record["stats"].get("new", 0))
