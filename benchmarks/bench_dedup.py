"""Batch de-duplication: precision and recall of the paper's rule and ours on labelled pairs.

Run: uv run python benchmarks/bench_dedup.py [--pairs benchmarks/data/dedup_pairs.csv]

Prints (not asserts) for each rule the confusion counts, precision and recall over the labelled
name pairs (written for this benchmark: reordered names, romanisation variants, relatives who
share a family name, cross-franchise homonyms, rows without a franchise, one franchise under two
titles), and the pairs each rule gets wrong. The alias table maps "Fate/Zero" to
"Fate/stay night", as the paper's hand-crafted alias table would.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import get_args

from personae.memory.characterhub.dedup import DedupRule, NamedRow, duplicates

PAIRS = Path(__file__).parent / "data" / "dedup_pairs.csv"
ALIASES = {"Fate/Zero": "Fate/stay night"}


def load_pairs(path: Path) -> list[tuple[NamedRow, NamedRow, bool, str]]:
    """``(row a, row b, same character?, note)`` per labelled pair."""
    with path.open(encoding="utf-8", newline="") as handle:
        return [
            (
                NamedRow(r["name_a"], r["franchise_a"] or None, r["source_a"] or None),
                NamedRow(r["name_b"], r["franchise_b"] or None, r["source_b"] or None),
                r["same"] == "yes",
                r["note"],
            )
            for r in csv.DictReader(handle)
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    args = parser.parse_args()
    pairs = load_pairs(args.pairs)
    positives = sum(same for _, _, same, _ in pairs)
    print(f"{len(pairs)} labelled pairs, {positives} same character, {len(pairs) - positives} not")
    rule: DedupRule
    for rule in get_args(DedupRule):
        tp = fp = fn = 0
        wrong = []
        for a, b, same, note in pairs:
            merged = duplicates(a, b, rule, ALIASES)
            tp += merged and same
            fp += merged and not same
            fn += same and not merged
            if merged != same:
                wrong.append(
                    f"    {'merged' if merged else 'missed'}: {a.name} / {b.name} ({note})"
                )
        precision = tp / (tp + fp) if tp + fp else float("nan")
        recall = tp / (tp + fn) if tp + fn else float("nan")
        print(
            f"{rule:>8}: precision {precision:.3f}, recall {recall:.3f} (TP {tp}, FP {fp}, FN {fn})"
        )
        print("\n".join(wrong))


if __name__ == "__main__":
    main()
