"""`personae eval`: the papers' evaluation protocols; `eval profile` scores profiles (CharacterHub).

``personae eval profile PROFILE.json [PROFILE2.json ...] --reference URL_OR_FILE`` extracts
knowledge points from the reference wiki page, judges each against every profile and writes a
JSON report (atomically, only once everything succeeded) plus a table on stdout. Passing a
profile made with the reference page and one made with ``--exclude-url REFERENCE_URL`` gives the
"reference allowed / excluded" comparison.

Environment read here, at the edge (flags win; precedence in :mod:`personae.commands.models`):
``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``PERSONAE_MODEL`` (``--model``: the judge unless
``PERSONAE_JUDGE_MODEL`` / ``--judge-model`` names another), ``PERSONAE_FAST_MODEL``
(``--fast-model``: the knowledge extractor), ``PERSONAE_CACHE_DIR`` (judge answers under
``judge/``, fetched pages under ``http/``), ``PERSONAE_CONTACT`` (User-Agent when fetching a
reference URL).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.models import add_model_flags, resolve_models
from personae.errors import InputError

if TYPE_CHECKING:
    from personae.commands.models import CommandModels
    from personae.evals.profile_eval import ProfileEvalContext

REPORT_NAME = "eval-report.json"


def register(commands: Any) -> None:
    """Add the `eval` command and its `profile` protocol."""
    parser = commands.add_parser("eval", help="run an evaluation protocol")
    protocols = parser.add_subparsers(dest="protocol", required=True)
    profile = protocols.add_parser(
        "profile",
        help="score profile.json files against a reference wiki page (CharacterHub protocol)",
    )
    profile.add_argument("profiles", nargs="+", type=Path, help="profile.json files to score")
    profile.add_argument(
        "--reference",
        required=True,
        help="reference wiki page: article URL, saved .html page, or normalised .json",
    )
    profile.add_argument(
        "--out", type=Path, help=f"report path (default: next to the first profile, {REPORT_NAME})"
    )
    add_model_flags(profile, judge=True, fast_help="knowledge extractor model")
    profile.add_argument("--concurrency", type=int, default=8, help="model calls at once")
    profile.set_defaults(handler=run_profile)


def make_context(args: argparse.Namespace, models: CommandModels) -> ProfileEvalContext:
    """The evaluation context: the judge, the fast model as knowledge extractor, their names."""
    from personae.evals.profile_eval import ProfileEvalContext

    return ProfileEvalContext(
        judge_model=models.chat_models["judge"],
        judge_model_name=models.cache_name("judge"),
        extractor_model=models.chat_models["fast"],
        extractor_model_name=models.cache_name("fast"),
        concurrency=args.concurrency,
        cache_dir=models.settings.cache_dir / "judge",
    )


def report_path(args: argparse.Namespace) -> Path:
    """``--out`` (a folder gets ``eval-report.json`` inside), else beside the first profile."""
    if args.out is None:
        first: Path = args.profiles[0]
        return (first if first.is_dir() else first.parent) / REPORT_NAME
    out: Path = args.out
    return out / REPORT_NAME if out.is_dir() else out


def _progress(line: str) -> None:
    sys.stderr.write(f"• {line}\n")


def run_profile(args: argparse.Namespace) -> int:
    """Score every profile; write the report and print the table."""
    from personae.evals.profile_eval import evaluate_profiles, format_report, load_profile_document
    from personae.evals.profile_reference import load_reference
    from personae.files import CACHE_FIX, check_writable_dir, check_writable_file, write_json_atomic

    if args.concurrency < 1:
        raise InputError("--concurrency must be at least 1", "pass 1 or more")
    profiles = [(path, load_profile_document(path)) for path in args.profiles]
    out = report_path(args)
    check_writable_file(out, "--out")
    models = resolve_models(args, ("fast", "judge"))
    check_writable_dir(models.settings.cache_dir, "PERSONAE_CACHE_DIR", CACHE_FIX)
    context = make_context(args, models)

    async def evaluate() -> dict[str, Any]:
        reference = await load_reference(args.reference, settings=models.settings)
        _progress(f"reference {reference.title}: {len(reference.sections)} sections")
        report: dict[str, Any] = await evaluate_profiles(
            profiles, reference, context, reference_source=args.reference, progress=_progress
        )
        return report

    report = asyncio.run(evaluate())
    write_json_atomic(out, report)
    sys.stdout.write(format_report(report) + "\n")
    sys.stdout.write(f"report: {out}\n")
    return 0
