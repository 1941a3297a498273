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
from personae.errors import InputError


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


def _progress(line: str) -> None:
    sys.stderr.write(f"• {line}\n")


def run(args: argparse.Namespace) -> int:
    """Check the items' characters are indexed, run, print the report."""
    import asyncio

    from personae.commands.amadeus.chat import agent_context
    from personae.commands.amadeus.persona import index_options
    from personae.evals.amadeus.paper_settings import persona_qa_settings
    from personae.evals.amadeus.persona_qa import QARun, load_qa, render_report, run_persona_qa
    from personae.evals.paper_settings import settings_text
    from personae.runners.amadeus import open_indexed_persona

    if args.concurrency < 1 or (args.limit is not None and args.limit < 1):
        raise InputError("--concurrency and --limit must be at least 1", "pass 1 or more")
    items = load_qa(args.qa)[: args.limit]
    agent = agent_context(args)
    judge = agent.judge_spec(args.judge_model or "")
    judge_model = agent.chat_model(judge, "judge")  # a bad judge spec fails before any work
    options = index_options(args, agent)
    for character in sorted({item.character for item in items}):
        open_indexed_persona(character, options)
    settings = persona_qa_settings(
        agent,
        items=len(items),
        characters=len({item.character for item in items}),
        judge=agent.cache_name(judge),
    )
    sys.stderr.write(settings_text("AMADEUS Table 6", settings))
    summary = asyncio.run(
        run_persona_qa(
            QARun(
                items=items,
                agent=agent,
                judge=judge_model,
                judge_name=agent.cache_name(judge),
                cache_dir=agent.settings.cache_dir / "judge",
                out_dir=args.out,
                concurrency=args.concurrency,
                progress=_progress,
                max_failures=args.max_failures,
                settings=settings,
            )
        )
    )
    sys.stdout.write(render_report(summary))
    sys.stdout.write(f"results: {args.out}/\n")
    print_degraded(summary["degraded"]["items"], {"items": summary["degraded"]["items"]})
    return 0
