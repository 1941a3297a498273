"""`personae characterhub eval`: the CharacterHub protocol, scoring profiles against reference pages.

``personae characterhub eval DIR_OR_FILES... [--reference URL_OR_FILE | --references FILE.csv]``
extracts knowledge points from each character's reference page (Table 9), labels them against
every profile and its DRInfo (Table 10), micro-averages over all characters and writes a JSON,
Markdown and HTML report (atomically, only once everything succeeded) plus a summary on stdout.
Without a reference, the character's page is found on Fandom, then by web search.

The flags fill a run context, which takes what they leave out from the settings (precedence in
:mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``PERSONAE_MODEL`` (``--model``: the judge unless
``PERSONAE_JUDGE_MODEL`` / ``--judge-model`` names another; the knowledge extractor is the judge
unless ``--extractor-model`` names another, as in the paper), ``PERSONAE_TEMPERATURE``,
``PERSONAE_TOP_P``, ``PERSONAE_CACHE_DIR`` (judge answers under ``judge/``, fetched pages under
``http/``), ``PERSONAE_CONTACT``, ``TAVILY_API_KEY``/``TAVILY_BASE_URL`` and
``PERSONAE_FANDOM_TEMPLATE`` (finding references).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.models import add_model_flags, model_fields
from personae.degraded import add_max_failures_flag, print_degraded
from personae.errors import InputError, NothingUsableError

if TYPE_CHECKING:
    from personae.evals.characterhub.profile_eval import ProfileEvalContext
    from personae.llm import ModelRole
    from personae.run_context import LLMContext

REPORT_NAME = "eval-report.json"


def register(commands: Any) -> None:
    """Add `characterhub eval`."""
    profile = commands.add_parser(
        "eval",
        help="score profiles and their DRInfo against reference wiki pages (CharacterHub)",
    )
    profile.add_argument(
        "profiles", nargs="+", type=Path, help="profile.json files or folders holding them"
    )
    chosen = profile.add_mutually_exclusive_group()
    chosen.add_argument(
        "--reference", help="one character's reference: article URL, saved .html, or .json"
    )
    chosen.add_argument(
        "--references",
        type=Path,
        help="CSV with columns character,reference (URL or file); others are found automatically",
    )
    profile.add_argument(
        "--out",
        type=Path,
        help=f"report path or folder (default: beside the first profile, {REPORT_NAME}; "
        "the .md and .html reports go beside it)",
    )
    add_model_flags(profile, judge=True, fast_help="alias of --extractor-model")
    profile.add_argument(
        "--extractor-model", help="knowledge extractor provider:model (default: the judge model)"
    )
    profile.add_argument(
        "--chunk-tokens",
        type=int,
        help="split the reference into chunks of about N tokens (default: the whole page, "
        "as the paper does)",
    )
    profile.add_argument(
        "--judge-batch",
        type=int,
        help="knowledge points per judge call (default: the whole list, as the paper does)",
    )
    profile.add_argument(
        "--no-density",
        action="store_true",
        help="skip extracting points from each profile and DRInfo (their knowledge density)",
    )
    profile.add_argument(
        "--verify-evidence",
        action="store_true",
        help="ours: drop knowledge points whose evidence is not a quote of the reference (off "
        "by default, as the paper's protocol; the report counts what it would drop)",
    )
    profile.add_argument("--concurrency", type=int, default=8, help="model calls at once")
    add_max_failures_flag(profile, "judgments")
    profile.set_defaults(handler=run_profile)


def make_context(args: argparse.Namespace, models: LLMContext) -> ProfileEvalContext:
    """The evaluation context: judge and extractor (the judge by default), their settings."""
    from personae.evals.characterhub.profile_eval import ProfileEvalContext

    judge = models.judge_spec(args.judge_model or "")
    named = (
        args.extractor_model or args.fast_model
    )  # flags only: the paper's extractor is the judge
    extractor = named or judge
    role: ModelRole = "fast" if named else "judge"
    return ProfileEvalContext(
        judge_model=models.chat_model(judge, "judge"),
        judge_model_name=models.cache_name(judge),
        extractor_model=models.chat_model(extractor, role),
        extractor_model_name=models.cache_name(extractor),
        concurrency=args.concurrency,
        cache_dir=models.settings.cache_dir / "judge",
        chunk_tokens=args.chunk_tokens,
        judge_batch=args.judge_batch,
        density=not args.no_density,
        verify_evidence=args.verify_evidence,
        max_failures=args.max_failures,
        settings={
            "judge": models.describe(judge, "judge"),
            "extractor": models.describe(extractor, role),
        },
    )


def report_path(args: argparse.Namespace) -> Path:
    """``--out`` (a folder gets ``eval-report.json`` inside), else beside the first profile."""
    if args.out is None:
        first: Path = args.profiles[0]
        return (first if first.is_dir() else first.parent) / REPORT_NAME
    out: Path = args.out
    return out / REPORT_NAME if out.is_dir() or not out.suffix else out


def read_references(path: Path) -> dict[str, str]:
    """``{character (case-folded): reference}`` from a CSV ``character,reference``."""
    from personae.files import read_csv, require_file

    require_file(path, "references file", "pass a CSV to --references", pipe_ok=True)

    fieldnames, records = read_csv(path)
    if not {"character", "reference"} <= set(fieldnames):
        raise InputError(
            f"{path} lacks the columns character,reference",
            "start the CSV with a header: character,reference",
        )
    found = {}
    for line, record in enumerate(records, start=2):
        name = record.get("character", "").strip()
        reference = record.get("reference", "").strip()
        if not name or not reference:
            raise InputError(
                f"{path}:{line}: character or reference is empty", "fill in or delete the row"
            )
        found[name.casefold()] = reference
    return found


def _say(line: str) -> None:
    """A runner's progress line, on stderr."""
    sys.stderr.write(f"{line}\n")


