"""`personae profile`: deep-search a character's profile into profile.json, profile.md, card.json.

The flags fill the profiler's run context; what they leave out it takes from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``
(``--base-url``), ``PERSONAE_MODEL`` (``--model``), ``PERSONAE_FAST_MODEL`` (``--fast-model``),
``TAVILY_API_KEY`` (none: wiki only), ``TAVILY_BASE_URL``, ``PERSONAE_CACHE_DIR``,
``PERSONAE_CACHE_TTL`` (``--cache-ttl``), ``PERSONAE_CONTACT``, ``PERSONAE_FANDOM_TEMPLATE``. Runs are checkpointed in
``OUT/.checkpoints.sqlite`` so an interrupted profile resumes where it stopped instead of
starting over. One character is profiled by
:func:`personae.runners.characterhub.profile_character`, a ``--batch`` by
:func:`personae.runners.characterhub_batch.profile_characters` (de-duplication, the paper's
quality filter, concurrency, resume); this module checks the flags, calls the runner and
prints its result.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.models import add_model_flags, model_fields
from personae.degraded import print_degraded
from personae.errors import InputError, NothingUsableError
from personae.files import check_writable_dir
from personae.runners import Progress
from personae.urls import web_url

if TYPE_CHECKING:
    from personae.graphs.characterhub.state import ProfilerContext
    from personae.runners.characterhub_batch import ProfileBatch

DEFAULT_OUT = Path("profiles")


def register(commands: Any) -> None:
    """Add `characterhub profile` (also `personae profile`)."""
    parser = commands.add_parser(
        "profile",
        help="deep-search a character profile (web + wiki) into JSON, Markdown and a V3 card",
    )
    parser.add_argument("name", nargs="?", help="character name, e.g. Kenshiro")
    parser.add_argument("--franchise", help="franchise that disambiguates the name")
    parser.add_argument(
        "--wiki",
        help="pinned wiki root URL, e.g. https://hokuto.fandom.com (with --batch: for the rows "
        "that name no wiki)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument(
        "--method",
        choices=("paper", "planned"),
        default="planned",
        help="paper: CharacterHub's R1/R2 deep search and Table 8 rewrite; planned (default): "
        "our per-dimension planner with coverage reflection",
    )
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=3,
        help="search round cap (default 3); with --method paper, 1 runs R1 only (ablation)",
    )
    parser.add_argument("--max-results", type=int, default=5, help="results per search")
    parser.add_argument(
        "--search-depth", choices=("basic", "advanced"), default="advanced", help="Tavily depth"
    )
    parser.add_argument(
        "--raw-content-results",
        type=int,
        default=2,
        help="top web results per search kept as whole page text (default 2)",
    )
    parser.add_argument("--passage-chars", type=int, default=6000, help="cap of one passage's text")
    parser.add_argument(
        "--evidence-chars",
        type=int,
        default=60_000,
        help="passage text shown to the model in one call",
    )
    parser.add_argument(
        "--card-system-prompt",
        action="store_true",
        help="fill card.json's system_prompt (empty by default: front-ends keep their own)",
    )
    parser.add_argument(
        "--check-citations",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ours: check each fact against its passage and each sentence against the kept facts, "
        "dropping unsupported ones (default: on for planned, off for paper, whose Table 8 "
        "output is kept as written)",
    )
    parser.add_argument(
        "--canon-rule",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ours: tell the prompts which version of the character is canon (default: on for "
        "planned, off for paper, whose prompts have no such rule)",
    )
    parser.add_argument(
        "--search-model",
        help="the paper method's search agent provider:model (the paper: Gemini-2.5-Pro; "
        "default --model)",
    )
    parser.add_argument(
        "--rewrite-model",
        help="the profile rewriter provider:model (the paper: Qwen-plus; default --model)",
    )
    parser.add_argument(
        "--search-sampling",
        metavar="temperature=T,top_p=P,top_k=K",
        help="the search agent's sampling (default with --method paper: Table 3's "
        "temperature=1.0,top_p=0.95,top_k=64; top_k is sent to servers other than OpenAI's API)",
    )
    parser.add_argument(
        "--rewrite-sampling",
        metavar="temperature=T,top_p=P,top_k=K",
        help="the rewriter's sampling (default with --method paper: Table 3's "
        "temperature=0.85,top_p=0.8,top_k=50)",
    )
    parser.add_argument(
        "--exclude-url", action="append", default=[], help="page never used as a source"
    )
    add_model_flags(parser)
    parser.add_argument("--base-url", help="OpenAI-compatible server URL (OPENAI_BASE_URL)")
    parser.add_argument("--no-web", action="store_true", help="search wikis only")
    parser.add_argument(
        "--batch", type=Path, help="CSV with columns name,franchise[,wiki][,source]"
    )
    parser.add_argument(
        "--dedup",
        choices=("personae", "paper"),
        default="personae",
        help="batch de-duplication: personae (default: reordered names and romanisation "
        "variants merged, relatives never) or paper (CharacterHub's rule, literally)",
    )
    parser.add_argument(
        "--franchise-aliases",
        type=Path,
        help="CSV alias,franchise: several titles of one franchise compared as one",
    )
    parser.add_argument("--concurrency", type=int, default=2, help="batch profiles at once")
    parser.add_argument(
        "--server",
        metavar="URL",
        help="profile on this LangGraph server (one thread per character, resumable); "
        "the files are written here as a local run writes them",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="profile again from scratch, even if already profiled or interrupted "
        "(its checkpoints are dropped; cached pages are kept unless --cache-ttl expires them)",
    )
    parser.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="keep a finished run's every checkpoint (default: only the last, which a rerun "
        "writes the files from)",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="when another run is profiling the same character into this folder, stop (exit 3; "
        "with --batch: that row fails) instead of waiting for it and reusing its profile",
    )
    parser.add_argument(
        "--cache-ttl",
        metavar="AGE",
        help="fetch again cached pages older than AGE: seconds, or 30m, 12h, 7d "
        "(PERSONAE_CACHE_TTL; default never)",
    )
    parser.set_defaults(handler=run)


def _check_options(args: argparse.Namespace) -> None:
    """The flags' values, checked before any heavy import (a typo costs a second, not a minute)."""
    if args.batch is None and not (args.name or "").strip():
        raise InputError("the character name is empty", 'pass a name: personae profile "Kenshiro"')
    if args.batch is not None and args.name:
        raise InputError(
            f"both a name ({args.name!r}) and --batch were given",
            "profile one character by name, or every row of --batch",
        )
    if args.wiki is not None:
        web_url(args.wiki, "the wiki URL", "https://hokuto.fandom.com")
    for flag in ("max_rounds", "concurrency", "max_results", "passage_chars", "evidence_chars"):
        if getattr(args, flag) < 1:
            name = "--" + flag.replace("_", "-")
            raise InputError(f"{name} must be at least 1", "pass 1 or more")
    if args.raw_content_results < 0:
        raise InputError("--raw-content-results must be 0 or more", "pass 0 or more")


