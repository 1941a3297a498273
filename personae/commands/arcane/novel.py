"""`personae arcane import|chapters`: a plain-text novel into numbered chapters; its segmentation.

``personae arcane import FILE --title T`` (or ``--coser books_example.jsonl --title T``) cleans
the text (page artifacts, drop caps, a modern edition's front and back matter) and writes
``DATA/novels/<slug>/{chapters.jsonl, meta.json}``; ``personae arcane chapters BOOK`` lists
index, label and size of every chapter so the user can check the cut before paying for arcs.

Settings read here, at the edge: ``PERSONAE_DATA_DIR`` (``--data``; default ``./data``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.commands.models import ModelFields, model_fields
from personae.errors import InputError
from personae.settings import DEFAULT_DATA_DIR


class ArcaneFields(ModelFields):
    """The ARCANE run-context fields the flags set: the models and ``--data``."""

    data_dir: str


def add_data_flag(parser: Any) -> None:
    """``--data DIR``: where novels and ARCANE artefacts live (shared by the ARCANE commands)."""
    parser.add_argument(
        "--data", type=Path, help=f"data folder (PERSONAE_DATA_DIR; default ./{DEFAULT_DATA_DIR})"
    )


def data_dir(args: argparse.Namespace) -> Path:
    """The data folder: ``--data``, else ``PERSONAE_DATA_DIR``, else ``./data``.

    Commands that run an ARCANE graph pass ``--data`` to its context instead, which fills it
    from the same settings.
    """
    if args.data is not None:
        return _data_folder(Path(args.data))
    from personae.settings import load_settings

    return _data_folder(load_settings().data_dir)


def _data_folder(path: Path) -> Path:
    """``path`` unless it is something other than a folder (a file given as ``--data``)."""
    if path.exists() and not path.is_dir():
        raise InputError(
            f"--data {path} is a file, not a folder",
            "pass the data folder (it holds novels/ and the ARCANE artefacts)",
        )
    return path


def context_fields(args: argparse.Namespace) -> ArcaneFields:
    """The run-context fields of ``--data`` and the model flags ("" where absent).

    Only a translation: the context fills what is empty from the settings
    (``PERSONAE_DATA_DIR``, ``PERSONAE_CACHE_DIR``, the model rule).
    """
    data = getattr(args, "data", None)
    if data is not None:
        _data_folder(Path(data))
    return ArcaneFields(data_dir=str(data) if data is not None else "", **model_fields(args))


def register(commands: Any) -> None:
    """Add `arcane import` and `arcane chapters`."""
    load = commands.add_parser("import", help="import a plain-text novel or a CoSER record")
    load.add_argument("file", nargs="?", type=Path, help="plain-text (UTF-8) novel")
    load.add_argument("--coser", type=Path, help="CoSER books JSONL (pick a record with --title)")
    load.add_argument("--title", help="book title (default: the file name / the CoSER record)")
    load.add_argument("--chapter-pattern", help="regular expression matching chapter headings")
    load.add_argument("--start-marker", help="text where the novel starts (cuts front matter)")
    load.add_argument("--end-marker", help="text where the novel ends (cuts back matter)")
    add_data_flag(load)
    load.set_defaults(handler=run_import)
    chapters = commands.add_parser("chapters", help="show a novel's segmentation")
    chapters.add_argument("book", help="book slug or title")
    add_data_flag(chapters)
    chapters.set_defaults(handler=run_chapters)


def run_import(args: argparse.Namespace) -> int:
    """Segment the text and save the chapters; print the count and what was cut."""
    from personae.runners.arcane import import_novel

    if (args.file is None) == (args.coser is None):
        raise InputError("give either FILE or --coser FILE", "e.g. personae arcane import book.txt")
    novel = import_novel(
        args.file or args.coser,
        data_dir=data_dir(args),
        title=args.title,
        coser=args.coser is not None,
        chapter_pattern=args.chapter_pattern,
        start_marker=args.start_marker,
        end_marker=args.end_marker,
    )
    segmentation = novel.segmentation
    out = sys.stdout
    out.write(
        f"{novel.title}: {len(segmentation.chapters)} chapters ({novel.form}), "
        f"{segmentation.cleaned_chars:,} characters kept; cut {segmentation.front_chars_dropped:,} "
        f"before, {segmentation.back_chars_dropped:,} after, "
        f"{segmentation.toc_entries_dropped} table-of-contents entries\n"
    )
    for note in segmentation.notes:
        out.write(f"note: {note}\n")
    out.write(f"saved {novel.folder}\n")
    return 0


def run_chapters(args: argparse.Namespace) -> int:
    """One line per chapter: index, characters, label."""
    from personae.memory.arcane.novel_store import open_novel

    novel = open_novel(data_dir(args), args.book)
    out = sys.stdout
    out.write(f"{novel.title} ({novel.meta['form']}): {novel.count} chapters\n")
    for idx, label, chars in novel.labels():
        out.write(f"{idx:>4}  {chars:>8,}  {label}\n")
    return 0
