"""Batch profiling: read a CSV of characters, drop duplicates, profile with bounded concurrency.

De-duplication follows the paper: character lists gathered from different sources name the same
character differently ("Kenshirō", "Kenshiro"), so two rows of the same franchise whose names are
at least 0.85 similar are one character. Characters already profiled are skipped, which makes an
interrupted batch resumable.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from personae.errors import InputError, PersonaeError
from personae.files import read_csv

NAME_SIMILARITY = 0.85
"""Names at least this similar (same franchise) are the same character."""


@dataclass(frozen=True)
class BatchRow:
    """One character to profile."""

    name: str
    franchise: str | None = None
    wiki: str | None = None


@dataclass
class BatchReport:
    """What a batch did."""

    written: list[BatchRow] = field(default_factory=list)
    skipped: list[BatchRow] = field(default_factory=list)
    failed: list[tuple[BatchRow, str]] = field(default_factory=list)


def read_batch(path: Path) -> list[BatchRow]:
    """Rows of a CSV with a header ``name,franchise[,wiki]``; bad files raise ``InputError``."""
    if not path.is_file():
        raise InputError(f"batch file {path} does not exist", "pass a CSV file to --batch")
    fieldnames, records = read_csv(path)
    if "name" not in fieldnames:
        raise InputError(
            f"{path} has no 'name' column", "start the CSV with a header: name,franchise,wiki"
        )
    rows = []
    for line, record in enumerate(records, start=2):
        name = record.get("name", "").strip()
        if not name:
            raise InputError(f"{path}:{line}: the name is empty", "fill in or delete the row")
        rows.append(
            BatchRow(
                name=name,
                franchise=record.get("franchise", "").strip() or None,
                wiki=record.get("wiki", "").strip() or None,
            )
        )
    if not rows:
        raise InputError(f"{path} lists no characters", "add rows: name,franchise,wiki")
    return rows


def _normal(text: str | None) -> str:
    """``text`` compared ignoring case, accents and hyphens/spacing (``Kenshirō`` = ``kenshiro``)."""
    ascii_text = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode()
    return " ".join(ascii_text.casefold().replace("-", " ").split())


def deduplicate(
    rows: Sequence[BatchRow], key: Callable[[BatchRow], str] | None = None
) -> tuple[list[BatchRow], list[tuple[BatchRow, BatchRow]]]:
    """Kept rows, and ``(duplicate, kept original)`` pairs (same franchise, similar name).

    Each row is normalised once and compared only with the kept rows of its own franchise, so
    a long character list does not cost a full pairwise pass. Rows with one ``key`` (the output
    folder) are duplicates too, however their names compare: both would write the same files.
    """
    kept: list[BatchRow] = []
    dropped: list[tuple[BatchRow, BatchRow]] = []
    by_franchise: dict[str, list[tuple[str, BatchRow]]] = defaultdict(list)
    by_key: dict[str, BatchRow] = {}
    for row in rows:
        name = _normal(row.name)
        same_franchise = by_franchise[_normal(row.franchise)]
        original = by_key.get(key(row)) if key is not None else None
        original = original or next(
            (
                k
                for n, k in same_franchise
                if SequenceMatcher(None, n, name).ratio() >= NAME_SIMILARITY
            ),
            None,
        )
        if original is None:
            kept.append(row)
            same_franchise.append((name, row))
            if key is not None:
                by_key[key(row)] = row
        else:
            dropped.append((row, original))
    return kept, dropped


async def run_batch(
    rows: Sequence[BatchRow],
    profile: Callable[[BatchRow], Awaitable[Any]],
    *,
    done: Callable[[BatchRow], bool],
    concurrency: int = 2,
) -> BatchReport:
    """Profile ``rows`` at most ``concurrency`` at a time; one failure does not stop the rest."""
    report = BatchReport()
    slots = asyncio.Semaphore(max(1, concurrency))

    async def one(row: BatchRow) -> None:
        if done(row):
            report.skipped.append(row)
            return
        async with slots:
            try:
                await profile(row)
            except PersonaeError as error:
                report.failed.append((row, str(error)))
                return
        report.written.append(row)

    await asyncio.gather(*(one(row) for row in rows))
    return report
