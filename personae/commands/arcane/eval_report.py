"""`personae arcane eval-report OUT [--per-novel] [--central NAME ...]`: the report again.

Rebuilds ``summary.json``, ``report.md`` and ``report.html`` in OUT from ``OUT/results.jsonl``
(the paper's Table 2 layout, the Arc-vs-best-other-mode gaps and, with ``--per-novel`` or when
the results span several novels, one table per novel as in App. L; with ``--central``, the
Arc-over-Vanilla lift for central vs supporting characters, App. M). No model is called.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from personae.errors import InputError


def register(commands: Any) -> None:
    """Add `arcane eval-report`."""
    report = commands.add_parser(
        "eval-report", help="ARCANE: rebuild the report from OUT/results.jsonl"
    )
    report.add_argument("out", type=Path, help="the --out folder of personae arcane eval")
    report.add_argument(
        "--per-novel", action="store_true", help="add one Table 2 per novel (App. L)"
    )
    report.add_argument(
        "--central",
        action="append",
        default=[],
        help="a central character (repeatable): adds App. M's Arc-over-Vanilla lift for central "
        "vs supporting characters",
    )
    report.set_defaults(handler=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Write the reports; nothing is written when OUT holds no results."""
    from personae.commands.arcane.eval import print_report
    from personae.runners.arcane_eval import write_arcane_report

    if not args.out.is_dir():
        raise InputError(
            f"{args.out} is not a folder", "pass the --out folder of personae arcane eval"
        )
    print_report(write_arcane_report(args.out, per_novel=args.per_novel, central=args.central))
    return 0
