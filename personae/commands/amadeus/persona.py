"""`personae amadeus index`: build or update a character's AMADEUS persona index.

SOURCE is a Markdown persona, a profiler ``profile.json``, a wiki page URL or saved ``.html``,
or a CoSER book ``.json`` (with ``--character``). Re-running on an edited source re-embeds only
the sections that changed. The flags fill a store context
(:mod:`personae.graphs.store_context`), which takes the rest from the settings: ``CHROMA_HOST`` /
``CHROMA_PORT`` (a Chroma server instead of ``--memory``), ``PERSONAE_EMBEDDINGS`` (unless
``--embedding``: one index per embedding; ``openai:`` on ``OPENAI_BASE_URL``),
``PERSONAE_CACHE_DIR`` and ``PERSONAE_CONTACT`` (fetching a wiki URL).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.models import add_embedding_flag
from personae.progress import to_stderr

if TYPE_CHECKING:
    from personae.graphs.store_context import EmbeddingAccess, EmbeddingContext

DEFAULT_MEMORY = Path("personas")
"""Where persona indexes live unless ``--memory`` says otherwise."""


def register(commands: Any) -> None:
    """Add `amadeus index`."""
    index = commands.add_parser(
        "index", help="index a persona (Markdown, profile.json, wiki URL/.html, CoSER book)"
    )
    index.add_argument(
        "source", help="persona source: .md, profile.json, wiki URL or .html, CoSER .json"
    )
    index.add_argument("--character", help="character name (required for Markdown and CoSER books)")
    add_index_flags(index)
    index.add_argument("--json", action="store_true", help="print the index statistics as JSON")
    index.add_argument(
        "--no-wait",
        action="store_true",
        help="when another index run works on --memory, stop (exit 3) instead of waiting for it",
    )
    index.set_defaults(handler=run_index)


def add_index_flags(parser: Any) -> None:
    """``--memory``, ``--splitter``, ``--chunk-size``, ``--overlap``, ``--embedding``."""
    parser.add_argument(
        "--memory",
        type=Path,
        default=DEFAULT_MEMORY,
        help=f"index folder (default {DEFAULT_MEMORY}/)",
    )
    parser.add_argument(
        "--splitter",
        choices=("acts", "ats", "fixed"),
        default="acts",
        help="acts (the paper's), ats (no context) or fixed (ablations)",
    )
    parser.add_argument("--chunk-size", type=int, default=1000, help="fixed splitter chunk size")
    parser.add_argument("--overlap", type=int, default=200, help="fixed splitter overlap")
    add_embedding_flag(parser)
    parser.add_argument(
        "--max-chunk-chars", type=int, help="cap ACTS/ATS chunk size (off: the paper's rule)"
    )


def store_context(args: argparse.Namespace) -> EmbeddingContext:
    """The run context of the index flags; the settings fill the Chroma server and the rest."""
    from personae.graphs.store_context import EmbeddingContext

    return EmbeddingContext(embedding=args.embedding or "")


def index_options(args: argparse.Namespace, store: EmbeddingAccess | None = None) -> Any:
    """The :class:`IndexSettings` of the parsed flags and ``store`` (default: the flags').

    The embedding is opened here (a missing server or model package fails before any work).
    """
    from personae.runners.amadeus import persona_index_settings

    return persona_index_settings(
        args.memory,
        splitter=args.splitter,
        context=store or store_context(args),
        chunk_size=args.chunk_size,
        overlap=args.overlap,
        max_chunk_chars=args.max_chunk_chars,
    )


def describe(stats: Any, doc: Any, memory: Path) -> str:
    """One line about what indexing did."""
    return (
        f"{doc.character}: {stats.chunks} chunks from {stats.sections} sections "
        f"({stats.collection}, l_max {stats.l_max}, l_o {stats.l_o}); "
        f"{stats.added} added, {stats.deleted} deleted, {stats.kept} unchanged; in {memory}/"
    )


def run_index(args: argparse.Namespace) -> int:
    """Import the source, split it and update the index; print what changed."""
    import asyncio

    from personae.runners.amadeus import index_persona

    store = store_context(args)
    options = index_options(args, store)
    done = asyncio.run(
        index_persona(
            args.source,
            character=args.character,
            index=options,
            context=store,
            wait=not args.no_wait,
            progress=to_stderr,
        )
    )
    if done.warning:
        sys.stderr.write(f"personae: warning: {done.warning}\n")
    if args.json:
        sys.stdout.write(json.dumps(done.as_json(), indent=2) + "\n")
    else:
        sys.stdout.write(describe(done.stats, done, args.memory) + "\n")
    return 0
