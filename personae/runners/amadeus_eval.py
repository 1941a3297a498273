"""AMADEUS's evaluation files as library calls: the chunk analyses and the human-rating sheet.

``personae amadeus eval-chunks`` and ``personae amadeus eval-human --export`` call these;
nothing here prints. Why a runner: the files (``summary.json`` and ``report.md``; the rating
sheet) are the jobs' outputs, and a library caller must get the same files the CLI writes,
each written atomically once everything in it is computed (a failed analysis leaves the
previous report, never half of a new one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from personae.errors import InputError, check_choice
from personae.progress import Progress, quiet

if TYPE_CHECKING:
    from personae.graphs.store_context import EmbeddingContext
    from personae.tools.amadeus.indexing import IndexSettings

SPLITTERS = ("acts", "ats", "fixed")
"""AMADEUS's splitters (Table 1 compares them)."""


@dataclass(frozen=True)
class ChunkAnalysis:
    """What :func:`analyse_persona_chunks` computed and where it wrote it."""

    summary: dict[str, Any]
    """``summary.json``: the embedding, ``k``, and ``similarity`` rows and/or ``usage``."""
    report: str
    """``report.md``'s text (Tables 1 and 3, Fig. 1's histogram)."""
    out: Path


async def analyse_persona_chunks(
    out: Path,
    *,
    context: EmbeddingContext,
    index: IndexSettings,
    questions: Mapping[str, Sequence[str]] | None = None,
    splitters: Sequence[str] = SPLITTERS,
    k: int = 4,
    personas: Mapping[str, str] | None = None,
    results: Sequence[Path] = (),
    progress: Progress = quiet,
) -> ChunkAnalysis:
    """AMADEUS's chunk analyses; writes ``out/summary.json`` and ``out/report.md``.

    ``questions`` (character -> questions): the similarity distribution of the ``k`` chunks
    retrieved per question under each of ``splitters`` (no model call; a character named in
    ``personas``, casefolded name -> persona source, is indexed first, the others must be).
    ``results`` (``results.jsonl`` of ``amadeus eval-qa`` or ``amadeus eval-personality``): chunk
    usage rate, Guided Selection failure rate and the use-count histogram.

    Raises:
        InputError: nothing to analyse, ``k`` below 1, an unknown splitter, a persona not
            indexed, unreadable results (one line each, before anything is written).
    """
    from personae.evals.amadeus.persona_chunks import render_report
    from personae.files import write_json_atomic, write_text_atomic

    check_chunk_analysis(asked=bool(questions), results=results, k=k, splitters=splitters)
    summary: dict[str, Any] = {"embedding": context.embedding, "k": k}
    if questions:
        summary["similarity"] = await _similarity(
            index, context, questions, splitters, k, personas or {}, progress
        )
    if results:
        summary["usage"] = await asyncio.to_thread(_usage, index, results)
    report = render_report(summary)
    await asyncio.to_thread(write_json_atomic, out / "summary.json", summary)
    await asyncio.to_thread(write_text_atomic, out / "report.md", report)
    return ChunkAnalysis(summary, report, out)


def check_chunk_analysis(
    *, asked: bool, results: Sequence[Path], k: int, splitters: Sequence[str]
) -> None:
    """The request of :func:`analyse_persona_chunks`, checked (a caller checks it early).

    Raises:
        InputError: nothing to analyse, ``k`` below 1 or an unknown splitter (one line each).
    """
    if not asked and not results:
        raise InputError(
            "nothing to analyse",
            "pass --questions/--questionnaire (similarity) or --results (usage)",
        )
    if k < 1:
        raise InputError("--k must be at least 1", "pass 1 or more")
    for splitter in splitters:
        check_choice(splitter, SPLITTERS, "splitter")


async def _similarity(
    index: IndexSettings,
    store: EmbeddingContext,
    questions: Mapping[str, Sequence[str]],
    splitters: Sequence[str],
    k: int,
    personas: Mapping[str, str],
    progress: Progress,
) -> list[dict[str, Any]]:
    from personae.evals.amadeus.persona_chunks import similarity_row
    from personae.runners.amadeus import index_persona, open_indexed_persona

    asked = {c: list(q) for c, q in questions.items()}
    rows = []
    for splitter in splitters:
        progress(f"{splitter}: retrieving {k} chunks per question of {len(asked)} character(s)")
        options = replace(index, splitter=cast(Any, splitter))  # checked: one of SPLITTERS
        indexes = {}
        for character in questions:
            name = character
            source = personas.get(character.casefold())
            if source is not None:
                indexed = await index_persona(
                    source, character=character, index=options, context=store
                )
                name = indexed.character
            indexes[character] = open_indexed_persona(name, options)
        rows.append(asdict(await asyncio.to_thread(similarity_row, splitter, indexes, asked, k)))
    return rows


def _usage(index: IndexSettings, results: Sequence[Path]) -> dict[str, Any]:
    from personae.evals.amadeus.persona_chunks import chunk_usage, indexed_name, read_results
    from personae.runners.amadeus import open_indexed_persona

    records = read_results(list(results))
    counts = {
        character: open_indexed_persona(character, index).count()
        for character in sorted({indexed_name(r) for r in records})
    }
    return chunk_usage(records, counts)


@dataclass(frozen=True)
class RatingSheet:
    """The written human-rating sheet and how many samples it holds."""

    path: Path
    samples: int
    """Rows to rate (fewer than asked when ``results`` holds fewer interviews)."""


def export_rating_sheet(
    results: Path, sheet: Path, *, samples: int = 60, seed: int = 0
) -> RatingSheet:
    """Write AMADEUS's human-rating sheet (Table 2): ``samples`` random interview samples.

    Each row is one sample of ``results`` (``amadeus eval-personality``'s ``results.jsonl``) with its
    Guided Selection chunks and extracted attributes, for evaluators to rate 1-5; the sheet is
    written atomically.

    Raises:
        InputError: ``results`` is not a file (one line naming the command that writes it).
    """
    import csv
    import io

    from personae.evals.amadeus.persona_human import SHEET_COLUMNS, sample_rows
    from personae.files import read_jsonl, write_text_atomic

    if not results.is_file():
        raise InputError(
            f"--export needs --results DIR/results.jsonl ({results} is not a file)",
            "run personae amadeus eval-personality first",
        )
    buffer = io.StringIO()
    writer: csv.DictWriter[str] = csv.DictWriter(buffer, fieldnames=list[str](SHEET_COLUMNS))
    writer.writeheader()
    rows = sample_rows(read_jsonl(results), samples, seed)
    writer.writerows(rows)
    write_text_atomic(sheet, buffer.getvalue())
    return RatingSheet(sheet, len(rows))
