"""`personae arcane build-arcs|show-arc|annotate-arcs`: a novel's character arcs; show; annotate.

``personae arcane build-arcs BOOK --character NAME...`` prints the estimated calls and tokens first
(from chapter lengths) and asks for ``--yes`` above ``--confirm-above`` tokens; builds are
checkpointed per chapter in ``DATA/novels/<slug>/.checkpoints.sqlite`` (a killed build resumes
where it stopped) and every call is cached. Eval-split builds pause for human validity votes:
``personae arcane annotate-arcs BOOK --export SHEET.csv`` writes the sheet, ``--import VOTES.csv``
resumes them. ``personae arcane show-arc BOOK --character NAME --chapter N`` prints exactly the Arc
payload a role-play at chapter N sees.

The flags fill the ARCANE run context, which takes what they leave out from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL`` (``--model``), ``PERSONAE_DATA_DIR`` (``--data``), ``PERSONAE_CACHE_DIR``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.commands.arcane import cache_note
from personae.commands.arcane.novel import add_data_flag, context_fields, data_dir
from personae.degraded import RERUN_ASKS_AGAIN, print_degraded
from personae.errors import InputError

DEFAULT_CONFIRM_ABOVE = 500_000


def register(commands: Any) -> None:
    """Add `arcane build-arcs`, `arcane show-arc` and `arcane annotate-arcs`."""
    from personae.commands.models import add_model_flags

    build = commands.add_parser("build-arcs", help="build arcs (T12-T16) for characters of a novel")
    build.add_argument("book", help="book slug or title")
    build.add_argument("--character", action="append", default=[], help="repeatable")
    build.add_argument(
        "--suggest",
        nargs="?",
        const=15,
        type=int,
        metavar="N",
        help="list the N (15) names mentioned most, as candidates for --character; no build",
    )
    build.add_argument("--split", default="train", choices=["train", "eval", "unvalidated"])
    build.add_argument("--critic-model", help="critic model provider:model (default --model)")
    build.add_argument("--yes", action="store_true", help="accept a large estimated cost")
    build.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="keep a finished build's every checkpoint (default: only the last)",
    )
    build.add_argument(
        "--confirm-above",
        type=int,
        default=DEFAULT_CONFIRM_ABOVE,
        help=f"estimated tokens that need --yes (default {DEFAULT_CONFIRM_ABOVE:,})",
    )
    add_data_flag(build)
    add_model_flags(build)
    build.set_defaults(handler=run_build)
    show = commands.add_parser("show-arc", help="the Arc payload a role-play at a chapter sees")
    show.add_argument("book", help="book slug or title")
    show.add_argument("--character", required=True)
    show.add_argument("--axis", help="one axis id (default: all the character's axes)")
    show.add_argument(
        "--chapter",
        dest="at_chapter",
        type=int,
        metavar="N",
        help="query chapter (default: the last)",
    )
    add_data_flag(show)
    show.set_defaults(handler=run_show)
    annotate = commands.add_parser("annotate-arcs", help="export / import human validity votes")
    annotate.add_argument("book", help="book slug or title")
    group = annotate.add_mutually_exclusive_group(required=True)
    group.add_argument("--export", type=Path, help="write the annotation sheet (CSV)")
    group.add_argument("--import", dest="votes", type=Path, help="votes CSV: resume the builds")
    add_data_flag(annotate)
    add_model_flags(annotate)
    annotate.set_defaults(handler=run_annotate)


def _progress(line: str) -> None:
    sys.stderr.write(f"• {line}\n")


def run_build(args: argparse.Namespace) -> int:
    """Estimate, confirm, then build (or resume) each character's arcs."""
    import asyncio

    from personae.agents.arcane.costs import estimate_arc_build
    from personae.memory.arcane.novel_store import open_novel

    novel = open_novel(data_dir(args), args.book)
    if args.suggest is not None:
        return suggest(novel, args.suggest)
    if not args.character:
        raise InputError(
            "arcane build-arcs needs at least one --character",
            f"pass --character NAME (repeatable); personae arcane build-arcs {novel.slug} --suggest "
            "lists candidates",
        )
    characters = [novel.check_character(name) for name in dict.fromkeys(args.character)]
    estimate = estimate_arc_build(novel, characters)
    calls, tokens = estimate.per_chapter_and_character
    sys.stdout.write(
        f"estimated: {estimate.calls:,} LLM calls, ~{estimate.tokens:,} tokens for "
        f"{len(characters)} character(s) x {novel.count} chapters "
        f"({calls:.1f} calls, ~{tokens:,.0f} tokens per chapter and character)\n"
    )
    if estimate.tokens > args.confirm_above and not args.yes:
        raise InputError(
            f"the estimated {estimate.tokens:,} tokens exceed --confirm-above "
            f"{args.confirm_above:,}",
            "rerun with --yes to accept the cost (cached calls are not paid again)",
        )
    from personae.graphs.arcane.arc_build import ArcBuildContext

    context = ArcBuildContext(critic_model=args.critic_model or "", **context_fields(args))
    context.llm("strong")  # no LLM or a bad spec fails here, before any work
    for character in characters:
        asyncio.run(_build_one(novel.slug, character, args.split, context, args.keep_checkpoints))
    return 0


