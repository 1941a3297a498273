"""`personae amadeus eval-qa`: ACC, ACC_L and HS of a role-play method (AMADEUS Table 6).

``personae amadeus eval-qa QA.jsonl --method amadeus|naive|none`` answers every question with
the method (each in a fresh conversation) and judges the answers; ``iago-othello`` names the
small set that ships with Personae (written by us from the CoSER persona of Iago; the paper's
CharacterRAG set is not released). Results land in ``--out``: ``results.jsonl`` (a rerun skips
what is done), ``summary.json`` and ``report.md``; judge answers are cached under
``PERSONAE_CACHE_DIR/judge``. The characters must be indexed (``personae amadeus index``).

The flags fill the AMADEUS run context, which takes the rest from the settings: the models
(:mod:`personae.commands.models`; the judge is ``--judge-model``/``PERSONAE_JUDGE_MODEL``, else
the strong model), ``CHROMA_HOST``, ``PERSONAE_EMBEDDINGS``, ``PERSONAE_CACHE_DIR``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.degraded import add_max_failures_flag, print_degraded


def register(commands: Any) -> None:
    """Add ``amadeus eval-qa``."""
    from personae.commands.amadeus.chat import add_selection_model_flags
    from personae.commands.amadeus.persona import add_index_flags
    from personae.commands.models import add_model_flags

    parser = commands.add_parser(
        "eval-qa", help="ACC, ACC_L and HS of a role-play method on persona QA (AMADEUS)"
    )
    parser.add_argument(
        "qa", help="QA JSONL ({character, question, answer, attribute}) or iago-othello"
    )
    parser.add_argument(
        "--method", choices=("amadeus", "naive", "none"), default="amadeus", help="role-play method"
    )
    parser.add_argument("--out", type=Path, default=Path("runs/persona-qa"), help="results folder")
    parser.add_argument("--limit", type=int, help="first N items only")
    parser.add_argument("--concurrency", type=int, default=4, help="items at once")
    parser.add_argument("--gs-wave", type=int, default=1, help="Guided Selection checks at once")
    add_max_failures_flag(parser, "QA items")
    add_selection_model_flags(parser)
    add_index_flags(parser)
    add_model_flags(parser, judge=True)
    parser.set_defaults(handler=run)


def _say(line: str) -> None:
    """A runner's progress line, on stderr."""
    sys.stderr.write(f"{line}\n")


def run(args: argparse.Namespace) -> int:
    """Run :func:`~personae.evals.evaluate_persona_qa`; print the report."""
    import asyncio

    from personae.commands.amadeus.chat import agent_context
    from personae.runners.amadeus_qa import evaluate_persona_qa

    agent = agent_context(args, ask=False)  # the runner asks, after checking its inputs
    done = asyncio.run(
        evaluate_persona_qa(
            args.qa,
            context=agent,
            judge_model=args.judge_model or "",
            out=args.out,
            limit=args.limit,
            concurrency=args.concurrency,
            max_failures=args.max_failures,
            progress=_say,
        )
    )
    sys.stdout.write(done.report)
    sys.stdout.write(f"results: {args.out}/\n")
    print_degraded(done.degraded, {"items": done.degraded})
    return 0
