"""`personae eval arcane`: the ARCANE protocol over one or more novels' probes.

``personae eval arcane BOOK... --modes vanilla,summary,rag,lifechoice,timechara,arc
[--model M ...] [--judge-model M] [--limit N] [--out DIR] [--concurrency N] [--no-thought]``
role-plays every available phase of every probe in every mode, judges each answer (T35) and
each trajectory (T36), and writes ``DIR/results.jsonl`` (a rerun skips finished units),
``DIR/summary.json`` (per model and mode: the 12 category x metric cells, Overall as their
unweighted mean) and ``DIR/report.md`` / ``report.html`` in the paper's Table 2 layout with a
plot of fidelity along the phases.

Environment read here, at the edge (flags win): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL``, ``PERSONAE_JUDGE_MODEL``, ``PERSONAE_DATA_DIR``, ``PERSONAE_CACHE_DIR``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.commands.arcane import EMBEDDING_HELP
from personae.commands.novel import add_data_flag, data_dir, llm_fields
from personae.errors import InputError

MODE_NAMES = ("vanilla", "summary", "rag", "lifechoice", "timechara", "arc")
ABLATIONS = ("mixedarc", "archint")
DEFAULT_OUT = Path("runs/arcane")


def register_arcane(protocols: Any) -> None:
    """Add the `arcane` protocol to `personae eval`."""
    from personae.commands.models import add_model_flags

    arcane = protocols.add_parser(
        "arcane", help="ARCANE: phase fidelity over probes (APF/RPF/RAE/PTF)"
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
    arcane.add_argument("--embedding", default="", help=EMBEDDING_HELP)
    arcane.add_argument(
        "--also-model", action="append", default=[], help="another role-play model (repeatable)"
    )
    add_data_flag(arcane)
    add_model_flags(arcane, judge=True)
    arcane.set_defaults(handler=run_arcane)


def parse_modes(text: str) -> list[str]:
    """The modes of ``--modes``; one-line error for an unknown one."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    known = (*MODE_NAMES, *ABLATIONS)
    bad = [m for m in modes if m not in known]
    if bad or not modes:
        raise InputError(f"unknown mode {(bad or [text])[0]!r}", f"use {', '.join(known)}")
    return modes


def check_out(out: Path) -> None:
    """The output folder must be (or become) a writable folder, before any model call."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file", "pass a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as error:
        raise InputError(
            f"--out {out} is not writable ({error.strerror})", "pass a writable folder"
        ) from None


def run_arcane(args: argparse.Namespace) -> int:
    """Evaluate, then aggregate every result in the folder and write the reports."""
    import asyncio

    from personae.commands.models import resolve_models
    from personae.evals.arcane_eval import ArcaneEvalContext, build_graph

    modes = parse_modes(args.modes)
    if args.concurrency < 1 or (args.limit is not None and args.limit < 1):
        raise InputError("--concurrency and --limit must be at least 1", "pass 1 or more")
    check_out(args.out)
    models = resolve_models(args, ("strong", "judge"))
    fields = llm_fields(models)
    for model in [fields["model"], *args.also_model]:
        context = ArcaneEvalContext(
            data_dir=str(data_dir(args)),
            judge_model=models.specs["judge"],
            judge_include_thought=not args.no_thought,
            embedding=args.embedding,
            concurrency=args.concurrency,
            **{**fields, "model": model},
        )
        payload: Any = {
            "novels": args.books,
            "modes": modes,
            "limit": args.limit,
            "out_dir": str(args.out),
        }
        result = asyncio.run(build_graph().ainvoke(payload, context=context))
        calls = sum(u["llm_calls"] for u in result["usage"])
        sys.stderr.write(
            f"• {model}: {len(result['done'])} units evaluated, {result['skipped']} already done, "
            f"{calls} LLM calls\n"
        )
    write_reports(args.out)
    return 0


def write_reports(out: Path, *, per_novel: bool = False) -> None:
    """summary.json, report.md and report.html from everything in results.jsonl.

    The per-novel breakdown (App. L) is added when the results span several novels, or always
    with ``per_novel``. One-line error when ``out`` holds no results.
    """
    import json

    from personae.evals.arcane_eval import RESULTS
    from personae.evals.arcane_metrics import per_novel as split_by_novel
    from personae.evals.arcane_metrics import summarize
    from personae.evals.arcane_report import markdown_table, render, table2_rows
    from personae.files import write_json_atomic, write_text_atomic

    path = out / RESULTS
    if not path.is_file():
        raise InputError(
            f"no {RESULTS} in {out}", f"run personae eval arcane BOOK... --out {out} first"
        )
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a kill is redone by the next run
    if not records:
        raise InputError(
            f"{path} holds no results", f"run personae eval arcane BOOK... --out {out}"
        )
    summary = summarize(records)
    by_novel = split_by_novel(records)
    if not per_novel and len(by_novel) < 2:
        by_novel = {}
    if by_novel:
        summary["per_novel"] = by_novel
    md, page = render(summary, "ARCANE evaluation", by_novel)
    write_json_atomic(out / "summary.json", summary)
    write_text_atomic(out / "report.md", md)
    write_text_atomic(out / "report.html", page)
    sys.stdout.write(markdown_table(table2_rows(summary)) + "\n")
    sys.stdout.write(f"report: {out / 'report.md'} (and .html, summary.json)\n")
