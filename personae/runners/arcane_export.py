"""ARCANE training data (App. D) as a library call: SFT chat rows or DPO pairs, one JSONL file.

``personae arcane export`` and apps call :func:`export_training_data`; nothing here prints.
Why a runner: the file is the job's output, and a library caller must get the same file the
CLI writes, written the same way (every row built first, then one atomic write, so a failed
or interrupted export leaves the previous file, never half of a new one).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from personae.errors import InputError, check_choice
from personae.progress import Progress, quiet

if TYPE_CHECKING:
    from personae.evals.arcane.export import Export
    from personae.graphs.arcane.roleplay import RoleplayContext

FORMATS = ("sft", "dpo")
"""``sft``: teacher completions as chat rows; ``dpo``: reference pairs of adjacent phases."""
SPLITS = ("train", "eval", "unvalidated", "any")
PAIRS = ("anchor", "every-phase")


@dataclass(frozen=True)
class TrainingExport:
    """The written file and what went into it."""

    path: Path
    export: Export
    """The rows, the probes read, what was left out (by reason), LLM calls and cache hits."""


async def export_training_data(
    books: Sequence[str],
    *,
    context: RoleplayContext,
    format: str,
    out: Path,
    modes: Sequence[str],
    split: str = "train",
    pairs: str = "anchor",
    teachers: Sequence[str] = (),
    samples: int = 3,
    concurrency: int = 8,
    progress: Progress = quiet,
) -> TrainingExport:
    """Build ``format`` rows for ``books``' probes of ``split`` arcs and write them to ``out``.

    SFT samples each of ``teachers`` (default ``context.model``) ``samples`` times per (probe,
    available phase, mode); DPO pairs each anchor phase's reference with each adjacent phase's
    (``pairs="every-phase"``: every phase as anchor), no model call.

    Raises:
        InputError: an unknown format, split, pairing or mode; ``out`` is a folder; a book has
            no probes of ``split``; nothing could be exported (one line each, before any write).
    """
    import asyncio

    from personae.evals.arcane import export as ex
    from personae.files import write_text_atomic

    check_choice(format, FORMATS, "--format")
    check_choice(split, SPLITS, "--split")
    check_choice(pairs, PAIRS, "--pairs")
    for mode in modes:
        check_choice(mode, ex.EXPORT_MODES, "mode")
    if samples < 1 or concurrency < 1:
        raise InputError("--samples and --concurrency must be at least 1", "pass 1 or more")
    if out.is_dir():
        raise InputError(f"--out {out} is a folder", "pass a file name, e.g. arcane_sft.jsonl")
    parent = out.parent if str(out.parent) else Path(".")
    if parent.exists() and not parent.is_dir():
        raise InputError(f"--out {out}: {parent} is not a folder", "pass a writable path")
    if format == "sft":
        context.llm("strong")  # no LLM or a bad spec fails here, before any work
    loaded = await asyncio.to_thread(
        ex.load_books,
        context.data_dir,
        books,
        split,
        context.text_embedding(),
        context.chroma_settings(),
    )
    progress(f"{format}: {len(books)} book(s) loaded, building the rows")
    if format == "dpo":
        rule = cast(Any, pairs)  # checked above: one of PAIRS
        export = ex.dpo_rows(loaded, modes=modes, split=split, pairs=rule, context=context)
    else:
        export = await ex.sft_rows(
            loaded,
            modes=modes,
            split=split,
            teachers=list(teachers) or [context.model],
            samples=samples,
            context=context,
            concurrency=concurrency,
        )
    if not export.rows:
        raise InputError(
            f"no {format} rows from {export.probes} probes ({export.skipped or 'nothing'})",
            "check the probes' phases",
        )
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in export.rows)
    await asyncio.to_thread(write_text_atomic, out, text)  # makes the folder
    return TrainingExport(out, export)
