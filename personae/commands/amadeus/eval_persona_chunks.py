"""`personae amadeus eval-chunks`: AMADEUS's chunk analyses (Tables 1 and 3, Fig. 1).

``--questions QA.jsonl`` or ``--questionnaire mbti|bfi`` with ``--character``: the similarity
distribution of retrieved chunks (Σμ / Σσ² per splitter, no model call; each splitter's index
must exist, or ``--persona NAME=SOURCE`` builds them). ``--results FILE...``: chunk usage rate,
Guided Selection failure rate and the use-count histogram from the ``results.jsonl`` of
``amadeus eval-qa`` or ``amadeus eval-personality``. Writes ``summary.json`` and ``report.md`` in
``--out``. Environment read here: ``CHROMA_HOST`` / ``CHROMA_PORT``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.errors import InputError


def register(commands: Any) -> None:
    """Add ``amadeus eval-chunks``."""
    from personae.commands.amadeus.persona import add_index_flags

    parser = commands.add_parser(
        "eval-chunks", help="chunk similarity, usage and GS failure analyses (AMADEUS)"
    )
    parser.add_argument(
        "--character", nargs="+", default=[], help="characters (similarity analysis)"
    )
    parser.add_argument("--questions", help="QA JSONL whose questions are asked (or iago-othello)")
    parser.add_argument("--questionnaire", help="mbti or bfi: ask its interview questions")
    parser.add_argument(
        "--splitters", default="fixed,ats,acts", help="splitters compared (comma-separated)"
    )
    parser.add_argument("--k", type=int, default=4, help="chunks retrieved per question")
    parser.add_argument(
        "--persona",
        action="append",
        default=[],
        metavar="NAME=SOURCE",
        help="index a persona first",
    )
    parser.add_argument("--results", type=Path, nargs="*", default=[], help="results.jsonl files")
    parser.add_argument(
        "--out", type=Path, default=Path("runs/persona-chunks"), help="report folder"
    )
    add_index_flags(parser)
    parser.set_defaults(handler=run)


def _questions(args: argparse.Namespace) -> dict[str, list[str]]:
    from personae.evals.amadeus.persona_qa import load_qa
    from personae.evals.amadeus.personality_data import load_questionnaire

    if args.questions:
        found: dict[str, list[str]] = {}
        for item in load_qa(args.questions):
            found.setdefault(item.character, []).append(item.question)
        wanted = args.character or sorted(found)
        missing = [c for c in wanted if c not in found]
        if missing:
            raise InputError(
                f"{args.questions} has no questions for {', '.join(missing)}",
                "pick characters it covers",
            )
        return {c: found[c] for c in wanted}
    if not args.character:
        raise InputError("no characters given", "pass --character NAME...")
    items = load_questionnaire(args.questionnaire).items
    return {c: [item.question for item in items] for c in args.character}


def run(args: argparse.Namespace) -> int:
    """Run the requested analyses with the runner (it writes the files); print the report."""
    import asyncio

    from personae.commands.amadeus.eval_personality import _personas
    from personae.commands.amadeus.persona import index_options, store_context
    from personae.runners.amadeus_eval import analyse_persona_chunks, check_chunk_analysis

    splitters = [s.strip() for s in args.splitters.split(",") if s.strip()]
    asking = bool(args.questions or args.questionnaire)
    # before the questions are read and the embedding opened: a typo costs nothing
    check_chunk_analysis(asked=asking, results=args.results, k=args.k, splitters=splitters)
    personas = _personas(args.persona)
    store = store_context(args)
    asked = _questions(args) if asking else None
    index = index_options(args, store)  # the similarity analysis swaps in each splitter
    analysis = asyncio.run(
        analyse_persona_chunks(
            args.out,
            context=store,
            index=index,
            questions=asked,
            splitters=splitters,
            k=args.k,
            personas=personas,
            results=args.results,
        )
    )
    sys.stdout.write(analysis.report)
    return 0
