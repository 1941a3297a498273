"""`personae doctor`: know before you pay: check in seconds what a run will need.

The LLM server answers and serves the model; which structured-output method works there
(JSON schema, tool calling, JSON mode) and how long one call takes, for every model the
commands will call: the strong, fast and judge models, and the judges of the evaluations that
default to their paper's (``bookmarks bench``, ``arcane eval``: :func:`paper_judges`); the
embedding; the checkpointer (``PERSONAE_CHECKPOINTER``: a Postgres server must answer); Tavily's key (one basic search, one credit; ``--no-web`` skips
it); the wiki given with ``--wiki``; and that every output folder can be written. One table;
exit 0 when everything a run needs works, 2 when a setting is wrong, 3 when a service fails.

Environment read here, at the edge: the model settings (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``PERSONAE_MODEL``, ``PERSONAE_FAST_MODEL``, ``PERSONAE_JUDGE_MODEL``,
``PERSONAE_STRUCTURED_OUTPUT``, ``PERSONAE_CONTEXT_WINDOW``), ``PERSONAE_EMBEDDINGS``,
``TAVILY_API_KEY``, ``TAVILY_BASE_URL``, ``PERSONAE_CACHE_DIR``, ``PERSONAE_DATA_DIR``,
``PERSONAE_CHECKPOINTER``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.models import add_model_flags, model_fields

if TYPE_CHECKING:
    from personae.commands.doctor_checks import Check
    from personae.llm import ModelRole
    from personae.run_context import LLMContext
    from personae.settings import Settings

ROLES: tuple[ModelRole, ...] = ("strong", "fast", "judge")


def paper_judges() -> dict[str, str]:
    """The evaluations whose judge defaults to the paper's, and that default (from their code).

    ``bookmarks bench`` and ``arcane eval`` never judge with the acting model: unless
    ``--judge-model`` or ``PERSONAE_JUDGE_MODEL`` names another, they call their paper's judge,
    which a local server may not serve.
    """
    from personae.evals.arcane.eval_graph import ArcaneEvalContext
    from personae.evals.bookmarks.bench import BenchModels

    return {
        "bookmarks bench": BenchModels.default_judge,
        "arcane eval": ArcaneEvalContext.default_judge,
    }


def register(commands: Any) -> None:
    """Add the `doctor` command."""
    parser = commands.add_parser(
        "doctor",
        help="check the LLM server, models, embedding, Tavily, wiki and folders before a run",
        description=(
            "Check in seconds what a run needs: the LLM server and each model (which "
            "structured-output method works, one call's latency), the embedding, Tavily's key "
            "(one credit), the wiki and the output folders. Exit 0 when all works."
        ),
    )
    add_model_flags(parser, judge=True)
    parser.add_argument("--base-url", help="OpenAI-compatible server URL (OPENAI_BASE_URL)")
    parser.add_argument("--embedding", help="embedding to check (PERSONAE_EMBEDDINGS)")
    parser.add_argument("--wiki", help="also check this wiki URL (as profile --wiki takes it)")
    parser.add_argument(
        "--out",
        type=Path,
        action="append",
        default=[],
        help="also check this output folder (repeatable)",
    )
    parser.add_argument(
        "--no-web", action="store_true", help="skip the Tavily check (it spends one credit)"
    )
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run every check, print the table, exit non-zero when a run could not work."""
    import asyncio

    rows = asyncio.run(diagnose(args))
    if args.json:
        sys.stdout.write(json.dumps([_as_json(r) for r in rows], indent=2) + "\n")
    else:
        sys.stdout.write(table(rows))
    failed = [r for r in rows if r.status == "fail"]
    if not failed:
        return 0
    names = ", ".join(r.name for r in failed)
    sys.stderr.write(
        f"personae: error: {len(failed)} check(s) failed ({names}); fix them before a run\n"
    )
    return 3 if any(r.remote for r in failed) else 2