def suggest(novel: Any, top: int) -> int:
    """Print the names mentioned most (spec default 37); the user picks the principals."""
    from personae.tools.arcane.name_mentions import rank_names

    if top < 1:
        raise InputError("--suggest must be at least 1", "pass --suggest N with N >= 1")
    ranked = rank_names((novel.chapter(i).text for i in range(1, novel.count + 1)), top)
    if not ranked:
        raise InputError(
            f"no name occurs 3 times or more in {novel.title!r}",
            "check the import (personae arcane chapters) or pass --character NAME",
        )
    sys.stdout.write(f"{novel.title}: names by mentions (places and titles included)\n")
    for rank, (name, count) in enumerate(ranked, 1):
        sys.stdout.write(f"{rank:>3}. {name} ({count:,})\n")
    sys.stdout.write(
        f'build with: personae arcane build-arcs {novel.slug} --character "{ranked[0][0]}"\n'
    )
    return 0


async def _build_one(
    slug: str, character: str, split: str, context: Any, keep: bool = False
) -> None:
    from personae.runners.arcane import build_arcs

    build = await build_arcs(
        slug, character, split=split, context=context, progress=_progress, keep_checkpoints=keep
    )
    if build.ran:
        _report(character, build.values, build.waiting_for_votes, slug)


def _report(character: str, values: dict[str, Any], waiting: bool, slug: str) -> None:
    out = sys.stdout
    if waiting:
        out.write(
            f"{character}: {len(values.get('arcs', []))} axes await human votes: "
            f"personae arcane annotate-arcs {slug} --export SHEET.csv\n"
        )
        return
    usage = values.get("usage", {})
    out.write(
        f"{character}: {len(values.get('arcs', []))} arcs kept, {len(values.get('dropped', []))} "
        f"dropped; {usage.get('llm_calls', 0)} LLM calls, "
        f"{usage.get('input_tokens', 0) + usage.get('output_tokens', 0):,} tokens"
        f"{cache_note(usage.get('cache_hits', 0))}\n"
    )
    for line in [*values.get("dropped", []), *values.get("flags", [])]:
        out.write(f"  {line}\n")
    degraded = list(values.get("degraded", []))
    for line in degraded:
        out.write(f"  degraded item: {line}\n")
    if degraded:
        from personae.graphs.arcane.arc_build import degraded_kinds

        out.flush()
        note = f"model answers still invalid after retries (listed above); {RERUN_ASKS_AGAIN}"
        print_degraded(len(degraded), degraded_kinds(degraded), note)


def run_show(args: argparse.Namespace) -> int:
    """Print the Arc-mode payload at ``--chapter`` (default: the whole arc)."""
    from personae.agents.arcane.roleplayer import arc_context
    from personae.memory.arcane.novel_store import open_novel
    from personae.memory.arcane.records import load_arcs

    novel = open_novel(data_dir(args), args.book)
    chapter = novel.check_chapter(args.at_chapter if args.at_chapter is not None else novel.count)
    arcs = [a for a in load_arcs(novel.folder) if a.character == args.character]
    if not arcs:
        raise InputError(
            f"no arcs for {args.character!r} in {novel.slug}",
            f"run personae arcane build-arcs {novel.slug} --character {args.character!r}",
        )
    if args.axis:
        arcs = [a for a in arcs if a.axis_id == args.axis]
        if not arcs:
            raise InputError(
                f"unknown axis {args.axis!r} for {args.character!r}", "see personae arcane show-arc"
            )
    sys.stdout.write(arc_context(arcs, chapter) + "\n")
    return 0


def run_annotate(args: argparse.Namespace) -> int:
    """Export the sheet of every build waiting for votes, or import votes and resume them."""
    import asyncio

    from personae.graphs.arcane.arc_build import ArcBuildContext
    from personae.memory.arcane.novel_store import open_novel
    from personae.runners.arcane_votes import export_vote_sheet, read_votes, resume_with_votes

    slug = open_novel(data_dir(args), args.book).slug  # an unknown book: one line, first
    context = ArcBuildContext(**context_fields(args))
    if args.export is not None:
        sheet = asyncio.run(export_vote_sheet(args.book, args.export, context=context))
        sys.stdout.write(f"{sheet.axes} axes to annotate written to {sheet.path}\n")
        return 0
    votes = read_votes(args.votes)
    context.llm("strong")  # no LLM or a bad spec fails here, before any work
    for build in asyncio.run(resume_with_votes(args.book, votes, context=context)):
        _report(build.character, build.values, build.waiting_for_votes, slug)
    return 0
