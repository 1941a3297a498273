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
from urllib.parse import urlsplit

from personae.commands.models import add_model_flags, model_fields
from personae.degraded import add_max_failures_flag, print_degraded
from personae.errors import InputError, NothingUsableError
from personae.urls import web_url

if TYPE_CHECKING:
    from personae.evals.characterhub.profile_eval import (
        CharacterCase,
        ProfileDocument,
        ProfileEvalContext,
    )
    from personae.evals.paper_settings import PaperSetting
    from personae.llm import ModelRole
    from personae.run_context import LLMContext
    from personae.settings import Settings

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


def paper_rows(
    args: argparse.Namespace, context: ProfileEvalContext, documents: list[ProfileDocument]
) -> list[PaperSetting]:
    """The paper's evaluation settings beside this run's (and the profiles' own models)."""
    from personae.evals.characterhub.paper_settings import evaluation_rows

    chunks = "whole page" if args.chunk_tokens is None else f"{args.chunk_tokens}-token chunks"
    return evaluation_rows(
        context.settings,
        extraction=chunks,
        judge_batch="whole knowledge list" if args.judge_batch is None else str(args.judge_batch),
        profile_models=[document.models for document in documents],
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


def _progress(line: str) -> None:
    sys.stderr.write(f"• {line}\n")


def _validate(args: argparse.Namespace) -> None:
    for flag, value in (("--concurrency", args.concurrency), ("--chunk-tokens", args.chunk_tokens)):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be at least 1", "pass 1 or more")
    if args.judge_batch is not None and args.judge_batch < 1:
        raise InputError("--judge-batch must be at least 1", "pass 1 or more")


def group_documents(
    documents: list[tuple[Path, ProfileDocument]],
) -> dict[str, list[tuple[Path, ProfileDocument]]]:
    """Profiles grouped by character (case-insensitive), in first-seen order."""
    groups: dict[str, list[tuple[Path, ProfileDocument]]] = {}
    for path, document in documents:
        groups.setdefault(document.character.casefold(), []).append((path, document))
    return groups


async def build_cases(
    args: argparse.Namespace,
    groups: dict[str, list[tuple[Path, ProfileDocument]]],
    settings: Settings,
) -> list[CharacterCase]:
    """One case per character with its reference: given, from the CSV, or found."""
    from personae.evals.characterhub.profile_eval import CharacterCase
    from personae.evals.characterhub.profile_reference import load_reference
    from personae.evals.characterhub.reference_finder import find_reference
    from personae.tools.http import PoliteHttpClient
    from personae.tools.web_search import TavilySearch

    table = read_references(args.references) if args.references else {}
    if args.reference and len(groups) > 1:
        raise InputError(
            f"--reference names one page but the profiles are of {len(groups)} characters",
            "pass --references FILE.csv with one row per character",
        )
    wiki_pages = [d.wiki_page for docs in groups.values() for _, d in docs if d.wiki_page]
    template = settings.fandom_template.replace("{slug}", "x")
    configured = [web_url(template, "PERSONAE_FANDOM_TEMPLATE", "https://{slug}.fandom.com")]
    configured += wiki_pages
    if settings.tavily_api_key:
        configured.append(settings.tavily_base_url)
    hosts = [urlsplit(u.replace("{slug}", "x")).netloc for u in configured]
    cases = []
    async with PoliteHttpClient.from_settings(settings, allowed_hosts=hosts) as http:
        searcher = (
            TavilySearch.from_settings(settings, http=http) if settings.tavily_api_key else None
        )
        for key, documents in groups.items():
            first = documents[0][1]
            source, found_by = args.reference or table.get(key), "given"
            if not source:
                wiki = next((d.wiki_page for _, d in documents if d.wiki_page), None)
                root = wiki.split("/wiki/")[0] if wiki and "/wiki/" in wiki else None
                source, found_by = await find_reference(
                    first.character,
                    first.franchise,
                    http=http,
                    searcher=searcher,
                    wiki_url=root,
                    fandom_template=settings.fandom_template,
                )
                _progress(f"{first.character}: reference found by {found_by}: {source}")
            reference = await load_reference(source, settings=settings)
            cases.append(CharacterCase(first.character, reference, source, found_by, documents))
    return cases


def announce_cost(cases: list[CharacterCase], context: ProfileEvalContext) -> None:
    """Print the estimated calls and tokens, and the models that will be paid, before a call."""
    from personae.agents.costs import estimate_line
    from personae.evals.characterhub.costs import estimate_profile_eval

    extractor = context.extractor_model_name
    if extractor == context.judge_model_name:
        extractor = "the judge"
    named = {"judge": context.judge_model_name, "extractor": extractor}
    sys.stderr.write(estimate_line(estimate_profile_eval(cases, context), named))


def run_profile(args: argparse.Namespace) -> int:
    """Score every profile; write the JSON, Markdown and HTML reports and print the summary."""
    from personae.evals.characterhub.profile_eval import (
        collect_profile_files,
        evaluate_characters_into,
        load_profile_document,
    )
    from personae.evals.characterhub.profile_report import format_report
    from personae.evals.paper_settings import rows_json, settings_text
    from personae.files import CACHE_FIX, check_writable_dir, check_writable_file

    _validate(args)
    files = collect_profile_files(args.profiles)
    documents = [(path, load_profile_document(path)) for path in files]
    out = report_path(args)
    check_writable_file(out, "--out")
    from personae.run_context import LLMContext

    models = LLMContext(**model_fields(args))
    context = make_context(args, models)  # no LLM or a bad spec fails here, before any fetch
    check_writable_dir(models.settings.cache_dir, "PERSONAE_CACHE_DIR", CACHE_FIX)

    async def evaluate() -> dict[str, Any]:
        cases = await build_cases(args, group_documents(documents), models.settings)
        announce_cost(cases, context)
        sys.stderr.write(settings_text("CharacterHub Table 1", rows))
        return await evaluate_characters_into(
            out, cases, context, paper_settings=rows_json(rows), progress=_progress
        )

    rows = paper_rows(args, context, [document for _, document in documents])
    report = asyncio.run(evaluate())
    sys.stdout.write(format_report(report) + "\n")
    sys.stdout.write(f"report: {out} (+ .md, .html)\n")
    degraded = report["degraded"]
    kinds = {"judgments": degraded["judgments"], "characters": degraded["characters_left_out"]}
    print_degraded(degraded["total"], kinds)
    if report["left_out"] and not report["characters"]:
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