async def diagnose(args: argparse.Namespace) -> list[Check]:
    """Every row, in the table's order; a broken setting fails its rows, not the command."""
    from personae.commands.doctor_checks import (
        Check,
        check_checkpointer,
        check_embedding,
        check_tavily,
        check_wiki,
        timed,
    )
    from personae.errors import ConfigurationError
    from personae.settings import check_embeddings_spec, load_settings

    try:
        settings = load_settings()
        if args.embedding:
            settings = settings.with_overrides(embedding=check_embeddings_spec(args.embedding))
    except ConfigurationError as error:
        return [Check("settings", "fail", str(error), remote=False)]
    rows = await _llm_rows(args, settings)
    rows.append(await timed("embedding", lambda: check_embedding(settings)))
    rows.append(await timed("checkpointer", lambda: check_checkpointer(settings)))
    if not args.no_web:
        rows.append(await timed("Tavily", lambda: check_tavily(settings)))
    if args.wiki:
        rows.append(await timed("wiki", lambda: check_wiki(settings, args.wiki)))
    rows += _folder_rows(args, settings)
    return rows


async def _llm_rows(args: argparse.Namespace, settings: Settings) -> list[Check]:
    import time

    from personae.commands.doctor_checks import Check, list_models
    from personae.errors import ConfigurationError
    from personae.run_context import LLMContext

    try:
        context = LLMContext(**model_fields(args))
        context.llm("strong")  # no LLM configured, or a bad spec: the one row says which
        judge = args.judge_model or ""
        specs = {
            "strong model": context.model,
            "fast model": context.fast_model,
            "judge model": context.judge_spec(judge),
            **{
                f"judge model ({command})": settings.judge_spec(judge, default, context.model)
                for command, default in paper_judges().items()
            },
        }
    except ConfigurationError as error:
        return [Check("LLM server", "fail", str(error), remote=False)]
    started = time.perf_counter()
    server_settings = context.settings.with_overrides(openai_base_url=context.openai_base_url)
    server, served = await list_models(server_settings)
    server.seconds = time.perf_counter() - started
    rows = [server]
    checked: dict[str, tuple[str, Check]] = {}
    for name, spec in specs.items():
        named: list[ModelRole] = [r for r in ROLES if name.startswith(r)]
        role: ModelRole = named[0] if named else "judge"
        if server.status == "fail":
            rows.append(Check(name, "skip", f"{spec}: the server does not answer"))
        elif spec in checked:
            first_name, first = checked[spec]
            detail = f"{spec}: same model as {first_name.removesuffix(' model')}"
            rows.append(Check(name, first.status, detail, remote=first.remote))
        else:
            row = await _timed_model(name, role, spec, context, served)
            checked[spec] = (name, row)
            rows.append(row)
    return rows


async def _timed_model(
    name: str, role: ModelRole, spec: str, context: LLMContext, served: list[str] | None
) -> Check:
    from personae.commands.doctor_checks import check_model, timed

    model = context.chat_model(spec, role)
    row = await timed(name, lambda: check_model(role, spec, model, served))
    row.name = name  # the role's row, or the row of the evaluation whose judge this is
    if name.startswith("judge model (") and row.status == "fail":
        row.detail += "; or name a judge the server serves: --judge-model / PERSONAE_JUDGE_MODEL"
    return row


def _folder_rows(args: argparse.Namespace, settings: Settings) -> list[Check]:
    """The folders runs write by default, and the ones named with ``--out``."""
    from personae.commands.amadeus.persona import DEFAULT_MEMORY
    from personae.commands.characterhub.profile import DEFAULT_OUT as PROFILES
    from personae.commands.doctor_checks import check_folder

    data = settings.data_dir
    folders = {
        "cache (PERSONAE_CACHE_DIR)": settings.cache_dir,
        "profiles": PROFILES,
        "personas": DEFAULT_MEMORY,
        "data (PERSONAE_DATA_DIR)": data,
        "runs": Path("runs"),
        **{f"--out {path}": path for path in args.out},
    }
    return [check_folder(label, path) for label, path in folders.items()]


def table(rows: list[Check]) -> str:
    """The rows as an aligned text table."""
    header = ("check", "status", "time", "detail")
    cells = [(r.name, r.status, f"{r.seconds:.1f}s", r.detail) for r in rows]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(3)]
    lines = [
        "  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])), row[3]])
        for row in [header, *cells]
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _as_json(row: Check) -> dict[str, Any]:
    return {
        "check": row.name,
        "status": row.status,
        "seconds": round(row.seconds, 3),
        "detail": row.detail,
        **row.facts,
    }
