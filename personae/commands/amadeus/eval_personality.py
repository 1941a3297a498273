"""`personae amadeus eval-personality`: the AMADEUS interview-based MBTI / BFI evaluation (Tables 4-5).

Each character is interviewed with every item of the questionnaire (a fresh conversation per
item) by the chosen role-play method, the answers are assessed with InCharacter's protocol and
the predicted type is compared with the personality-database label. Results land in
``--out``: ``results.jsonl`` (a rerun skips what is done), ``summary.json``, ``report.md``.

A character needs a persona index: ``--persona NAME=SOURCE`` builds one from a profile.json
(``personae profile``), a wiki page, a Markdown file or a CoSER book, and the report records
which source each persona came from; otherwise an index made with ``personae amadeus index``
under ``--memory`` is used (looked up by the character's name and its InCharacter aliases).

The flags fill the AMADEUS run context, which takes the rest from the settings: the models
(:mod:`personae.commands.models`; the rater is the judge model), ``CHROMA_HOST`` /
``CHROMA_PORT``, ``PERSONAE_EMBEDDINGS``, ``PERSONAE_CACHE_DIR`` (wiki fetches).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.degraded import add_max_failures_flag, print_degraded
from personae.errors import InputError


def register(commands: Any) -> None:
    """Add ``amadeus eval-personality``."""
    from personae.commands.amadeus.chat import add_selection_model_flags
    from personae.commands.amadeus.persona import add_index_flags
    from personae.commands.models import add_model_flags

    parser = commands.add_parser(
        "eval-personality", help="interview characters with MBTI/BFI items (AMADEUS Tables 4-5)"
    )
    parser.add_argument("--questionnaire", required=True, help="mbti, bfi, or a questionnaire JSON")
    parser.add_argument("--character", nargs="+", required=True, help="characters to interview")
    parser.add_argument(
        "--labels", help="pdb (default), annotation, or a label JSON file ({name: {BFI: 'SCOEN'}})"
    )
    parser.add_argument(
        "--persona",
        action="append",
        default=[],
        metavar="NAME=SOURCE",
        help="persona source of a character (profile.json, wiki URL/.html, .md, CoSER book)",
    )
    parser.add_argument(
        "--method", choices=("amadeus", "naive", "none"), default="amadeus", help="role-play method"
    )
    parser.add_argument(
        "--assess",
        choices=("er", "er-personae", "oc"),
        default="er",
        help="er: InCharacter's expert rating, its prompts (the paper's); er-personae: expert "
        "rating, our prompts; oc: option conversion, our prompts",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/personality"), help="results folder")
    parser.add_argument(
        "--data", type=Path, help="an InCharacter data folder instead of the shipped one"
    )
    parser.add_argument("--language", choices=("en", "zh"), default="en", help="interview language")
    parser.add_argument("--limit", type=int, help="items per dimension (quick runs)")
    parser.add_argument("--concurrency", type=int, default=4, help="model calls at once")
    parser.add_argument("--gs-wave", type=int, default=1, help="Guided Selection checks at once")
    parser.add_argument(
        "--hs", action="store_true", help="also judge each answer's Hallucination Score (Table 6)"
    )
    add_max_failures_flag(parser, "assessments")
    add_selection_model_flags(parser)
    add_index_flags(parser)
    add_model_flags(parser, judge=True)
    parser.set_defaults(handler=run)


def _personas(pairs: list[str]) -> dict[str, str]:
    """``--persona NAME=SOURCE`` pairs as {casefolded name: source}."""
    found = {}
    for pair in pairs:
        name, sep, source = pair.partition("=")
        if not sep or not name.strip() or not source.strip():
            raise InputError(
                f"--persona {pair!r} is not NAME=SOURCE", "write --persona Iago=othello.json"
            )
        found[name.strip().casefold()] = source.strip()
    return found


def _say(line: str) -> None:
    """A runner's progress line, on stderr."""
    sys.stderr.write(f"{line}\n")


def run(args: argparse.Namespace) -> int:
    """Check the flags, run :func:`~personae.evals.evaluate_personality`, print the report."""
    import asyncio

    from personae.commands.amadeus.chat import agent_context
    from personae.commands.amadeus.persona import index_options
    from personae.runners.amadeus_personality import evaluate_personality

    personas = _personas(args.persona)
    agent = agent_context(args, ask=False)  # the runner asks, after checking its inputs
    done = asyncio.run(
        evaluate_personality(
            args.character,
            args.questionnaire,
            context=agent,
            index=index_options(args, agent),
            personas=personas,
            labels=args.labels,
            assess=args.assess,
            judge_model=args.judge_model or "",
            hs=args.hs,
            out=args.out,
            data=args.data,
            language=args.language,
            limit=args.limit,
            concurrency=args.concurrency,
            max_failures=args.max_failures,
            progress=_say,
        )
    )
    sys.stdout.write(done.report)
    sys.stdout.write(f"results: {args.out}/\n")
    print_degraded(done.degraded, {"assessments": done.degraded})
    return 0
