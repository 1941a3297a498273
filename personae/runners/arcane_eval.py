"""ARCANE's evaluation as library calls: the protocol, its ablations, perturbation, report.

The CLI (``personae arcane eval``, ``eval-perturb``, ``eval-report``) and apps call these;
nothing here prints (progress goes to the callback a caller passes). Results go to an output
folder (``results.jsonl``, ``summary.json``, ``report.md``/``.html``); a rerun skips the units
already there, in process or on a LangGraph server (``server=``). Beside
:mod:`personae.runners.arcane` (import a novel, build arcs, act as of a chapter).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.errors import InputError
from personae.runners import Progress, quiet

if TYPE_CHECKING:
    from personae.agents.costs import Estimate
    from personae.evals.arcane.eval_graph import ArcaneEvalContext
    from personae.graphs.arcane.context import ArcaneContext
    from personae.memory.arcane.records import ArcRecord, ProbeRecord


EVAL_MODES = ("vanilla", "summary", "rag", "lifechoice", "timechara", "arc")
"""The paper's six context modes, the evaluation's default."""
ABLATIONS = ("mixedarc", "archint", "pov")
"""App. K's two ablations and App. G's POV control."""
DEFAULT_EVAL_OUT = Path("runs/arcane")


@dataclass(frozen=True)
class ModelPass:
    """One role-play model's pass over the evaluation units it had left."""

    model: str
    evaluated: int
    """Units run (in this process or on the server) and appended to ``results.jsonl``."""
    skipped: int
    """Units already in ``results.jsonl``: a rerun repeats no finished unit."""
    llm_calls: int
    cache_hits: int
    judgments_missing: int
    """Judgments that failed three times, recorded as missing (never invented)."""
    server: str | None = None


@dataclass(frozen=True)
class ArcaneReport:
    """The reports of an evaluation folder, rebuilt from everything in its ``results.jsonl``."""

    summary: dict[str, Any]
    """What ``summary.json`` holds: per model and mode the 12 cells and Overall (Table 2)."""
    table: str
    """Table 2 as Markdown (what ``personae arcane eval`` prints)."""
    summary_json: Path
    report_md: Path
    report_html: Path


@dataclass(frozen=True)
class ArcaneEvalRun:
    """An evaluation run: each model's pass and the reports written after them."""

    out: Path
    passes: list[ModelPass]
    report: ArcaneReport


def check_eval_out(out: Path) -> None:
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


def cache_note(hits: int) -> str:
    """``", N cached answers"`` when the answer cache spared some calls, else nothing."""
    return f", {hits} cached answers" if hits else ""


def _report_pass(done: ModelPass, progress: Progress) -> None:
    """One line per model, then the degraded line when judgments went missing."""
    from personae.degraded import degraded_line

    where = f" on {done.server}" if done.server else ""
    progress(
        f"• {done.model}: {done.evaluated} units evaluated{where}, {done.skipped} already done, "
        f"{done.llm_calls} LLM calls{cache_note(done.cache_hits)}"
    )
    missing = done.judgments_missing
    line = degraded_line(missing, {"judgments_missing": missing})
    if line:
        progress(line)


def _model_pass(
    model: str, evaluated: int, skipped: int, usage: list[dict[str, int]], server: str | None
) -> ModelPass:
    return ModelPass(
        model,
        evaluated,
        skipped,
        sum(u.get("llm_calls", 0) for u in usage),
        sum(u.get("cache_hits", 0) for u in usage),
        sum(u.get("degraded", 0) for u in usage),
        server,
    )


