"""Personality scoring and metrics of the InCharacter protocol as AMADEUS reports them (Tables 4-5).

Pure functions, no model: batch splitting for expert rating, option conversion with reverse
keying by category, dimension scores, type codes, and the metrics the paper prints:

- **Accuracy** = dimension-level accuracy, 1 - mismatched letters / labelled letters (a label
  ``X``, neutral, is skipped, as InCharacter does). The tables' parentheses count mismatches.
- **Avg F1-Score** = the mean over dimensions of the 2-class macro-F1 of that dimension's
  letters across characters. Recomputing it from the printed types reproduces five of the six
  printed values exactly (the AMADEUS MBTI row recomputes to 0.8394, not 0.8244: a typo).
- Extras InCharacter reports: full-type accuracy (every labelled letter right), and the mean
  squared / absolute error of scores against label scores when those are known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from personae.evals.amadeus.personality_data import Item, Questionnaire

T = TypeVar("T")


def split_batches(items: Sequence[T], n: int = 4) -> list[list[T]]:
    """InCharacter's ``split_list``: groups of ``n``, the last topped up to ``n - 1``.

    Fewer than ``2 * (n - 1)`` items make one batch; otherwise the short last group takes one
    item from each of the first groups until it has ``n - 1`` (9 → 3, 3, 3; 13 → 3, 3, 4, 3).
    """
    if len(items) < 2 * (n - 1):
        return [list(items)] if items else []
    groups = [list(items[start : start + n]) for start in range(0, len(items), n)]
    last = groups[-1]
    donor = 0
    while len(last) < n - 1:
        last.insert(0, groups[donor].pop())
        donor += 1
    return groups


def option_score(item: Item, choice: float | None, questionnaire: Questionnaire) -> float:
    """One item's score from an option-conversion choice: refusal → midpoint, reverse flip.

    16Personalities choices (1-7) are scaled to 0-100 as (s - 1) / 6 x 100.
    """
    low, high = questionnaire.scale
    value = (low + high) / 2 if choice is None else float(choice)
    if item.reverse:
        value = low + high - value
    if questionnaire.kind == "16Personalities":
        return (value - low) / (high - low) * 100
    return value


def dimension_scores(
    questionnaire: Questionnaire, per_item: Mapping[str, float]
) -> dict[str, float]:
    """Mean item score per dimension (option conversion)."""
    scores = {}
    for dimension in questionnaire.dimensions:
        values = [per_item[i.id] for i in questionnaire.by_dimension(dimension) if i.id in per_item]
        if values:
            scores[dimension] = sum(values) / len(values)
    return scores


def letters_of(questionnaire: Questionnaire, scores: Mapping[str, float]) -> dict[str, str]:
    """Letter per dimension: the high letter when the score is strictly above the midpoint."""
    letters = {}
    for dimension, score in scores.items():
        high, low = questionnaire.letters(dimension)
        letters[dimension] = high if score > questionnaire.midpoint else low
    return letters


def mismatches(predicted: Mapping[str, str], label: Mapping[str, str]) -> tuple[int, int]:
    """(mismatched letters, labelled letters) of one character; ``X`` labels are skipped."""
    counted = [d for d, letter in label.items() if letter != "X" and d in predicted]
    return sum(predicted[d] != label[d] for d in counted), len(counted)


def macro_f1(truth: Sequence[str], predicted: Sequence[str]) -> float:
    """Macro-F1 over the classes present in ``truth`` or ``predicted`` (scikit-learn's rule)."""
    classes = sorted(set(truth) | set(predicted))
    if not classes:
        return 0.0
    total = 0.0
    for cls in classes:
        tp = sum(t == cls and p == cls for t, p in zip(truth, predicted, strict=True))
        fp = sum(t != cls and p == cls for t, p in zip(truth, predicted, strict=True))
        fn = sum(t == cls and p != cls for t, p in zip(truth, predicted, strict=True))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        total += 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return total / len(classes)


@dataclass(frozen=True)
class TypeMetrics:
    """The paper's Accuracy and Avg F1-Score, plus InCharacter's extras."""

    accuracy: float
    """Dimension-level accuracy over labelled letters (0-1)."""
    avg_f1: float
    """Mean over dimensions of the 2-class macro-F1 (0-1)."""
    full_accuracy: float
    """Share of characters with every labelled letter right (0-1)."""
    per_dimension: dict[str, float]
    """Accuracy per dimension (0-1)."""
    mismatches: dict[str, int]
    """Mismatched letters per character (the tables' parentheses)."""
    characters: int
    """Characters with at least one labelled letter."""


def type_metrics(
    dimensions: Sequence[str],
    predicted: Mapping[str, Mapping[str, str]],
    labels: Mapping[str, Mapping[str, str]],
) -> TypeMetrics:
    """Metrics over the characters that have both a prediction and a label."""
    names = [c for c in predicted if c in labels and any(v != "X" for v in labels[c].values())]
    missed = {c: mismatches(predicted[c], labels[c]) for c in names}
    wrong = sum(m for m, _ in missed.values())
    counted = sum(n for _, n in missed.values())
    per_dimension: dict[str, float] = {}
    f1s = []
    for dimension in dimensions:
        pairs = [
            (labels[c][dimension], predicted[c][dimension])
            for c in names
            if labels[c].get(dimension, "X") != "X" and dimension in predicted[c]
        ]
        if pairs:
            per_dimension[dimension] = sum(t == p for t, p in pairs) / len(pairs)
            f1s.append(macro_f1([t for t, _ in pairs], [p for _, p in pairs]))
    return TypeMetrics(
        accuracy=1 - wrong / counted if counted else 0.0,
        avg_f1=sum(f1s) / len(f1s) if f1s else 0.0,
        full_accuracy=sum(m == 0 for m, _ in missed.values()) / len(names) if names else 0.0,
        per_dimension=per_dimension,
        mismatches={c: m for c, (m, _) in missed.items()},
        characters=len(names),
    )


def code_letters(code: str, dimensions: Sequence[str]) -> dict[str, str]:
    """``{dimension: letter}`` of a printed code such as ``ENFP`` or ``SCUAI``."""
    return dict(zip(dimensions, code.strip().upper(), strict=True))
