"""AMADEUS's human evaluation (Table 2): the rating sheet export and the reliability arithmetic.

The paper asks 11 evaluators to rate, on a 5-point Likert scale, whether the attributes the
Attribute Extractor produced can reasonably be inferred from the chunks Guided Selection chose,
for 60 random interview samples each (30 BFI + 30 MBTI). We provide the sheet (random samples
of the personality evaluation's answers, fixed seed) and the figures the table reports from the
returned ratings: μ = E(E(S)), σ = E(σ(S)), Mdn = E(Mdn(S)) (per evaluator, then averaged) and
Cronbach's α over evaluators. We do not provide the evaluators.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from personae.errors import InputError

SHEET_COLUMNS = (
    "sample",
    "character",
    "question",
    "chunks",
    "belief_and_value",
    "psychological_traits",
    "rating",
)


def sample_rows(
    records: Sequence[Mapping[str, Any]], count: int, seed: int = 0
) -> list[dict[str, str]]:
    """``count`` random interview answers that have attributes, as sheet rows (rating empty)."""
    usable = [r for r in records if r.get("kind") == "interview" and r.get("attributes")]
    if not usable:
        raise InputError(
            "the results hold no interview answers with attributes",
            "run personae amadeus eval-personality with --method amadeus first",
        )
    chosen = random.Random(seed).sample(usable, min(count, len(usable)))
    return [
        {
            "sample": str(number),
            "character": str(record["character"]),
            "question": str(record["question"]),
            "chunks": "\n---\n".join(record.get("selected_text") or []),
            "belief_and_value": str(record["attributes"]["belief_and_value"]),
            "psychological_traits": str(record["attributes"]["psychological_traits"]),
            "rating": "",
        }
        for number, record in enumerate(chosen, start=1)
    ]


def cronbach_alpha(ratings: Sequence[Sequence[float]]) -> float:
    """Cronbach's α of a samples × raters matrix: k/(k-1) · (1 - Σ var(rater) / var(totals))."""
    raters = len(ratings[0]) if ratings else 0
    if raters < 2 or len(ratings) < 2 or any(len(row) != raters for row in ratings):
        raise InputError(
            "Cronbach's alpha needs at least 2 samples rated by the same 2+ raters",
            "check the ratings sheet",
        )
    columns = [[row[j] for row in ratings] for j in range(raters)]
    totals = [sum(row) for row in ratings]
    total_variance = statistics.variance(totals)
    if total_variance == 0:
        raise InputError(
            "every sample has the same total rating", "alpha is undefined; check the sheet"
        )
    return (
        raters / (raters - 1) * (1 - sum(statistics.variance(c) for c in columns) / total_variance)
    )


def table_2(ratings: Sequence[Sequence[float]]) -> dict[str, float]:
    """μ, σ and Mdn averaged over raters (each rater's over the samples), and Cronbach's α."""
    raters = len(ratings[0])
    columns = [[row[j] for row in ratings] for j in range(raters)]
    return {
        "mean": statistics.fmean(statistics.fmean(c) for c in columns),
        "std": statistics.fmean(statistics.pstdev(c) for c in columns),
        "median": statistics.fmean(statistics.median(c) for c in columns),
        "alpha": cronbach_alpha(ratings),
    }
