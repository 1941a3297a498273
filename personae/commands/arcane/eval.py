"""`personae arcane eval`: the ARCANE protocol over one or more novels' probes.

``personae arcane eval BOOK... --modes vanilla,summary,rag,lifechoice,timechara,arc
[--model M ...] [--judge-model M] [--limit N] [--out DIR] [--concurrency N] [--no-thought]``
role-plays every available phase of every probe in every mode, judges each answer (T35) and
each trajectory (T36), and writes ``DIR/results.jsonl`` (a rerun skips finished units),
``DIR/summary.json`` (per model and mode: the 12 category x metric cells, Overall as their
unweighted mean) and ``DIR/report.md`` / ``report.html`` in the paper's Table 2 layout with a
plot of fidelity along the phases.

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
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from personae.commands.arcane import cache_note
from personae.commands.arcane.arcane import CHUNK_EMBEDDING_HELP
from personae.commands.arcane.novel import add_data_flag, context_fields, data_dir
from personae.degraded import add_max_failures_flag, print_degraded
from personae.errors import InputError

MODE_NAMES = ("vanilla", "summary", "rag", "lifechoice", "timechara", "arc")
ABLATIONS = ("mixedarc", "archint", "pov")
DEFAULT_OUT = Path("runs/arcane")


def register(protocols: Any) -> None:
    """Add the `arcane` protocol to `personae eval`."""
    from personae.commands.models import add_embedding_flag, add_model_flags

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
    modes = parse_modes(args.modes)
    if args.concurrency < 1 or (args.limit is not None and args.limit < 1):
        raise InputError("--concurrency and --limit must be at least 1", "pass 1 or more")
    if args.ablation is not None:
        if args.server:
            raise InputError("--server runs the main protocol", "drop --server for --ablation")
        return run_ablation(args)
    check_out(args.out)
    context = eval_context(args)
    announce_settings(context, [context.model, *args.also_model], modes)
    if args.server:
        from personae.commands.arcane.eval_server import evaluate_on_server

        evaluate_on_server(args, context, [context.model, *args.also_model], modes)
    else:
        evaluate(args, context, [context.model, *args.also_model], modes)
    write_reports(args.out)
    return 0


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


def evaluate(
    args: argparse.Namespace,
    context: Any,
    role_players: list[str],
    modes: list[str],
    probe_ids: list[str] | None = None,
) -> None:
    """Run the arcane_eval graph for each role-play model (results appended to --out).

    Every model is judged by the context's judge (resolved once, from the first model).
    """
    import asyncio

    from personae.evals.arcane.eval_graph import build_graph

    for model in role_players:
        run_context = context.replaced(model=model)
        payload: Any = {
            "novels": args.books,
            "modes": modes,
            "limit": args.limit,
            "out_dir": str(args.out),
            "probe_ids": probe_ids,
        }
        result = asyncio.run(build_graph().ainvoke(payload, context=run_context))
        calls = sum(u["llm_calls"] for u in result["usage"])
        hits = sum(u.get("cache_hits", 0) for u in result["usage"])
        sys.stderr.write(
            f"• {model}: {len(result['done'])} units evaluated, {result['skipped']} already done, "
            f"{calls} LLM calls{cache_note(hits)}\n"
        )
        missing = sum(u.get("degraded", 0) for u in result["usage"])
        print_degraded(missing, {"judgments_missing": missing})


def run_ablation(args: argparse.Namespace) -> int:
    """App. K (mixedarc, archint) or App. G (pov) on their samples; reports beside Table 2."""
    if args.ablation not in ABLATIONS:
        raise InputError(f"unknown ablation {args.ablation!r}", f"use {', '.join(ABLATIONS)}")
    size = args.sample if args.sample is not None else (150 if args.ablation == "pov" else 120)
    if size < 1:
        raise InputError("--sample must be at least 1", "pass 1 or more")
    if args.ablation == "pov":
        return run_pov(args, size)
    from personae.evals.arcane.ablation import category_sample

    probes = book_probes(args)
    chosen = [p.probe_id for p in category_sample(probes, size)]
    check_out(args.out)
    context = eval_context(args)
    players = [context.model, *args.also_model]
    evaluate(args, context, players, ["vanilla", "arc", args.ablation], chosen)
    write_reports(args.out)
    return 0


def book_probes(args: argparse.Namespace) -> list[Any]:
    """Every probe of the books; one-line error for a book without probes."""
    from personae.memory.arcane.novel_store import open_novel
    from personae.memory.arcane.records import load_probes

    probes = []
    for book in args.books:
        novel = open_novel(data_dir(args), book)
        found = load_probes(novel.folder)
        if not found:
            raise InputError(
                f"no probes for {novel.slug}",
                f"run personae arcane build-probes {novel.slug} first",
            )
        probes += found
    return probes


def run_pov(args: argparse.Namespace, size: int) -> int:
    """App. G: sample by (category, sign), re-run --model with the POV paragraph, compare."""
    import asyncio

    from personae.evals.arcane import ablation as ab
    from personae.evals.arcane.perturb import load_probe_index
    from personae.evals.arcane.results import read_results
    from personae.files import write_json_atomic, write_text_atomic
    from personae.memory.arcane.novel_store import open_novel
    from personae.memory.arcane.records import load_arcs

    if not args.compare_model:
        raise InputError(
            "--ablation pov needs --compare-model M",
            "name the model whose Arc results --model is compared with (App. G: ARCANE-32B-DPO)",
        )
    context = eval_context(args)
    folder = Path(context.data_dir)
    slugs = {open_novel(folder, book).slug for book in args.books}
    base = context.model
    records = [r for r in read_results(args.out) if r["novel"] in slugs]
    sample = ab.pov_sample(records, base, args.compare_model, per_cell=max(1, size // 6))
    if not sample:
        raise InputError(
            f"no probe with non-tied Arc results of both {base} and {args.compare_model} "
            f"in {args.out / 'results.jsonl'}",
            f"run personae arcane eval BOOK --modes arc --model {base} "
            f"--also-model {args.compare_model} --out {args.out} first",
        )
    evaluate(args, context, [base], ["pov"], [s["probe_id"] for s in sample])
    records = [r for r in read_results(args.out) if r["novel"] in slugs]
    figures = ab.pov_figures(records, sample, base, args.compare_model)
    table5 = None
    if not args.no_propositions:
        from personae.agents.arcane.propositions import PAPER_CODER_MODEL

        coder = args.coder_model or PAPER_CODER_MODEL  # App. G: pro tier, not the flash judge
        probes = load_probe_index(folder, {s["novel"] for s in sample})
        arcs = [a for slug in sorted(slugs) for a in load_arcs(open_novel(folder, slug).folder)]
        coded = asyncio.run(
            ab.code_propositions(
                records=records,
                sample=sample,
                probes=probes,
                arcs=arcs,
                base=base,
                compare=args.compare_model,
                context=context,
                coder_model=coder,
                concurrency=args.concurrency,
            )
        )
        table5 = ab.table_5(coded) | {"coded": coded, "coder": context.cache_name(coder)}
    write_json_atomic(
        args.out / "pov.json", {"sample": sample, "figures": figures, "propositions": table5}
    )
    text = ab.markdown(figures, table5)
    write_text_atomic(args.out / "pov.md", text + "\n")
    write_reports(args.out)
    sys.stdout.write(text + "\n" + f"report: {args.out / 'pov.md'} (and pov.json)\n")
    return 0


def write_reports(out: Path, *, per_novel: bool = False, central: Sequence[str] = ()) -> None:
    """summary.json, report.md and report.html from everything in results.jsonl.

    The per-novel breakdown (App. L) is added when the results span several novels, or always
    with ``per_novel``. One-line error when ``out`` holds no results.
    """
    from personae.evals.arcane.eval_graph import dropped_probes
    from personae.evals.arcane.metrics import per_novel as split_by_novel
    from personae.evals.arcane.metrics import summarize, tier_lifts
    from personae.evals.arcane.paper_settings import record_rows
    from personae.evals.arcane.report import markdown_table, render, table2_rows
    from personae.evals.arcane.results import read_results
    from personae.evals.paper_settings import rows_json
    from personae.files import write_json_atomic, write_text_atomic
    from personae.llm_endpoint import chosen_methods

    records = read_results(out)
    summary = summarize(records)
    summary["paper_settings"] = rows_json(record_rows(records))
    summary["dropped_probes"] = dropped_probes(out)
    if central:
        known = {str(r.get("character", "")).casefold() for r in records}
        unknown = [n for n in central if n.casefold() not in known]
        if unknown:
            raise InputError(
                f"--central {unknown[0]!r} is not a character of the results",
                f"use one of {', '.join(sorted({str(r.get('character')) for r in records}))}",
            )
        summary["tiers"] = tier_lifts(records, central)
    by_novel = split_by_novel(records)
    if not per_novel and len(by_novel) < 2:
        by_novel = {}
    if by_novel:
        summary["per_novel"] = by_novel
    if methods := chosen_methods():  # how structured answers were asked for, per endpoint
        summary["structured_output"] = methods
    md, page = render(summary, "ARCANE evaluation", by_novel)
    write_json_atomic(out / "summary.json", summary)
    write_text_atomic(out / "report.md", md)
    write_text_atomic(out / "report.html", page)
    sys.stdout.write(markdown_table(table2_rows(summary)) + "\n")
    sys.stdout.write(f"report: {out / 'report.md'} (and .html, summary.json)\n")
