"""`personae profile`: deep-search a character's profile into profile.json, profile.md, card.json.

The flags fill the profiler's run context; what they leave out it takes from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``
(``--base-url``), ``PERSONAE_MODEL`` (``--model``), ``PERSONAE_FAST_MODEL`` (``--fast-model``),
``TAVILY_API_KEY`` (none: wiki only), ``TAVILY_BASE_URL``, ``PERSONAE_CACHE_DIR``,
``PERSONAE_CACHE_TTL`` (``--cache-ttl``), ``PERSONAE_CONTACT``, ``PERSONAE_FANDOM_TEMPLATE``. Runs are checkpointed in
``OUT/.checkpoints.sqlite`` so an interrupted profile resumes where it stopped instead of
starting over. Each character is profiled by the CharacterHub runner
(:func:`personae.runners.characterhub.profile_character`); this module parses flags, reads the
batch and reports.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.characterhub.batch import (
    BatchReport,
    BatchRow,
    deduplicate,
    read_aliases,
    read_batch,
    run_batch,
)
from personae.commands.models import add_model_flags, model_fields
from personae.degraded import print_degraded
from personae.errors import InputError, NothingUsableError
from personae.files import CACHE_FIX, check_writable_dir
from personae.urls import web_url

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from personae.graphs.characterhub.state import ProfilerContext
    from personae.memory.characterhub.profile_store import ProfilePaths
    from personae.server_runs import ServerRuns

DEFAULT_OUT = Path("profiles")
Progress = Callable[[str], None]


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
        "--cache-ttl",
        metavar="AGE",
        help="fetch again cached pages older than AGE: seconds, or 30m, 12h, 7d "
        "(PERSONAE_CACHE_TTL; default never)",
    )
    parser.set_defaults(handler=run)


def thread_id(row: BatchRow, context: ProfilerContext) -> str:
    """Checkpoint thread of one profile (see :func:`personae.runners.characterhub.profile_thread`)."""
    from personae.runners.characterhub import profile_thread

    return profile_thread(row.name, row.franchise, row.wiki, context, source=row.source)


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


async def profile_one(
    row: BatchRow,
    context: ProfilerContext,
    out_dir: Path,
    progress: Progress,
    card_system_prompt: bool = False,
    *,
    force: bool = False,
    keep_checkpoints: bool = False,
    saver: BaseCheckpointSaver[Any] | None,
    server: ServerRuns | None = None,
) -> ProfilePaths:
    """Profile one row with the runner, on the command's one checkpointer or server client."""
    from personae.runners.characterhub import profile_character

    profile = await profile_character(
        row.name,
        franchise=row.franchise,
        wiki=row.wiki,
        out=out_dir,
        context=context,
        force=force,
        card_system_prompt=card_system_prompt,
        progress=progress,
        checkpointer=saver,
        source=row.source,
        keep_checkpoints=keep_checkpoints,
        server=server,
    )
    return profile.paths


async def profile_single(
    row: BatchRow, context: ProfilerContext, args: argparse.Namespace, progress: Progress
) -> ProfilePaths:
    """Profile the one character named on the command line (here, or on ``--server``)."""
    async with _runs_on(args, context) as (saver, server):
        return await profile_one(
            row,
            context,
            args.out,
            progress,
            args.card_system_prompt,
            force=args.force,
            keep_checkpoints=args.keep_checkpoints,
            saver=saver,
            server=server,
        )


@asynccontextmanager
async def _runs_on(
    args: argparse.Namespace, context: ProfilerContext
) -> AsyncIterator[tuple[BaseCheckpointSaver[Any] | None, ServerRuns | None]]:
    """Where the command's profiles run: ``--out``'s checkpointer, or one ``--server`` client."""
    from personae.runners.characterhub import open_checkpoints, profile_server_runs

    if args.server:
        async with profile_server_runs(args.server, args.out) as server:
            yield None, server
    else:
        async with open_checkpoints(args.out, context.settings) as saver:
            yield saver, None


async def profile_rows(
    rows: list[BatchRow], context: ProfilerContext, args: argparse.Namespace, progress: Progress
) -> BatchReport:
    """Profile a batch's rows, ``--concurrency`` at a time, over one shared checkpointer.

    With ``--server`` each row runs on that LangGraph server (one client for the batch, one
    thread per row) and is written here the same way.
    """
    from personae.memory.characterhub.profile_store import paths_for

    async with _runs_on(args, context) as (saver, server):
        return await run_batch(
            rows,
            lambda row: profile_one(
                row,
                context,
                args.out,
                progress,
                args.card_system_prompt,
                force=args.force,
                keep_checkpoints=args.keep_checkpoints,
                saver=saver,
                server=server,
            ),
            done=lambda row: (
                not args.force
                and paths_for(args.out, row.name, row.franchise).profile_json.exists()
            ),
            concurrency=args.concurrency,
        )