async def evaluate_arcane(
    books: Sequence[str],
    *,
    context: ArcaneEvalContext,
    modes: Sequence[str] = EVAL_MODES,
    also_models: Sequence[str] = (),
    limit: int | None = None,
    out: Path = DEFAULT_EVAL_OUT,
    probe_ids: Sequence[str] | None = None,
    server: str | None = None,
    progress: Progress = quiet,
) -> ArcaneEvalRun:
    """Evaluate role-play models on the books' probes (ARCANE §4) and write the reports.

    Every available phase of every probe (``probe_ids`` only, when given; at most ``limit``
    per book) is role-played in every mode by ``context.model`` and each of ``also_models``,
    each answer judged by ``context.judge_model`` (T35) and each trajectory (T36); one line per
    (probe, mode, model) unit is appended to ``out/results.jsonl`` as it finishes, so a rerun
    skips the finished units. Then ``summary.json``, ``report.md`` and ``report.html`` are
    written from everything in the file (Table 2's layout).

    With ``server`` (a LangGraph server's URL) each unit is one run of the ``arcane_eval``
    graph in its own thread there (:mod:`personae.server_runs`), ``context.concurrency`` at a
    time; the server writes nothing and returns the unit's record, appended here: the same
    files as a run in this process. A rerun reads finished threads back and resumes
    interrupted ones.

    Raises:
        InputError: ``out`` is not a writable folder, a book has no probes, a mode is unknown.
        RemoteError: the server or a model failed (the finished units stay in the file).
    """
    check_eval_out(out)
    report_estimate(
        books,
        context=context,
        modes=modes,
        models=(context.model, *also_models),
        limit=limit,
        out=out,
        probe_ids=probe_ids,
        progress=progress,
    )
    passes = []
    for model in (context.model, *also_models):
        run_context = context.replaced(model=model)
        state: Any = {
            "novels": list(books),
            "modes": list(modes),
            "limit": limit,
            "out_dir": str(out),
            "probe_ids": None if probe_ids is None else list(probe_ids),
        }
        if server:
            done = await _evaluate_on_server(state, run_context, out, server)
        else:
            done = await _evaluate_here(state, run_context)
        _report_pass(done, progress)
        passes.append(done)
    return ArcaneEvalRun(out, passes, write_arcane_report(out))


def report_estimate(
    books: Sequence[str],
    *,
    context: ArcaneEvalContext,
    modes: Sequence[str],
    models: Sequence[str],
    limit: int | None,
    out: Path,
    probe_ids: Sequence[str] | None,
    progress: Progress,
    also: Estimate | None = None,
    also_roles: Mapping[str, str] | None = None,
) -> None:
    """Report the run's estimated calls and tokens (the units left) before its first call.

    ``also`` adds the cost of work the run does besides its units (the POV control's
    proposition coder), paid to the models in ``also_roles``.

    Raises:
        InputError: an unknown mode or a book without probes, before the estimate line.
    """
    from personae.agents.costs import estimate_line
    from personae.evals.arcane.costs import estimate_evaluation

    estimate = estimate_evaluation(
        books,
        context=context,
        modes=modes,
        models=models,
        limit=limit,
        out=out,
        probe_ids=probe_ids,
    )
    if also is not None:
        estimate += also
    roles = {"role-play": ", ".join(models), "judge": str(context.judge_model)}
    progress(estimate_line(estimate, {**roles, **(also_roles or {})}).rstrip("\n"))


async def _evaluate_here(state: Any, context: ArcaneEvalContext) -> ModelPass:
    """One model's units through the ``arcane_eval`` graph in this process."""
    from personae.evals.arcane.eval_graph import build_graph

    result = await build_graph().ainvoke(state, context=context)
    usage = list(result["usage"])
    return _model_pass(context.model, len(result["done"]), result["skipped"], usage, None)


async def _evaluate_on_server(
    state: Any, context: ArcaneEvalContext, out: Path, server: str
) -> ModelPass:
    """One model's pending units, each a thread of ``arcane_eval`` on ``server``.

    The units are planned here as the graph plans them (every (probe, mode) not yet in
    ``results.jsonl``); each runs with an empty ``out_dir`` so the server writes nothing and
    returns its record, appended here.
    """
    import asyncio

    from personae.evals.arcane.eval_graph import plan
    from personae.evals.arcane.results import RESULTS
    from personae.fanout import gather_all
    from personae.files import append_jsonl
    from personae.server_runs import ServerRuns, context_payload

    units, skipped = plan(state, context)
    fields = context_payload(context)
    for name in ("data_dir", "cache_dir"):
        if fields.get(name) and fields[name] != "none":  # the server's cwd may differ
            fields[name] = str(Path(fields[name]).resolve())
    fields["concurrency"] = 1  # one unit per thread; the units' concurrency is bounded here
    slots = asyncio.Semaphore(context.concurrency)
    usage: list[dict[str, int]] = []

    async def one(runs: ServerRuns, unit: Any) -> None:
        payload = {
            "novels": [unit["novel"]],
            "modes": [unit["mode"]],
            "limit": None,
            "out_dir": "",
            "probe_ids": [unit["probe"]["probe_id"]],
        }
        async with slots:
            run = await runs.run("arcane_eval", payload, fields)
        for record in run.values.get("records") or []:
            await asyncio.to_thread(append_jsonl, out / RESULTS, record)
            usage.append(dict(record.get("usage") or {}))

    async with ServerRuns(server, scope=f"arcane:{out.resolve()}") as runs:
        await gather_all(one(runs, unit) for unit in units)  # a failure cancels the rest
    return _model_pass(context.model, len(units), skipped, usage, server)


