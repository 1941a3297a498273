"""`personae arcane eval`: the ARCANE protocol over one or more novels' probes.

``personae arcane eval BOOK... --modes vanilla,summary,rag,lifechoice,timechara,arc
[--model M ...] [--judge-model M] [--limit N] [--out DIR] [--concurrency N] [--no-thought]``
role-plays every available phase of every probe in every mode, judges each answer (T35) and
each trajectory (T36), and writes ``DIR/results.jsonl`` (a rerun skips finished units),
``DIR/summary.json`` (per model and mode: the 12 category x metric cells, Overall as their
unweighted mean) and ``DIR/report.md`` / ``report.html`` in the paper's Table 2 layout with a
plot of fidelity along the phases. Before the first model call it prints the estimated calls
and tokens of the units left (:mod:`personae.evals.arcane.costs`) on stderr.

``--ablation mixedarc|archint [--sample 120]`` runs vanilla, arc and the App. K ablation on a
category-stratified probe sample; ``--ablation pov --compare-model M [--sample 150]`` runs
App. G's POV control: a (category, sign) sample of the Arc results of ``--model`` vs ``M``
already in ``DIR``, ``--model`` re-run with the register paragraph (mode ``pov``), rescored by the
same judge, and the proposition coder over the three conditions (``DIR/pov.json``, ``pov.md``).
``--no-thought`` judges without ref_thought (App. F); its rows are reported apart.

The flags fill the evaluation's run context, which takes what they leave out from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL``, ``PERSONAE_JUDGE_MODEL``, ``PERSONAE_DATA_DIR``, ``PERSONAE_CACHE_DIR``,
``PERSONAE_EMBEDDINGS``, ``CHROMA_HOST``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.arcane.arcane import CHUNK_EMBEDDING_HELP
from personae.commands.arcane.novel import add_data_flag, context_fields, data_dir
from personae.degraded import add_max_failures_flag
from personae.errors import InputError, check_choice
from personae.runners.arcane_eval import ABLATIONS, DEFAULT_EVAL_OUT, EVAL_MODES, check_eval_out

if TYPE_CHECKING:
    from personae.runners.arcane_eval import ArcaneReport

MODE_NAMES = EVAL_MODES
DEFAULT_OUT = DEFAULT_EVAL_OUT


def register(commands: Any) -> None:
    """Add `arcane eval`."""
    from personae.commands.models import add_embedding_flag, add_model_flags

    arcane = commands.add_parser(
        "eval", help="ARCANE: phase fidelity over probes (APF/RPF/RAE/PTF)"
    )
    arcane.add_argument("books", nargs="+", help="book slugs or titles with probes")
    arcane.add_argument(
        "--modes",
        default=",".join(MODE_NAMES),
        help="comma-separated: the paper's six modes, or the App. K ablations mixedarc, archint",
    )
    arcane.add_argument("--limit", type=int, help="at most N probes per book (first by id)")
    arcane.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder ({DEFAULT_OUT})"
    )
    arcane.add_argument("--concurrency", type=int, default=8, help="(probe, mode) units at once")
    arcane.add_argument("--no-thought", action="store_true", help="judge without ref_thought")
    arcane.add_argument(
        "--server",
        metavar="URL",
        help="evaluate each (probe, mode) unit on this LangGraph server (one thread each, "
        "resumable); results are written here as a local run writes them",
    )
    add_embedding_flag(arcane, CHUNK_EMBEDDING_HELP)
    arcane.add_argument(
        "--also-model", action="append", default=[], help="another role-play model (repeatable)"
    )
    arcane.add_argument(
        "--ablation",
        help="mixedarc or archint (App. K: vanilla, arc and the ablation on a category-"
        "stratified sample), or pov (App. G: the POV control on a (category, sign) sample of "
        "--model vs --compare-model Arc results already in --out)",
    )
    arcane.add_argument(
        "--sample", type=int, help="ablation sample size (mixedarc/archint 120, pov 150)"
    )
    arcane.add_argument("--compare-model", help="pov: the model --model is compared with")
    arcane.add_argument(
        "--coder-model",
        help="pov: the proposition coder's model (default the paper's openai:deepseek/deepseek-v4-pro)",
    )
    arcane.add_argument(
        "--no-propositions", action="store_true", help="pov: skip the proposition coder"
    )
    add_max_failures_flag(arcane, "judgments")
    add_data_flag(arcane)
    add_model_flags(
        arcane,
        judge=True,
        judge_default="openai:deepseek/deepseek-v4-flash, the paper's",
        temperature_default="judge=0 (the paper's judge), role-play at the server's",
    )
    arcane.set_defaults(handler=run_arcane)


def parse_modes(text: str) -> list[str]:
    """The modes of ``--modes``; one-line error for an unknown one."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    known = (*MODE_NAMES, *ABLATIONS)
    bad = [m for m in modes if m not in known]
    if bad or not modes:
        raise InputError(f"unknown mode {(bad or [text])[0]!r}", f"use {', '.join(known)}")
    return modes