def _progress() -> Progress:
    if sys.stderr.isatty():
        from rich.console import Console

        console = Console(stderr=True)
        return lambda line: console.print(f"[cyan]•[/cyan] {line}")

    def plain(line: str) -> None:
        sys.stderr.write(line + "\n")

    return plain


def quality_filter(
    rows: list[BatchRow], aliases: dict[str, str] | None
) -> tuple[list[BatchRow], list[tuple[BatchRow, str]]]:
    """CharacterHub's quality control: rows kept, and rows dropped with the reason."""
    from personae.commands.characterhub.dedup import paper_quality_reason

    kept: list[BatchRow] = []
    removed: list[tuple[BatchRow, str]] = []
    for row in rows:
        reason = paper_quality_reason(row.franchise, aliases)
        if reason is None:
            kept.append(row)
        else:
            removed.append((row, reason))
    return kept, removed


def progress_settings(context: ProfilerContext) -> None:
    """Print CharacterHub's settings beside this run's (also kept in each profile.json)."""
    from personae.evals.characterhub.paper_settings import profile_rows
    from personae.evals.paper_settings import settings_text

    title = f"CharacterHub profiling (--method {context.method})"
    sys.stderr.write(settings_text(title, profile_rows(context)))


def check_late_settings(context: ProfilerContext, *, local: bool) -> None:
    """Check the settings the run reads only once it started, so a typo comes before the estimate.

    ``local``: the checkpoints are kept here (not on a ``--server``).
    """
    from personae.settings import check_checkpointer_spec

    if local:
        check_checkpointer_spec(context.settings.checkpointer)
    template = context.fandom_template.replace("{slug}", "x")
    web_url(template, "PERSONAE_FANDOM_TEMPLATE", "https://{slug}.fandom.com")


def announce_cost(context: ProfilerContext, characters: int) -> None:
    """Print at most what profiling ``characters`` costs, and the models paid, before a call."""
    from personae.agents.costs import Estimate, estimate_line
    from personae.runners.characterhub import estimate_profile

    one = estimate_profile(context)
    estimate = Estimate(one.calls * characters, one.tokens * characters, one.detail)
    if characters != 1:
        estimate = Estimate(
            estimate.calls, estimate.tokens, f"{characters} characters: {one.detail}"
        )
    models = {"model": context.model, "fast model": context.fast_model}
    sys.stderr.write("personae: " + estimate_line(estimate, models))
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    """Profile one character, or every row of ``--batch``; print where the files went."""
    from personae.memory.characterhub.profile_store import profile_key

    _check_options(args)
    check_writable_dir(args.out, "--out")
    progress = _progress()
    # --wiki pins the wiki of every row that names none itself.
    rows = read_batch(args.batch, default_wiki=args.wiki) if args.batch else []
    context = make_context(args)
    context.llm("strong")  # no LLM or a bad spec fails here, before any fetch
    context.llm("fast")
    context.role_llm("rewrite")
    context.role_llm("search")
    if context.cache_dir:
        check_writable_dir(Path(context.cache_dir), "PERSONAE_CACHE_DIR", CACHE_FIX)
    check_late_settings(context, local=not args.server)
    if not args.batch:
        announce_cost(context, 1)
        row = BatchRow(name=args.name.strip(), franchise=args.franchise, wiki=args.wiki)
        paths = asyncio.run(profile_single(row, context, args, progress))
        progress_settings(context)
        sys.stdout.write(f"{paths.profile_json}\n")
        return 0
    aliases = read_aliases(args.franchise_aliases) if args.franchise_aliases else None
    kept, dropped = deduplicate(
        rows,
        key=lambda row: profile_key(row.name, row.franchise),
        rule=args.dedup,
        aliases=aliases,
    )
    for duplicate, original in dropped:
        progress(f"skipped {duplicate.name!r}: duplicate of {original.name!r}")
    filtered = 0
    if args.dedup == "paper":  # §3.1: de-duplication, then the quality filter
        kept, removed = quality_filter(kept, aliases)
        for row, reason in removed:
            progress(f"skipped {row.name!r}: {reason} (the paper's quality filter)")
        filtered = len(removed)
        if aliases is None:
            progress(
                "notice: no --franchise-aliases: the quality filter drops rows without a "
                "franchise only (the paper also drops franchises its alias table lacks)"
            )
    announce_cost(context, len(kept))
    report = asyncio.run(profile_rows(kept, context, args, progress))
    progress_settings(context)
    for row, error in report.failed:
        sys.stderr.write(f"failed {row.name}: {error}\n")
    if report.failed and not (report.written or report.skipped):
        raise NothingUsableError(
            f"every one of the {len(report.failed)} characters failed "
            f"(first: {report.failed[0][0].name}: {report.failed[0][1]})"
        )
    sys.stdout.write(
        f"{len(report.written)} profiled, {len(report.skipped)} already done, "
        f"{len(dropped)} duplicates, {filtered} filtered, {len(report.failed)} failed\n"
    )
    # A failed character degrades the batch, not the run; rerunning retries it.
    print_degraded(len(report.failed), {"characters_failed": len(report.failed)})
    return 0