def ablation_sample(books: Sequence[str], data_dir: Path, size: int) -> list[str]:
    """App. K's sample: ``size`` probe ids of the books, stratified by category.

    Raises:
        InputError: a book has no probes (the message names the command that builds them).
    """
    from personae.evals.arcane.ablation import category_sample
    from personae.memory.arcane.novel_store import open_novel
    from personae.memory.arcane.records import load_probes

    probes = []
    for book in books:
        novel = open_novel(data_dir, book)
        found = load_probes(novel.folder)
        if not found:
            raise InputError(
                f"no probes for {novel.slug}",
                f"run personae arcane build-probes {novel.slug} first",
            )
        probes += found
    return [p.probe_id for p in category_sample(probes, size)]


@dataclass(frozen=True)
class PovControl:
    """App. G's POV control: the figures, Table 5 (unless skipped) and the reports."""

    figures: list[dict[str, Any]]
    table5: dict[str, Any] | None
    text: str
    """``pov.md``'s text."""
    pov_md: Path
    report: ArcaneReport


async def evaluate_pov_control(
    books: Sequence[str],
    *,
    context: ArcaneEvalContext,
    compare_model: str,
    sample: int = 150,
    limit: int | None = None,
    out: Path = DEFAULT_EVAL_OUT,
    coder_model: str | None = None,
    propositions: bool = True,
    progress: Progress = quiet,
) -> PovControl:
    """App. G: ``context.model`` vs ``compare_model`` on a (category, sign) sample of Arc results.

    The sample comes from the Arc results of both models already in ``out/results.jsonl``;
    ``context.model`` is re-run on it with the register paragraph (mode ``pov``), judged by
    the same judge, and (unless not ``propositions``) the proposition coder (``coder_model``,
    default the paper's pro tier) codes the three conditions; ``limit`` caps the probes per
    book as in :func:`evaluate_arcane`. Writes ``pov.json``,
    ``pov.md`` and the Table 2 reports. Before the first call, ``progress`` gets the
    estimated calls and tokens of the POV pass and the coder (as ``evaluate_arcane``'s).

    Raises:
        InputError: no probe has non-tied Arc results of both models in ``out``.
    """
    from personae.agents.arcane.propositions import PAPER_CODER_MODEL
    from personae.evals.arcane import ablation as ab
    from personae.evals.arcane.costs import estimate_propositions
    from personae.evals.arcane.perturb import load_probe_index
    from personae.evals.arcane.results import read_results
    from personae.files import write_json_atomic, write_text_atomic
    from personae.memory.arcane.novel_store import open_novel
    from personae.memory.arcane.records import load_arcs

    folder = Path(context.data_dir)
    slugs = {open_novel(folder, book).slug for book in books}
    base = context.model
    records = [r for r in read_results(out) if r["novel"] in slugs]
    chosen = ab.pov_sample(records, base, compare_model, per_cell=max(1, sample // 6))
    if not chosen:
        raise InputError(
            f"no probe with non-tied Arc results of both {base} and {compare_model} "
            f"in {out / 'results.jsonl'}",
            f"run personae arcane eval BOOK --modes arc --model {base} "
            f"--also-model {compare_model} --out {out} first",
        )
    probe_ids = [s["probe_id"] for s in chosen]
    coder = coder_model or PAPER_CODER_MODEL  # App. G: pro tier, not the flash judge
    probes: dict[str, ProbeRecord] = {}
    arcs: list[ArcRecord] = []
    coding, coder_role = None, {}
    if propositions:  # what the coder reads, read once: for the estimate, then the coder
        probes = load_probe_index(folder, {s["novel"] for s in chosen})
        arcs = [a for slug in sorted(slugs) for a in load_arcs(open_novel(folder, slug).folder)]
        coding = estimate_propositions(records, chosen, probes, arcs, base, compare_model)
        coder_role = {"coder": coder}
    report_estimate(
        books, context=context, modes=["pov"], models=[base], limit=limit, out=out,
        probe_ids=probe_ids, progress=progress, also=coding, also_roles=coder_role,
    )  # fmt: skip
    state: Any = {
        "novels": list(books),
        "modes": ["pov"],
        "limit": limit,
        "out_dir": str(out),
        "probe_ids": probe_ids,
    }
    _report_pass(await _evaluate_here(state, context), progress)
    records = [r for r in read_results(out) if r["novel"] in slugs]
    figures = ab.pov_figures(records, chosen, base, compare_model)
    table5 = None
    if propositions:
        coded = await ab.code_propositions(
            records=records,
            sample=chosen,
            probes=probes,
            arcs=arcs,
            base=base,
            compare=compare_model,
            context=context,
            coder_model=coder,
            concurrency=context.concurrency,
        )
        table5 = ab.table_5(coded) | {"coded": coded, "coder": context.cache_name(coder)}
    write_json_atomic(
        out / "pov.json", {"sample": chosen, "figures": figures, "propositions": table5}
    )
    text = ab.markdown(figures, table5)
    write_text_atomic(out / "pov.md", text + "\n")
    return PovControl(figures, table5, text, out / "pov.md", write_arcane_report(out))


def write_arcane_report(
    out: Path, *, per_novel: bool = False, central: Sequence[str] = ()
) -> ArcaneReport:
    """Write ``summary.json``, ``report.md`` and ``report.html`` from ``out/results.jsonl``.

    No model is called. The per-novel breakdown (App. L) is added when the results span
    several novels, or always with ``per_novel``; ``central`` names central characters, which
    adds App. M's Arc-over-Vanilla lift for central vs supporting characters.

    Raises:
        InputError: ``out`` holds no results, a result lacks a field the report needs, or a
            ``central`` name is not a character of the results. Nothing is written then.
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
    table = markdown_table(table2_rows(summary))
    return ArcaneReport(
        summary, table, out / "summary.json", out / "report.md", out / "report.html"
    )


@dataclass(frozen=True)
class PerturbRun:
    """App. N's perturbation re-judging: what ran and the reports."""

    trajectories: int
    conditions: list[str]
    """``orig`` and the perturbations judged."""
    counts: dict[str, int]
    """``judged``, ``skipped`` (already in ``perturb.jsonl``) and ``missing`` (judge failures)."""
    table: list[dict[str, Any]]
    correlations: list[dict[str, Any]]
    text: str
    """``perturb.md``'s text."""
    perturb_json: Path
    perturb_md: Path


async def perturb_arcane(
    out: Path,
    *,
    context: ArcaneContext,
    conditions: Sequence[str] = (),
    sample: int = 75,
    mode: str = "arc",
    judge_model: str = "",
    include_thought: bool = True,
    concurrency: int = 8,
    progress: Progress = quiet,
) -> PerturbRun:
    """PTF under perturbation (ARCANE App. N, Table 8) over an evaluation's trajectories.

    Per model, ``sample`` trajectories of ``mode`` with 3+ judged phases in ``out/results.jsonl``
    (stratified across novels) are re-judged under ``orig`` and each of ``conditions``; the
    answers are appended to ``out/perturb.jsonl`` (a rerun skips what is done) and
    ``perturb.json`` / ``perturb.md`` hold the mean sub-scores per condition, the paired deltas
    vs ``orig`` and the Pearson / Spearman of PTF vs the per-phase average. The judge is each
    trajectory's own unless ``judge_model`` names another.

    Raises:
        InputError: ``out`` holds no usable trajectory, or its probes are not in
            ``context.data_dir``.
    """
    from personae.evals.arcane import perturb as pt
    from personae.evals.arcane.results import read_results
    from personae.files import write_json_atomic, write_text_atomic

    judged = pt.parse_conditions(conditions)
    if not out.is_dir():
        raise InputError(f"{out} is not a folder", "pass the --out folder of personae arcane eval")
    records = read_results(out)
    chosen = pt.sample(records, mode, sample, include_thought=include_thought)
    if not chosen:
        raise InputError(
            f"no {mode}-mode trajectory with {pt.MIN_PHASES}+ judged phases in "
            f"{out / 'results.jsonl'}",
            f"run personae arcane eval BOOK --modes {mode} --out {out} first",
        )
    folder = Path(context.data_dir)
    probes = pt.load_probe_index(folder, {r["novel"] for r in chosen})
    lost = sorted({r["probe_id"] for r in chosen} - set(probes))
    if lost:
        raise InputError(
            f"probe {lost[0]} of the results is not in {folder}'s probes",
            "pass the --data folder the evaluation used",
        )
    context.llm("strong")  # no LLM or a bad spec fails here, before any judge call
    progress(f"re-judging {len(chosen)} trajectories under orig and {len(judged)} condition(s)")
    counts = await pt.rejudge(
        records=chosen,
        probes=probes,
        conditions=judged,
        context=context,
        out=out,
        judge_model=judge_model,
        include_thought=include_thought,
        concurrency=concurrency,
    )
    table = pt.summarize_perturb(pt.read_perturb(out))
    correlations = pt.ptf_correlations(records)
    write_json_atomic(
        out / "perturb.json",
        {"conditions": table, "ptf_vs_per_phase": correlations, "counts": counts},
    )
    text = pt.markdown(table, correlations)
    write_text_atomic(out / "perturb.md", text + "\n")
    return PerturbRun(
        len(chosen),
        list(judged),
        dict(counts),
        table,
        correlations,
        text,
        out / "perturb.json",
        out / "perturb.md",
    )
