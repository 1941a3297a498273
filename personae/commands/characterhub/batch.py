"""Batch profiling: read a CSV of characters, drop duplicates, profile with bounded concurrency.

De-duplication (:mod:`personae.commands.characterhub.dedup`): character lists gathered from different sources name the
same character differently ("Kenshirō", "Kenshiro", "Gojo Satoru"). ``--dedup paper`` applies
CharacterHub's rule literally (different sources, exact franchise, similarity above 0.85);
the default, ``personae``, merges reordered names and romanisation variants but never relatives
who share a family name. An optional alias table maps several titles of one franchise to one.
Characters already profiled are skipped, which makes an interrupted batch resumable.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from personae.commands.characterhub.dedup import DedupRule, NamedRow, duplicates, franchise_key
from personae.errors import InputError, PersonaeError
from personae.files import read_csv, require_file
from personae.urls import web_url


@dataclass(frozen=True)
class BatchRow:
    """One character to profile."""

    name: str
    franchise: str | None = None
    wiki: str | None = None
    source: str | None = None
    """The character list the row came from (the paper merges only across sources)."""


@dataclass
class BatchReport:
    """What a batch did."""

    written: list[BatchRow] = field(default_factory=list)
    skipped: list[BatchRow] = field(default_factory=list)
    failed: list[tuple[BatchRow, str]] = field(default_factory=list)


def read_batch(path: Path, *, default_wiki: str | None = None) -> list[BatchRow]:
    """Rows of a CSV with a header ``name,franchise[,wiki]``; bad files raise ``InputError``.

    ``default_wiki`` (``--wiki``) pins the wiki of the rows whose ``wiki`` cell is empty. A
    ``wiki`` cell must be an http(s) URL: checked here, with its line, before any fetch.
    """
    require_file(path, "batch file", "pass a CSV file to --batch")
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
        wiki = record.get("wiki", "").strip() or default_wiki
        if wiki:
            web_url(wiki, f"{path}:{line}: the wiki URL", "https://hokuto.fandom.com")
        rows.append(
            BatchRow(
                name=name,
                franchise=record.get("franchise", "").strip() or None,
                wiki=wiki,
                source=record.get("source", "").strip() or None,
            )
        )
    if not rows:
        raise InputError(f"{path} lists no characters", "add rows: name,franchise,wiki")
    return rows


def read_aliases(path: Path) -> dict[str, str]:
    """``{alias: franchise}`` from a CSV with a header ``alias,franchise``."""
    require_file(path, "alias table", "pass a CSV with columns alias,franchise")
    fieldnames, records = read_csv(path)
    if not {"alias", "franchise"} <= set(fieldnames):
        raise InputError(
            f"{path} lacks the columns alias,franchise",
            "start the CSV with a header: alias,franchise",
        )
    return {
        r["alias"].strip(): r["franchise"].strip()
        for r in records
        if r.get("alias", "").strip() and r.get("franchise", "").strip()
    }


def deduplicate(
    rows: Sequence[BatchRow],
    key: Callable[[BatchRow], str] | None = None,
    *,
    rule: DedupRule = "personae",
    aliases: Mapping[str, str] | None = None,
) -> tuple[list[BatchRow], list[tuple[BatchRow, BatchRow]]]:
    """Kept rows, and ``(duplicate, kept original)`` pairs under ``rule``.

    Each row is compared only with the kept rows of its own franchise (after ``aliases``), so a
    long character list does not cost a full pairwise pass; rows without a franchise are never
    merged by name. Rows with one ``key`` (the output folder) are duplicates too, however their
    names compare: both would write the same files.
    """
    kept: list[BatchRow] = []
    dropped: list[tuple[BatchRow, BatchRow]] = []
    by_franchise: dict[str, list[BatchRow]] = defaultdict(list)
    by_key: dict[str, BatchRow] = {}
    for row in rows:
        franchise = franchise_key(row.franchise, aliases)
        named = NamedRow(row.name, row.franchise, row.source)
        same_franchise = by_franchise[franchise] if franchise is not None else []
        original = by_key.get(key(row)) if key is not None else None
        original = original or next(
            (
                k
                for k in same_franchise
                if duplicates(NamedRow(k.name, k.franchise, k.source), named, rule, aliases)
            ),
            None,
        )
        if original is None:
            kept.append(row)
            if franchise is not None:
                by_franchise[franchise].append(row)
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