def run_arcane(args: argparse.Namespace) -> int:
    """Evaluate, then aggregate every result in the folder and write the reports."""
    from personae.runners.arcane_eval import evaluate_arcane

    modes = parse_modes(args.modes)
    if args.concurrency < 1 or (args.limit is not None and args.limit < 1):
        raise InputError("--concurrency and --limit must be at least 1", "pass 1 or more")
    if args.ablation is not None:
        if args.server:
            raise InputError("--server runs the main protocol", "drop --server for --ablation")
        return run_ablation(args)
    check_eval_out(args.out)
    context = eval_context(args)
    announce_settings(context, [context.model, *args.also_model], modes)
    run = asyncio.run(
        evaluate_arcane(
            args.books,
            context=context,
            modes=modes,
            also_models=args.also_model,
            limit=args.limit,
            out=args.out,
            server=args.server,
            progress=say,
        )
    )
    print_report(run.report)
    return 0


def say(line: str) -> None:
    """A runner's progress line, on stderr."""
    sys.stderr.write(line + "\n")


def print_report(report: ArcaneReport) -> None:
    """Table 2 and where the reports are."""
    sys.stdout.write(report.table + "\n")
    sys.stdout.write(f"report: {report.report_md} (and .html, summary.json)\n")


def announce_settings(context: Any, models: list[str], modes: list[str]) -> None:
    """Print the paper's settings beside this run's before the first model call."""
    from personae.evals.arcane.paper_settings import context_rows
    from personae.evals.paper_settings import settings_text

    sys.stderr.write(settings_text("ARCANE Table 2", context_rows(context, models, modes)))


def eval_context(args: argparse.Namespace) -> Any:
    """The evaluation's run context of the flags; the settings fill the rest.

    The role-play models and the judge are asked for here: no LLM or a bad spec fails before
    any work.
    """
    from personae.evals.arcane.eval_graph import ArcaneEvalContext

    context = ArcaneEvalContext(
        judge_model=args.judge_model or "",
        judge_include_thought=not args.no_thought,
        embedding=args.embedding,
        concurrency=args.concurrency,
        max_failures=args.max_failures.text,
        **context_fields(args),
    )
    for spec in (context.model, *args.also_model):
        context.chat_model(spec, "strong")
    context.chat_model(context.judge_model, "judge")
    return context


def run_ablation(args: argparse.Namespace) -> int:
    """App. K (mixedarc, archint) or App. G (pov) on their samples; reports beside Table 2."""
    from personae.runners.arcane_eval import ablation_sample, evaluate_arcane

    check_choice(args.ablation, ABLATIONS, "ablation")
    size = args.sample if args.sample is not None else (150 if args.ablation == "pov" else 120)
    if size < 1:
        raise InputError("--sample must be at least 1", "pass 1 or more")
    if args.ablation == "pov":
        return run_pov(args, size)
    chosen = ablation_sample(args.books, data_dir(args), size)
    check_eval_out(args.out)
    context = eval_context(args)
    run = asyncio.run(
        evaluate_arcane(
            args.books,
            context=context,
            modes=["vanilla", "arc", args.ablation],
            also_models=args.also_model,
            limit=args.limit,
            out=args.out,
            probe_ids=chosen,
            progress=say,
        )
    )
    print_report(run.report)
    return 0


def run_pov(args: argparse.Namespace, size: int) -> int:
    """App. G: sample by (category, sign), re-run --model with the POV paragraph, compare."""
    from personae.runners.arcane_eval import evaluate_pov_control

    if not args.compare_model:
        raise InputError(
            "--ablation pov needs --compare-model M",
            "name the model whose Arc results --model is compared with (App. G: ARCANE-32B-DPO)",
        )
    control = asyncio.run(
        evaluate_pov_control(
            args.books,
            context=eval_context(args),
            compare_model=args.compare_model,
            sample=size,
            limit=args.limit,
            out=args.out,
            coder_model=args.coder_model,
            propositions=not args.no_propositions,
            progress=say,
        )
    )
    print_report(control.report)
    sys.stdout.write(control.text + "\n" + f"report: {control.pov_md} (and pov.json)\n")
    return 0