def _validate(args: argparse.Namespace) -> None:
    for flag, value in (("--concurrency", args.concurrency), ("--chunk-tokens", args.chunk_tokens)):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be at least 1", "pass 1 or more")
    if args.judge_batch is not None and args.judge_batch < 1:
        raise InputError("--judge-batch must be at least 1", "pass 1 or more")


def run_profile(args: argparse.Namespace) -> int:
    """Score every profile with the runner (it writes the reports); print the summary."""
    from personae.evals.characterhub.profile_eval import (
        collect_profile_files,
        load_profile_document,
    )
    from personae.evals.characterhub.profile_report import format_report
    from personae.files import check_writable_file
    from personae.run_context import LLMContext
    from personae.runners.characterhub_eval import evaluate_profile_files

    _validate(args)
    files = collect_profile_files(args.profiles)
    documents = [(path, load_profile_document(path)) for path in files]
    out = report_path(args)
    check_writable_file(out, "--out")
    table = read_references(args.references) if args.references else {}
    models = LLMContext(**model_fields(args))
    context = make_context(args, models)  # no LLM or a bad spec fails here, before any fetch
    done = asyncio.run(
        evaluate_profile_files(
            documents,
            context=context,
            out=out,
            reference=args.reference,
            references=table,
            settings=models.settings,
            progress=_say,
        )
    )
    report = done.record
    sys.stdout.write(format_report(report) + "\n")
    sys.stdout.write(f"report: {out} (+ .md, .html)\n")
    degraded = report["degraded"]
    kinds = {"judgments": degraded["judgments"], "characters": degraded["characters_left_out"]}
    print_degraded(degraded["total"], kinds)
    if done.left_out and not done.scored:
        # The report still keeps every extracted point (paid for); nothing was scored.
        first = report["left_out"][0]
        raise NothingUsableError(
            f"no character could be scored ({first['character']}: {first['left_out']}); "
            f"the extracted points are kept in {out}",
            "rerun without --verify-evidence, or with a stronger --extractor-model"
            if args.verify_evidence
            else "use a stronger --extractor-model (one that lists the page's facts)",
        )
    return 0
