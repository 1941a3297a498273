"""`personae amadeus eval-human`: the AMADEUS human-evaluation sheet and its figures (Table 2).

``--export SHEET.csv --results DIR/results.jsonl`` writes random interview samples (Guided
Selection chunks and the extracted attributes, ``--samples`` per sheet, ``--seed``) for
evaluators to rate 1-5; ``--ratings RATINGS.csv`` (columns ``sample`` then one column per
evaluator) prints μ, σ, Mdn and Cronbach's α as Table 2 reports them. Reads no environment.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.errors import InputError


def register(commands: Any) -> None:
    """Add ``amadeus eval-human``."""
    parser = commands.add_parser(
        "eval-human", help="human-evaluation sheet and Cronbach's alpha (AMADEUS Table 2)"
    )
    parser.add_argument("--export", type=Path, help="write a rating sheet (CSV) here")
    parser.add_argument("--results", type=Path, help="results.jsonl of amadeus eval-personality")
    parser.add_argument("--samples", type=int, default=60, help="samples on the sheet")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument(
        "--ratings", type=Path, help="returned ratings CSV: sample, rater1, rater2..."
    )
    parser.set_defaults(handler=run)


def _ratings(path: Path) -> list[list[float]]:
    from personae.files import read_csv, require_file

    require_file(path, "ratings file", "pass the returned sheet")
    fieldnames, records = read_csv(path)
    raters = [name for name in fieldnames if name != "sample"]
    try:
        return [[float(record[name]) for name in raters] for record in records]
    except (TypeError, ValueError):
        raise InputError(
            f"{path} has a rating that is not a number", "rate every sample 1-5"
        ) from None


def run(args: argparse.Namespace) -> int:
    """Export a sheet (with the runner), or compute Table 2 from ratings."""
    from personae.evals.amadeus.persona_human import table_2

    if args.export:
        from personae.runners.amadeus_eval import export_rating_sheet

        if not args.results:
            raise InputError(
                "--export needs --results DIR/results.jsonl",
                "run personae amadeus eval-personality first",
            )
        sheet = export_rating_sheet(args.results, args.export, samples=args.samples, seed=args.seed)
        sys.stdout.write(f"sheet: {sheet.path}\n")
        return 0
    if not args.ratings:
        raise InputError(
            "nothing to do", "pass --export SHEET.csv --results FILE, or --ratings FILE"
        )
    figures = table_2(_ratings(args.ratings))
    sys.stdout.write(
        "| μ | σ | Mdn | α |\n|---|---|---|---|\n"
        f"| {figures['mean']:.3f} | {figures['std']:.3f} | {figures['median']:.3f} | {figures['alpha']:.3f} |\n"
    )
    return 0