def make_context(args: argparse.Namespace) -> ProfilerContext:
    """The run context of the flags; the settings fill the rest (models, Tavily, cache)."""
    from personae.graphs.characterhub.state import ProfilerContext

    return ProfilerContext(
        web_search=not args.no_web,
        method=args.method,
        max_rounds=args.max_rounds,
        max_results=args.max_results,
        search_depth=args.search_depth,
        raw_content_results=args.raw_content_results,
        passage_chars=args.passage_chars,
        evidence_chars=args.evidence_chars,
        check_citations=args.check_citations,
        canon_rule=args.canon_rule,
        search_model=args.search_model or "",
        rewrite_model=args.rewrite_model or "",
        search_sampling=args.search_sampling or "",
        rewrite_sampling=args.rewrite_sampling or "",
        exclude_urls=tuple(args.exclude_url),
        cache_ttl=args.cache_ttl or "",
        **model_fields(args),
    )


def _progress() -> Progress:
    if sys.stderr.isatty():
        from rich.console import Console

        console = Console(stderr=True)
        return lambda line: console.print(f"[cyan]•[/cyan] {line}")

    def plain(line: str) -> None:
        sys.stderr.write(line + "\n")

    return plain


def progress_settings(context: ProfilerContext) -> None:
    """Print CharacterHub's settings beside this run's (also kept in each profile.json)."""
    from personae.evals.characterhub.paper_settings import profile_rows
    from personae.evals.paper_settings import settings_text

    title = f"CharacterHub profiling (--method {context.method})"
    sys.stderr.write(settings_text(title, profile_rows(context)))


def print_batch(report: ProfileBatch) -> None:
    """The batch's failures (stderr), its one-line summary (stdout) and its degraded line.

    Raises:
        NothingUsableError: every character run failed (none profiled, none done before).
    """
    failed = report.of("failed")
    for outcome in failed:
        sys.stderr.write(f"failed {outcome.row.name}: {outcome.detail}\n")
    if failed and not (report.counts["profiled"] or report.counts["done"]):
        raise NothingUsableError(
            f"every one of the {len(failed)} characters failed "
            f"(first: {failed[0].row.name}: {failed[0].detail})"
        )
    sys.stdout.write(report.summary() + "\n")
    # A failed character degrades the batch, not the run; rerunning retries it.
    print_degraded(len(failed), {"characters_failed": len(failed)})


def run(args: argparse.Namespace) -> int:
    """Profile one character, or every row of ``--batch``; print where the files went."""
    from personae.memory.characterhub.character_list import read_aliases, read_character_list
    from personae.runners.characterhub import profile_character
    from personae.runners.characterhub_batch import (
        check_profile_run,
        profile_characters,
        report_estimate,
    )

    _check_options(args)
    check_writable_dir(args.out, "--out")
    progress = _progress()
    # --wiki pins the wiki of every row that names none itself.
    rows = read_character_list(args.batch, default_wiki=args.wiki) if args.batch else []
    aliases = read_aliases(args.franchise_aliases) if args.franchise_aliases else None
    context = make_context(args)
    if args.batch:
        report = asyncio.run(
            profile_characters(
                rows,
                out=args.out,
                context=context,
                dedup=args.dedup,
                aliases=aliases,
                concurrency=args.concurrency,
                force=args.force,
                card_system_prompt=args.card_system_prompt,
                keep_checkpoints=args.keep_checkpoints,
                server=args.server,
                wait=not args.no_wait,
                progress=progress,
            )
        )
        progress_settings(context)
        print_batch(report)
        return 0
    check_profile_run(context, local=not args.server)
    report_estimate(context, 1, progress)
    profile = asyncio.run(
        profile_character(
            args.name.strip(),
            franchise=args.franchise,
            wiki=args.wiki,
            out=args.out,
            context=context,
            force=args.force,
            card_system_prompt=args.card_system_prompt,
            progress=progress,
            keep_checkpoints=args.keep_checkpoints,
            server=args.server,
            wait=not args.no_wait,
        )
    )
    progress_settings(context)
    sys.stdout.write(f"{profile.paths.profile_json}\n")
    return 0
