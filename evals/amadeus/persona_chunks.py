"""AMADEUS's chunk analyses: similarity distribution (Table 1), chunk usage and GS failure (Table 3, Fig. 1).

- **Similarity distribution** (Table 1): for each character, the cosine similarities between
  each question and the chunks retrieved for it (top ``k``, the knowledge retrieval); μ_c and
  σ²_c are their mean and (population) variance; the table reports Σ_c μ_c and Σ_c σ²_c per
  splitter. A higher sum of means and a lower sum of variances is what ACTS improves. No model.
- **Chunk usage rate** (Table 3): per character, the distinct chunks that appeared in a final
  context (knowledge ∪ Guided Selection slot) over the character's chunks, averaged over
  characters; **GS failure** is the share of queries where the fallback fired; **Fig. 1** is the
  histogram of how many times each chunk was used. Read from the ``results.jsonl`` of
  ``amadeus eval-qa`` or ``amadeus eval-personality``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from personae.errors import InputError
from personae.files import read_jsonl
from personae.memory.amadeus.persona_store import PersonaIndex


@dataclass(frozen=True)
class SimilarityRow:
    """Table 1 figures of one splitter."""

    splitter: str
    sum_mean: float
    """Σ_c μ_c over characters."""
    sum_variance: float
    """Σ_c σ²_c over characters."""
    per_character: dict[str, tuple[float, float]]
    """(μ_c, σ²_c) per character."""


def mean_variance(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population variance (0, 0 for no values)."""
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    return mean, sum((v - mean) ** 2 for v in values) / len(values)


def similarity_row(
    splitter: str,
    indexes: Mapping[str, PersonaIndex],
    questions: Mapping[str, Sequence[str]],
    k: int,
) -> SimilarityRow:
    """Σμ / Σσ² of one splitter: each character's questions against its own index (blocking)."""
    per_character = {}
    for character, index in indexes.items():
        values = [c.similarity for q in questions[character] for c in index.query(q, k)]
        per_character[character] = mean_variance(values)
    return SimilarityRow(
        splitter=splitter,
        sum_mean=sum(m for m, _ in per_character.values()),
        sum_variance=sum(v for _, v in per_character.values()),
        per_character=per_character,
    )


def read_results(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Query records (with chunk ids) from ``results.jsonl`` files of either evaluation."""
    records = []
    for path in paths:
        if not path.is_file():
            raise InputError(
                f"results file {path} not found",
                "pass a results.jsonl of amadeus eval-qa or amadeus eval-personality",
            )
        records += [r for r in read_jsonl(path) if "knowledge" in r and "gs_failed" in r]
    if not records:
        raise InputError(
            "the results files hold no answered queries",
            "run personae amadeus eval-qa or amadeus eval-personality first",
        )
    return records


def _ids(chunks: Sequence[Any]) -> list[str]:
    return [str(c["id"]) if isinstance(c, Mapping) else str(c) for c in chunks]


def used_chunks(record: Mapping[str, Any]) -> set[str]:
    """Chunk ids in a query's final context: knowledge ∪ slot."""
    return set(_ids(record.get("knowledge", []))) | set(_ids(record.get("selected", [])))


def indexed_name(record: Mapping[str, Any]) -> str:
    """The character's name in the persona index (personality records carry it separately)."""
    return str(record.get("indexed_as") or record["character"])


def chunk_usage(
    records: Sequence[Mapping[str, Any]], chunk_counts: Mapping[str, int]
) -> dict[str, Any]:
    """Usage rate per character and averaged, GS failure rate, and the Fig. 1 histogram."""
    by_character: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_character.setdefault(indexed_name(record), []).append(record)
    rates = {}
    uses: Counter[str] = Counter()
    unused = 0
    for character, rows in by_character.items():
        seen: set[str] = set()
        for row in rows:
            chunks = used_chunks(row)
            seen |= chunks
            uses.update(chunks)
        total = chunk_counts.get(character, 0)
        rates[character] = len(seen) / total if total else 0.0
        unused += max(0, total - len(seen))
    histogram = Counter(uses.values())
    if unused:
        histogram[0] += unused
    return {
        "usage_rate": sum(rates.values()) / len(rates) if rates else 0.0,
        "per_character": rates,
        "gs_failure_rate": sum(bool(r["gs_failed"]) for r in records) / len(records),
        "queries": len(records),
        "use_histogram": {str(times): histogram[times] for times in sorted(histogram)},
    }


def render_report(summary: Mapping[str, Any]) -> str:
    """Markdown in the layout of Tables 1 and 3 and Fig. 1 (as a table)."""
    lines = ["# Persona chunk analyses", ""]
    similarity = summary.get("similarity")
    if similarity:
        lines += [
            f"## Similarity distribution (Table 1; {summary['embedding']}, top-{summary['k']})",
            "",
            "| Splitter | Σμ ↑ | Σσ² ↓ |",
            "|---|---|---|",
        ]
        lines += [
            f"| {row['splitter']} | {row['sum_mean']:.4f} | {row['sum_variance']:.4f} |"
            for row in similarity
        ]
    usage = summary.get("usage")
    if usage:
        lines += [
            "",
            "## Chunk usage and Guided Selection failure (Table 3)",
            "",
            "| Queries | Chunk usage rate | GS failure |",
            "|---|---|---|",
            f"| {usage['queries']} | {usage['usage_rate'] * 100:.2f}% | {usage['gs_failure_rate'] * 100:.2f}% |",
            "",
            "## Chunk use counts (Fig. 1)",
            "",
            "| Times used | Chunks |",
            "|---|---|",
        ]
        lines += [f"| {times} | {count} |" for times, count in usage["use_histogram"].items()]
    return "\n".join(lines) + "\n"
