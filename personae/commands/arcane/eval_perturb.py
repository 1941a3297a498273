"""`personae arcane eval-perturb OUT`: PTF under perturbation (ARCANE App. N, Table 8).

``personae arcane eval-perturb OUT [--condition shuffle|reverse|block ...] [--sample 75]
[--mode arc] [--judge-model M] [--data DIR]`` re-judges the trajectories saved in
``OUT/results.jsonl`` (per model, ``--sample`` probes of ``--mode`` with 3+ phases, stratified
across novels) under ``orig`` and each chosen condition (default all three), appends the
answers to ``OUT/perturb.jsonl`` (a rerun skips what is done) and writes ``OUT/perturb.json``
and ``OUT/perturb.md``: mean sub-scores per condition and paired deltas vs ``orig``, and App.
N's Pearson / Spearman of PTF vs the per-phase average per (model, mode) over all results.

The flags fill the ARCANE run context, which takes what they leave out from the settings:
``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``PERSONAE_MODEL``, ``PERSONAE_DATA_DIR``,
``PERSONAE_CACHE_DIR``. The judge is each trajectory's own judge (the one that scored it)
unless ``--judge-model`` names another; ``PERSONAE_JUDGE_MODEL`` is not consulted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.commands.arcane.novel import add_data_flag, context_fields
from personae.errors import InputError


def register(commands: Any) -> None:
    """Add ``arcane eval-perturb``."""
    from personae.commands.models import add_model_flags

    parser = commands.add_parser(
        "eval-perturb", help="ARCANE App. N: re-judge PTF on shuffled / reversed trajectories"
    )
    parser.add_argument("out", type=Path, help="folder of an arcane eval run (results.jsonl)")
    parser.add_argument(
        "--condition",
        action="append",
        default=[],
        help="shuffle, reverse or block (repeatable or comma-separated; default all three); "
        "orig is always judged",
    )
    parser.add_argument("--sample", type=int, default=75, help="probes per model (App. N: 75)")
    parser.add_argument("--mode", default="arc", help="context mode of the trajectories (arc)")
    parser.add_argument("--concurrency", type=int, default=8, help="judge calls at once")
    parser.add_argument(
        "--no-thought", action="store_true", help="judge without ref_thought (App. F ablation)"
    )
    add_data_flag(parser)
    add_model_flags(
        parser,
        judge=True,
        judge_default="each result's own judge",
        temperature_default="judge=0 (the paper's judge)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Sample, re-judge under each condition, write perturb.json and perturb.md."""
    import asyncio

    from personae.evals.arcane.perturb import parse_conditions
    from personae.graphs.arcane.context import ArcaneContext
    from personae.runners.arcane_eval import perturb_arcane

    parse_conditions(args.condition)
    if args.sample < 1 or args.concurrency < 1:
        raise InputError("--sample and --concurrency must be at least 1", "pass 1 or more")
    if not args.out.is_dir():
        raise InputError(
            f"{args.out} is not a folder", "pass the --out folder of personae arcane eval"
        )
    run = asyncio.run(
        perturb_arcane(
            args.out,
            context=ArcaneContext(**context_fields(args)),
            conditions=args.condition,
            sample=args.sample,
            mode=args.mode,
            judge_model=args.judge_model or "",
            include_thought=not args.no_thought,
            concurrency=args.concurrency,
        )
    )
    counts = run.counts
    sys.stderr.write(
        f"• {run.trajectories} trajectories x {len(run.conditions)} conditions: "
        f"{counts['judged']} judged, {counts['skipped']} already done, "
        f"{counts['missing']} judge failures\n"
    )
    sys.stdout.write(run.text + "\n")
    sys.stdout.write(f"report: {run.perturb_md} (and perturb.json)\n")
    return 0
