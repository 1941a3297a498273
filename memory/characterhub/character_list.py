"""A character list: the rows a batch profiles, read from ``name,franchise[,wiki][,source]`` CSVs.

CharacterHub (§3.1) builds its dataset from character lists gathered from several sources, and
an alias table maps several titles of one franchise to one. Both are CSV files here; they are
read and checked before any fetch, each problem one line naming the file, its line and the fix.
Which rows are one character is :mod:`personae.memory.characterhub.dedup`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from personae.errors import InputError
from personae.files import read_csv, require_file
from personae.urls import web_url

WIKI_EXAMPLE = "https://hokuto.fandom.com"


@dataclass(frozen=True)
class CharacterRow:
    """One character to profile: a row of a character list."""

    name: str
    franchise: str | None = None
    """The work the character comes from; it disambiguates the name and keys the folder."""
    wiki: str | None = None
    """A pinned wiki root URL (``None``: the profiler finds the wiki)."""
    source: str | None = None
    """The character list the row came from (the paper merges only across sources)."""


def check_rows(rows: list[CharacterRow]) -> None:
    """Check rows an app built itself as :func:`read_character_list` checks a file's.

    Raises:
        InputError: no rows, an empty name or a wiki that is not an http(s) URL (the row's
            number, counted from 1, in the message).
    """
    if not rows:
        raise InputError("the character list is empty", "pass at least one CharacterRow")
    for number, row in enumerate(rows, start=1):
        if not row.name.strip():
            raise InputError(f"row {number}: the name is empty", "fill in or drop the row")
        if row.wiki:
            web_url(row.wiki, f"row {number}: the wiki URL", WIKI_EXAMPLE)


def read_character_list(path: Path | str, *, default_wiki: str | None = None) -> list[CharacterRow]:
    """The rows of a CSV with a header ``name,franchise[,wiki][,source]``.

    ``default_wiki`` (``--wiki``) pins the wiki of the rows whose ``wiki`` cell is empty. A
    ``wiki`` cell must be an http(s) URL: checked here, with its line, before any fetch.

    Raises:
        InputError: a missing or unreadable file, no ``name`` column, an empty name, a bad
            wiki URL or no rows; one line naming the file (and line) and the fix.
    """
    path = Path(path)
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
            web_url(wiki, f"{path}:{line}: the wiki URL", WIKI_EXAMPLE)
        rows.append(
            CharacterRow(
                name=name,
                franchise=record.get("franchise", "").strip() or None,
                wiki=wiki,
                source=record.get("source", "").strip() or None,
            )
        )
    if not rows:
        raise InputError(f"{path} lists no characters", "add rows: name,franchise,wiki")
    return rows


def read_aliases(path: Path | str) -> dict[str, str]:
    """``{alias: franchise}`` from a CSV with a header ``alias,franchise`` (the paper's table).

    Raises:
        InputError: a missing or unreadable file, or a header without ``alias,franchise``.
    """
    path = Path(path)
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
