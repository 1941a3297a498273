"""`personae arcane build-probes`: ARCANE probes for every arc of a novel (or of one character).

For each arc: decision variable, life stages and era-free axis, then 3N cells (one per anchor
phase and probe type), each validated; the result replaces the arc's probes in
``DATA/novels/<slug>/probes.jsonl``. Every call is cached, so a rerun costs nothing it paid for.

The flags fill the ARCANE run context, which takes what they leave out from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL`` (``--model``), ``PERSONAE_DATA_DIR`` (``--data``), ``PERSONAE_CACHE_DIR``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from personae.commands.arcane import cache_note
from personae.commands.arcane.novel import add_data_flag, context_fields, data_dir
from personae.degraded import print_degraded
from personae.errors import InputError

TYPE_NAMES = ("in_scenario", "in_world", "out_of_world")


def register(commands: Any) -> None:
    """Add `arcane build-probes`."""
    from personae.commands.models import add_model_flags

    build = commands.add_parser("build-probes", help="build validated probes for a novel's arcs")
    build.add_argument("book", help="book slug or title")
    build.add_argument("--character", help="only this character's arcs")
    build.add_argument(
        "--types", default=",".join(TYPE_NAMES), help=f"comma-separated: {', '.join(TYPE_NAMES)}"
    )
    build.add_argument("--validator-model", help="validator model provider:model (default --model)")
    add_data_flag(build)
    add_model_flags(build)
    build.set_defaults(handler=run_build)


def parse_types(text: str) -> list[str]:
    """The probe types of ``--types``; one-line error for an unknown one."""
    types = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in types if t not in TYPE_NAMES]
    if bad or not types:
        raise InputError(
            f"unknown probe type {(bad or [text])[0]!r}", f"use {', '.join(TYPE_NAMES)}"
        )
    return types


def run_build(args: argparse.Namespace) -> int:
    """Build the probes of every selected arc; print probes kept per arc."""
    import asyncio

    from personae.graphs.arcane.probe_build import build_graph
    from personae.graphs.arcane.probe_cell import ProbeBuildContext
    from personae.memory.arcane.novel_store import open_novel
    from personae.memory.arcane.records import load_arcs

    types = parse_types(args.types)
    novel = open_novel(data_dir(args), args.book)
    arcs = [a for a in load_arcs(novel.folder) if args.character in (None, a.character)]
    if not arcs:
        who = f" for {args.character!r}" if args.character else ""
        raise InputError(
            f"no arcs{who} in {novel.slug}",
            f"run personae arcane build-arcs {novel.slug} --character NAME",
        )
    context = ProbeBuildContext(validator_model=args.validator_model or "", **context_fields(args))
    context.llm("strong")  # no LLM or a bad spec fails here, before any work
    total = degraded = 0
    for arc in arcs:
        payload: Any = {
            "novel": novel.slug,
            "character": arc.character,
            "axis_id": arc.axis_id,
            "types": types,
        }
        result = asyncio.run(build_graph().ainvoke(payload, context=context))
        total += len(result["probes"])
        usage = result["usage"]
        sys.stdout.write(
            f"{arc.character} / {arc.axis_id}: {len(result['probes'])} probes kept of "
            f"{len(types) * len(arc.trajectory)} cells; {usage['llm_calls']} LLM calls"
            f"{cache_note(usage.get('cache_hits', 0))}\n"
        )
        for line in result["dropped"]:
            sys.stdout.write(f"  {line}\n")
        degraded += int(usage.get("degraded", 0))
    sys.stdout.write(
        f"{total} probes over {len(arcs)} arcs written to {novel.folder / 'probes.jsonl'}\n"
    )
    sys.stdout.flush()
    print_degraded(degraded)
    return 0
