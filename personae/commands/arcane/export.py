"""`personae arcane export`: ARCANE training data (App. D) as JSONL, SFT chat rows or DPO pairs.

``personae arcane export BOOK... --format sft|dpo [--out FILE] [--modes arc,summary]
[--split train|eval|unvalidated|any] [--teacher-model M ...] [--samples 3] [--pairs anchor|every-phase]``

SFT samples each ``--teacher-model`` (default the strong model) ``--samples`` times at T = 0.9 with an
800-token cap per (probe, available phase, mode); DPO pairs each anchor phase's reference with
each adjacent phase's under the anchor's role-play prompt (no model call). Only probes of arcs
in ``--split`` (train) are exported. The file is written once everything is built.

The flags fill the ARCANE run context, which takes what they leave out from the settings:
``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``PERSONAE_MODEL``, ``PERSONAE_DATA_DIR``,
``PERSONAE_CACHE_DIR`` (SFT only calls a model), ``PERSONAE_EMBEDDINGS``, ``CHROMA_HOST``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.commands.arcane import cache_note
from personae.commands.arcane.arcane import CHUNK_EMBEDDING_HELP
from personae.commands.arcane.novel import add_data_flag, context_fields


def register(commands: Any) -> None:
    """Add `arcane export`."""
    from personae.commands.models import add_embedding_flag, add_model_flags

    arcane = commands.add_parser("export", help="ARCANE SFT rows or DPO pairs (App. D)")
    arcane.add_argument("books", nargs="+", help="book slugs or titles with probes")
    arcane.add_argument("--format", required=True, help="sft (chat rows) or dpo (preference pairs)")
    arcane.add_argument("--out", type=Path, help="JSONL file (default arcane_<format>.jsonl)")
    arcane.add_argument(
        "--modes", help="context modes (SFT default arc,summary as App. D; DPO default arc)"
    )
    arcane.add_argument("--split", default="train", help="arcs to export: train (default), any")
    arcane.add_argument(
        "--teacher-model",
        dest="teacher",
        action="append",
        default=[],
        help="SFT teacher model (repeatable)",
    )
    arcane.add_argument("--samples", type=int, default=3, help="SFT samples per teacher (3)")
    arcane.add_argument(
        "--pairs", default="anchor", help="DPO: anchor (the probe's anchor phase) or every-phase"
    )
    add_embedding_flag(arcane, CHUNK_EMBEDDING_HELP)
    arcane.add_argument("--concurrency", type=int, default=8, help="SFT teacher calls at once")
    add_data_flag(arcane)
    add_model_flags(arcane)
    arcane.set_defaults(handler=run)


def _modes(args: argparse.Namespace) -> list[str]:
    from personae.evals.arcane.export import SFT_MODES

    text = args.modes or (",".join(SFT_MODES) if args.format == "sft" else "arc")
    return [m.strip() for m in text.split(",") if m.strip()] or [text]


def run(args: argparse.Namespace) -> int:
    """Export with the runner (every row built, then one atomic write); print what went in."""
    import asyncio

    from personae.errors import check_choice
    from personae.graphs.arcane.roleplay import RoleplayContext
    from personae.runners.arcane_export import FORMATS, export_training_data

    check_choice(args.format, FORMATS, "--format")
    if args.format == "sft" and args.teacher and not args.model:
        args.model = args.teacher[0]  # the teachers need a server, not a default model
    context = RoleplayContext(embedding=args.embedding, **context_fields(args))
    done = asyncio.run(
        export_training_data(
            args.books,
            context=context,
            format=args.format,
            out=args.out or Path(f"arcane_{args.format}.jsonl"),
            modes=_modes(args),
            split=args.split,
            pairs=args.pairs,
            teachers=args.teacher,
            samples=args.samples,
            concurrency=args.concurrency,
        )
    )
    export = done.export
    left = ", ".join(f"{n} {why}" for why, n in sorted(export.skipped.items())) or "none"
    sys.stdout.write(
        f"{len(export.rows)} {args.format} rows from {export.probes} probes -> {done.path} "
        f"(left out: {left}; {export.llm_calls} LLM calls{cache_note(export.cache_hits)})\n"
    )
    return 0
