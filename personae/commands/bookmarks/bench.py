"""`personae bookmarks bench`: run the BOOKMARKS benchmark for one or more methods.

The flags go to the benchmark's models and the method graphs' contexts, which fill what they
leave out from the settings (precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``PERSONAE_MODEL`` (``--model``), ``PERSONAE_FAST_MODEL``
(``--fast-model``), ``PERSONAE_JUDGE_MODEL`` (``--judge-model``; default ``openai:gpt-4.1``, the
paper's judge), ``PERSONAE_TEMPERATURE`` (``--temperature``; default 0 for every role,
near-deterministic as the released runner), ``CHROMA_HOST``/``CHROMA_PORT`` and
``PERSONAE_EMBEDDINGS`` (``--embedding``: BOOKMARKS' and RICL's memory); judge verdicts are
cached in ``PERSONAE_CACHE_DIR/judge``. A rerun of the same command resumes:
finished instances are skipped, cached verdicts are reused, and the instance that was running
resumes from its checkpoint in the memory folder (only its in-flight LLM calls are paid again).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from pathlib import Path
from typing import Any

from personae.commands.bookmarks.options import add_roles_flag, add_title_flags
from personae.commands.models import add_embedding_flag, add_model_flags, model_fields
from personae.degraded import add_max_failures_flag, print_degraded
from personae.errors import InputError
from personae.files import CACHE_FIX, check_writable_dir

DEFAULT_OUT = Path("runs/bench")
METHOD_NAMES = ("bookmarks", "bookmarks-personae", "vanilla", "ricl", "eta")
ABLATION_NAMES = ("no-reuse", "no-derive", "no-near", "ibu", "with-profile")
"""Kept in step with ``personae.evals.bookmarks.bench.ABLATIONS`` (a test checks)."""


def register(commands: Any) -> None:
    """Add `bookmarks bench`."""
    bookmarks = commands.add_parser(
        "bench",
        help="BOOKMARKS: predict each major character's next actions (second half of the story)",
    )
    bookmarks.add_argument("storylines", nargs="+", metavar="STORYLINE", help="storyline file")
    bookmarks.add_argument(
        "--method",
        action="append",
        dest="methods",
        metavar="METHOD",
        help=f"method to run, repeatable or comma-separated: {'|'.join(METHOD_NAMES)} "
        "(default bookmarks: the paper's method with the released runner's prompts; "
        "bookmarks-personae: ours); ablate either with +NAME: "
        f"{', '.join('bookmarks+' + a for a in ABLATION_NAMES)} (combine: bookmarks+no-derive+no-reuse)",
    )
    bookmarks.add_argument(
        "--characters",
        nargs="+",
        metavar="NAME",
        help="only these characters (default: the major characters of all_characters.json "
        "beside each storyline file; required when there is none)",
    )
    bookmarks.add_argument("--limit", type=int, help="test instances per character (default all)")
    bookmarks.add_argument(
        "--judge-method",
        dest="judge",
        default="exact",
        metavar="exact|nli",
        help="exact (key move, 100/0) or nli",
    )
    bookmarks.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    bookmarks.add_argument("--memory", type=Path, help="memory folder (default OUT/memory)")
    bookmarks.add_argument(
        "--concurrency",
        type=int,
        default=2,
        help="storylines (x methods) at once; one storyline's characters always run in one "
        "story order, so results do not depend on it",
    )
    add_roles_flag(bookmarks)
    add_title_flags(bookmarks)
    bookmarks.add_argument(
        "--server",
        metavar="URL",
        default="",
        help="run the method steps on this LangGraph server (langgraph dev, a deployment): one "
        "thread per instance, resumable; results are written here as a local run writes them",
    )
    add_max_failures_flag(bookmarks, "bench instances")
    add_model_flags(
        bookmarks,
        judge=True,
        judge_default="openai:gpt-4.1, the paper's",
        temperature_default="0 for every role, as the released runner's 1e-8",
    )
    add_embedding_flag(bookmarks)
    bookmarks.set_defaults(handler=run_bookmarks)


def _methods(args: argparse.Namespace) -> tuple[str, ...]:
    names = [n.strip() for given in args.methods or ["bookmarks"] for n in given.split(",")]
    if not all(names):
        raise InputError("an empty --method was given", f"use {'|'.join(METHOD_NAMES)}")
    return tuple(dict.fromkeys(names))


def run_bookmarks(args: argparse.Namespace) -> int:
    """Run or resume the benchmark; print Table 2 and where the files went."""
    from personae.evals.bookmarks.bench import BenchContext, run_bench
    from personae.evals.bookmarks.report import score_tables_markdown
    from personae.evals.paper_settings import PaperSetting, settings_text
    from personae.progress_bar import stderr_progress

    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be at least 1, got {args.limit}", "pass 1 or more")
    check_writable_dir(args.out, "--out")
    if args.memory is not None:
        check_writable_dir(args.memory, "--memory")
    methods = _methods(args)
    context = BenchContext(
        memory_dir=args.memory,
        judge_model=args.judge_model or "",
        judge=args.judge,
        characters=tuple(args.characters or ()),
        limit=args.limit,
        concurrency=args.concurrency,
        hide_title=args.hide_title,
        roles=args.roles,
        embedding=args.embedding,
        **model_fields(args),
        max_failures=args.max_failures,
        server_url=args.server,
    )
    models = context.models()  # the models the settings rule chose, asked for before any work
    models.llm("strong")
    models.llm("fast")
    models.chat_model(models.judge_model, "judge")
    cache = models.settings.cache_dir
    check_writable_dir(cache, "PERSONAE_CACHE_DIR", CACHE_FIX)
    context = dataclasses.replace(context, judge_cache=cache / "judge")  # shared across --out
    progress = stderr_progress()
    try:
        outcome = asyncio.run(
            run_bench(
                args.storylines, methods=methods, out=args.out, context=context, progress=progress
            )
        )
    finally:
        progress.close()
    rejudged = (
        f" ({outcome.rejudged} re-judged from earlier predictions)" if outcome.rejudged else ""
    )
    if outcome.summary["methods"]:  # with no shared instance, each method's own table
        sys.stdout.write(score_tables_markdown(outcome.summary) + "\n\n")
    rows = [
        PaperSetting(r["setting"], r["paper"], r["used"])
        for r in outcome.summary.get("paper_settings", [])
    ]
    if rows:
        sys.stderr.write(settings_text("BOOKMARKS Table 2", rows))
    plural = "s" if outcome.resumed > 1 else ""
    resumed = f" ({outcome.resumed} interrupted step{plural} resumed)" if outcome.resumed else ""
    kinds: dict[str, int] = {}  # per method: the rows of Table 2 degrade apart
    for failure in outcome.summary.get("failed", {}).get("failures", []):
        key = f"{failure['method']} failed_instances"
        kinds[key] = kinds.get(key, 0) + 1
    for method, answers in outcome.summary.get("degraded_answers", {}).items():
        kinds[f"{method} answers"] = int(answers)
    print_degraded(sum(kinds.values()), kinds)
    sys.stdout.write(
        f"{outcome.ran} instances run{rejudged}{resumed}, {outcome.skipped} already done; "
        f"results in {args.out / 'results.jsonl'}, summary in {outcome.summary_path}, "
        f"report in {outcome.report_paths[0]}\n"
    )
    return 0
