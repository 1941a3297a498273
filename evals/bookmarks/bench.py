"""The BOOKMARKS benchmark runner: methods × storylines, resumable and judged.

Why it is shaped this way (the released runner's schedule): one artifact is one shared memory
(one bookmark bank), and its targets, every major character's, run in one global story order,
exactly as a reader meets them. Parallelism goes across (method, artifact) runs only, never
across the characters of one artifact, so the results do not depend on ``--concurrency``.
Every finished instance is one whole line appended to ``results.jsonl``; a rerun skips what is
done, so an interrupted benchmark costs nothing twice, and judge verdicts are cached on disk
for the same reason. The instance that was running resumes too: every method step runs with an
SQLite checkpoint and an answer journal in the memory folder (:mod:`personae.graphs.bookmarks.step_checkpoints`),
so its rerun pays only for the LLM calls that were in flight. Methods are resolved lazily by name, so the harness works with whichever
method graphs are installed; a method name may carry ablations (``bookmarks+no-derive``).
An instance whose model answer is still invalid after retries (no valid action, no valid
verdict) is recorded as failed in ``failures.jsonl``, with the reason, and the bench goes on:
failed instances are left out of the scores, counted in the summary and the report, and run
again by the next invocation; ``max_failures`` stops a run that fails too many.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import importlib
import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from typing_extensions import TypedDict

from personae.agents.bookmarks.action_judge import check_judge, judge_action
from personae.answer_store import AnswerStore
from personae.degraded import FailureBudget
from personae.errors import ConfigurationError, InputError, NothingUsableError, PersonaeError
from personae.evals.bookmarks.instances import BenchInstance, build_instances
from personae.evals.bookmarks.metrics import summarize
from personae.evals.bookmarks.paper_settings import bench_rows
from personae.evals.bookmarks.report import degraded_answers, write_report
from personae.evals.paper_settings import PaperSetting, rows_json
from personae.files import append_jsonl, write_json_atomic
from personae.graphs.bookmarks.acting import NEAR_DETERMINISTIC, ActingContext
from personae.graphs.bookmarks.step_checkpoints import StepCheckpoints
from personae.llm import InvalidAnswerError
from personae.llm_endpoint import chosen_methods
from personae.memory.bookmarks.storyline import ActingFormat, Storyline, open_storyline
from personae.progress import CountedLine, Progress, quiet
from personae.run_context import LLMContext
from personae.settings import DEFAULT_JUDGE_MODEL

logger = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
FAILURES_FILE = "failures.jsonl"
"""One line per instance that failed (model answer still invalid after retries), with why."""
SUMMARY_FILE = "summary.json"
JUDGE_CACHE_DIR = "judge_cache"
CURRENT_INSTANCE: contextvars.ContextVar[BenchInstance | None] = contextvars.ContextVar(
    "personae_bench_instance", default=None
)
"""The instance whose method graph is running in this task (log correlation, audits)."""
ResultKey = tuple[str, str, str, int, str]
"""(artifact, method, character, position, judge): one line of results.jsonl."""
ABLATIONS: dict[str, dict[str, Any]] = {
    "no-reuse": {"k_candidates": 0},
    "no-derive": {"derive": False},
    "no-near": {"near_window": 0},
    "ibu": {"incremental_behavior": True},
    "with-profile": {"with_profile": True},
}
"""The BOOKMARKS ablations (the paper's Table 3 and the released runner's profile grounding):
name → context fields they set. ``no-reuse`` keeps no candidate (K' = 0), so every question
starts a new bookmark; ``no-derive`` turns derive decisions into new bookmarks; ``no-near``
drops the near bookmarks from grounding; ``ibu`` (Table 3's "Incremental Behavior Update")
syncs behavioral bookmarks chunk by chunk like states; ``with-profile`` adds the running ETA
profile."""
ABLATABLE = frozenset({"bookmarks", "bookmarks-personae"})
"""Methods that accept ablations."""


@dataclass(frozen=True)
class MethodSpec:
    """Where a method's graph lives: imported only when the method is run."""

    module: str
    context: str
    graph: str = "graph"
    fields: Mapping[str, Any] = field(default_factory=dict)
    """Context fields that make the method (ours: the same graph with our prompts)."""


METHODS: dict[str, MethodSpec] = {
    "vanilla": MethodSpec("personae.graphs.bookmarks.baseline_vanilla", "VanillaContext"),
    "ricl": MethodSpec("personae.graphs.bookmarks.baseline_ricl", "RICLContext"),
    "eta": MethodSpec("personae.graphs.bookmarks.baseline_eta", "ETAContext"),
    "bookmarks": MethodSpec(
        "personae.graphs.bookmarks.graph", "BookmarksContext", fields={"prompts": "released"}
    ),
    "bookmarks-personae": MethodSpec(
        "personae.graphs.bookmarks.graph", "BookmarksContext", fields={"prompts": "personae"}
    ),
}
"""Method name → graph module; tests and plugins may add entries."""


def _embedding_field(context_cls: type[ActingContext], embedding: str) -> dict[str, Any]:
    """``{"embedding": ...}`` for contexts that have the field (methods using Chroma)."""
    names = {f.name for f in dataclasses.fields(context_cls)}
    return {"embedding": embedding} if embedding and "embedding" in names else {}


@dataclass(frozen=True)
class MethodRun:
    """A method as run: its registry name, its ablations and the label results carry."""

    method: str
    ablations: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``bookmarks`` or ``bookmarks+no-derive+no-reuse``: the ``method`` of its records."""
        return "+".join((self.method, *self.ablations))

    def overrides(self) -> dict[str, Any]:
        """Context fields the ablations set."""
        fields: dict[str, Any] = {}
        for name in self.ablations:
            fields.update(ABLATIONS[name])
        return fields


def parse_method(text: str) -> MethodRun:
    """``bookmarks+no-derive`` → MethodRun; unknown methods or ablations are InputErrors."""
    name, *ablations = [part.strip() for part in text.split("+")]
    if name not in METHODS:
        raise InputError(f"unknown method {name!r}", f"use one of: {', '.join(METHODS)}")
    for ablation in ablations:
        if ablation not in ABLATIONS:
            raise InputError(
                f"unknown ablation {ablation!r} in {text!r}",
                f"use {name}+ABLATION with one of: {', '.join(ABLATIONS)}",
            )
        if name not in ABLATABLE:
            raise InputError(
                f"method {name!r} has no ablations ({text!r})",
                f"ablate {', '.join(sorted(ABLATABLE))} only, e.g. bookmarks+no-derive",
            )
    ordered = tuple(a for a in ABLATIONS if a in ablations)
    return MethodRun(name, ordered)


def load_method(name: str) -> tuple[Any, type[ActingContext]]:
    """The compiled graph and context class of method ``name``.

    Unknown names are an :class:`InputError`; a known method whose module is not installed
    (not landed yet, or removed) is a :class:`ConfigurationError` naming the module.
    """
    spec = METHODS.get(name)
    if spec is None:
        raise InputError(f"unknown method {name!r}", f"use one of: {', '.join(METHODS)}")
    try:
        module = importlib.import_module(spec.module)
    except ModuleNotFoundError as error:
        if error.name is None or not spec.module.startswith(error.name):
            raise
        raise ConfigurationError(
            f"method {name!r} is not available in this install ({spec.module} is missing)",
            f"run another --method ({', '.join(sorted(METHODS))}) or update Personae",
        ) from None
    context = getattr(module, spec.context)
    if not (isinstance(context, type) and issubclass(context, ActingContext)):
        raise ConfigurationError(
            f"{spec.module}.{spec.context} is not an ActingContext", "fix the method registry"
        )
    return getattr(module, spec.graph), context


@dataclass(frozen=True, kw_only=True)
class BenchModels(LLMContext):
    """The benchmark's models: the methods' strong and fast ones and the judge, one rule.

    Sampled as the method graphs are (temperature 0 unless told otherwise); the judge defaults
    to the paper's, never silently the acting model, which would grade its own predictions.
    """

    default_sampling: ClassVar[Mapping[str, str]] = NEAR_DETERMINISTIC
    default_judge: ClassVar[str] = DEFAULT_JUDGE_MODEL

    judge_model: str = ""
    """Judge model. Empty: PERSONAE_JUDGE_MODEL, else openai:gpt-4.1 (the paper's judge)."""

    def __post_init__(self) -> None:
        """Fill the models by the settings rule, the judge too."""
        super().__post_init__()
        object.__setattr__(self, "judge_model", self.judge_spec(self.judge_model))


@dataclass(frozen=True, kw_only=True)
class BenchContext:
    """The run settings of a benchmark run; the model settings left empty are filled when made.

    The CLI passes its flags as they are; :class:`BenchModels` applies the settings rule, so
    records, the verdict cache and every method's context name the same resolved models.
    """

    model: str = ""
    """Strong model spec given to the method graphs (acting); empty: ``PERSONAE_MODEL``."""
    fast_model: str = ""
    """Cheap model spec given to the method graphs (matching, sync); empty: the model rule."""
    judge_model: str = ""
    """Judge model spec; empty: ``PERSONAE_JUDGE_MODEL``, else ``openai:gpt-4.1``."""
    memory_dir: Path | None = None
    """Persistent memory root (one sub-folder per method); default ``<out_dir>/memory``."""
    judge: str = "exact"
    characters: tuple[str, ...] = ()
    """Only these characters (all benchmarked characters when empty)."""
    limit: int | None = None
    """Test instances per character (all when ``None``)."""
    concurrency: int = 2
    """(method, artifact) runs at once; the characters of one artifact never run in parallel."""
    scene_size: int = 10
    hide_title: bool = True
    """Leave the story's title out of every prompt (the default, as the released prompts)."""
    roles: str = "paper"
    """The BOOKMARKS role preset: ``paper`` (§5.1) or ``released`` (the released runner)."""
    judge_cache: Path | None = None
    """Judge answer cache folder; default ``<out_dir>/judge_cache`` (the CLI uses the shared
    ``PERSONAE_CACHE_DIR/judge``, so verdicts are reused across output folders)."""
    embedding: str = ""
    """Embedding of the methods' Chroma stores, given to every method whose context has an
    ``embedding`` field (BOOKMARKS, RICL); empty: ``PERSONAE_EMBEDDINGS``, else hashing."""
    openai_base_url: str = ""
    """OpenAI-compatible server of the three models; empty: ``OPENAI_BASE_URL``, else OpenAI."""
    temperature: str = ""
    """Sampling temperature per role (``strong=0.7,judge=0``); empty: ``PERSONAE_TEMPERATURE``,
    else 0 for every role."""
    top_p: str = ""
    """Nucleus sampling top-p per role; empty: ``PERSONAE_TOP_P``."""
    judge_cache_name: str = ""
    """The judge's name in the verdict cache and records; default the judge's spec plus its
    server (the same model name on another server is another judge)."""
    max_failures: FailureBudget = field(default_factory=FailureBudget)
    """Failed instances tolerated (of those this invocation runs) before the run stops."""
    server_url: str = ""
    """A LangGraph server the method steps run on (``--server``); empty: in this process."""

    def __post_init__(self) -> None:
        """Resolve the models once, by the settings rule (:class:`BenchModels`)."""
        models = self.models()
        for name in ("model", "fast_model", "judge_model", "openai_base_url", "temperature"):
            object.__setattr__(self, name, getattr(models, name))
        object.__setattr__(self, "top_p", models.top_p)
        name = self.judge_cache_name or models.cache_name(models.judge_model)
        object.__setattr__(self, "judge_cache_name", name)

    def models(self) -> BenchModels:
        """The run's models (resolved: the judge among them) and the settings they came from."""
        return BenchModels(
            model=self.model,
            fast_model=self.fast_model,
            judge_model=self.judge_model,
            openai_base_url=self.openai_base_url,
            temperature=self.temperature,
            top_p=self.top_p,
        )

    def name_of(self, role: str) -> str:
        """The model name recorded for ``role`` (``model``, ``fast_model``, ``judge_model``)."""
        if role == "judge_model" and self.judge_cache_name:
            return self.judge_cache_name
        return str(getattr(self, role))


@dataclass(frozen=True, kw_only=True)
class BenchConfig(BenchContext):
    """One benchmark invocation: its storylines, methods and output folder, and its settings."""

    storylines: tuple[str, ...]
    """Storyline files (BOOKMARKS release JSON or JSONL)."""
    methods: tuple[str, ...]
    out_dir: Path
    """Where results.jsonl, summary.json, the reports and the judge cache go."""


def result_key(record: Mapping[str, Any]) -> ResultKey:
    """The resume key of a result record."""
    return (
        str(record["artifact"]),
        str(record["method"]),
        str(record["character"]),
        int(record["position"]),
        str(record["judge"]),
    )


def read_results(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Records of ``results.jsonl`` (first of any duplicates) and notices about bad lines.

    Every line is written whole with its newline, so a last line without one was cut by a crash:
    it is trimmed from the file (the instance runs again) and reported. Other unreadable lines
    are skipped and reported.
    """
    if not path.is_file():
        return [], []
    data = path.read_bytes()
    notes: list[str] = []
    records: dict[ResultKey, dict[str, Any]] = {}
    lines = data.split(b"\n")
    offset = 0
    for number, raw in enumerate(lines[:-1], start=1):
        offset += len(raw) + 1
        record = _parse_line(raw)
        if record is None:
            if raw.strip():
                notes.append(f"{path}:{number} is not a valid result line; ignored it")
            continue
        records.setdefault(result_key(record), record)
    if lines[-1].strip():
        with path.open("r+b") as handle:
            handle.truncate(offset)
            os.fsync(handle.fileno())
        notes.append(
            f"{path}: trimmed a truncated last line (an interrupted write); that instance reruns"
        )
    return list(records.values()), notes


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    from personae.errors import InputError
    from personae.files import parse_json

    try:
        record = parse_json(raw, "a result line")  # no 1e309 (infinity) score, no deep nesting
        result_key(record)
    except (InputError, ValueError, KeyError, TypeError, OverflowError) as error:
        logger.info("skipped a damaged result line: %s", error)
        return None
    return record if isinstance(record, dict) else None


@dataclass
class BenchOutcome:
    """What a run did and where it wrote."""

    ran: int
    """Instances run (and appended) by this invocation."""
    skipped: int
    """Instances already in results.jsonl."""
    summary: dict[str, Any]
    summary_path: Path
    report_paths: tuple[Path, Path]
    notes: list[str] = field(default_factory=list)
    rejudged: int = 0
    """Of ``ran``: earlier predictions (another judge's run) judged again, method not rerun."""
    resumed: int = 0
    """Of ``ran``: interrupted method steps resumed from their checkpoints."""
    failed: int = 0
    """Instances this invocation recorded as failed (not in ``ran``)."""


@dataclass
class _Run:
    """Shared state of one invocation's character tasks."""

    config: BenchConfig
    judge_model: BaseChatModel
    judge_cache: AnswerStore
    results_path: Path
    done: set[ResultKey]
    predictions: dict[tuple[str, str, str, int], Mapping[str, Any]]
    progress: Progress
    steps: Any
    """Checkpoints of the instances' method steps (an interrupted step resumes):
    ``StepCheckpoints``, or ``ServerSteps`` for a LangGraph server."""
    ran: int = 0
    rejudged: int = 0
    resumed: int = 0
    """Interrupted method steps resumed from their checkpoints."""
    pending: int = 0
    """Instances this invocation has to run (what ``max_failures`` is a share of)."""
    failed: int = 0
    """Instances this invocation recorded as failed."""
    started: float = 0.0
    """When the instances started (``time.monotonic``), for the minutes in each line."""


def _open_storylines(paths: Sequence[str]) -> dict[str, tuple[Storyline, str]]:
    opened: dict[str, tuple[Storyline, str]] = {}
    for path in dict.fromkeys(paths):
        storyline = open_storyline(path)
        if storyline.name in opened:
            raise InputError(
                f"two storyline files are both named {storyline.name!r} ({opened[storyline.name][1]}"
                f" and {path})",
                "rename one: results are keyed by storyline name",
            )
        opened[storyline.name] = (storyline, str(path))
    return opened


def _check_config(config: BenchConfig) -> None:
    check_judge(config.judge)
    if not config.storylines:
        raise InputError("no storyline given", "pass one or more storyline files")
    if not config.methods:
        raise InputError("no method given", f"pass --method ({', '.join(METHODS)})")
    if config.concurrency < 1:
        raise InputError("--concurrency must be at least 1", "pass 1 or more")


class BenchRecord(TypedDict):
    """One judged instance: one line of ``results.jsonl``."""

    artifact: str
    method: str
    character: str
    position: int
    chapter: str
    format: ActingFormat
    """``utterance`` or ``action`` (how the storyline's lines read)."""
    judge: str
    """``exact`` or ``nli``."""
    judge_model: str
    model: str
    fast_model: str
    prediction: str
    truth: str
    score: int
    """Points (0, 50 or 100)."""
    label: str
    """The judge's grade (A, B, C)."""
    reason: str
    grounding: list[str]
    """What the method showed the actor."""
    stats: dict[str, int]
    """The method's step counters (reads, LLM calls, reuse...)."""
    judge_usage: dict[str, int]
    reused_prediction: bool
    """True when an earlier run's prediction was judged again (another judge)."""


async def _run_instance(
    run: _Run, method: str, graph: Any, context: ActingContext, instance: BenchInstance
) -> BenchRecord:
    prior = run.predictions.get((instance.artifact, method, instance.character, instance.position))
    if prior is not None:
        prediction = str(prior["prediction"])
        grounding = list(prior.get("grounding") or [])
        stats = dict(prior.get("stats") or {})
    else:
        token = CURRENT_INSTANCE.set(instance)
        try:
            step = await run.steps.invoke(
                graph, {"character": instance.character, "position": instance.position}, context
            )
        finally:
            CURRENT_INSTANCE.reset(token)
        output = step.output
        run.resumed += int(step.resumed)
        prediction = str(output.get("action") or "")
        grounding = [str(line) for line in output.get("grounding") or []]
        stats = {str(k): int(v) for k, v in (output.get("stats") or {}).items()}
    verdict, usage = await judge_action(
        run.judge_model,
        run.config.judge,
        character=instance.character,
        prediction=prediction,
        truth=instance.truth,
        scene=instance.scene,
        acting_format=instance.acting_format,
        cache=run.judge_cache,
        model_name=run.config.name_of("judge_model"),
    )
    return BenchRecord(
        artifact=instance.artifact,
        method=method,
        character=instance.character,
        position=instance.position,
        chapter=instance.chapter,
        format=instance.acting_format,
        judge=run.config.judge,
        judge_model=run.config.name_of("judge_model"),
        model=run.config.name_of("model"),
        fast_model=run.config.name_of("fast_model"),
        prediction=prediction,
        truth=instance.truth,
        score=verdict.score,
        label=verdict.label,
        reason=verdict.reason,
        grounding=grounding,
        stats=stats,
        judge_usage=usage.as_dict(),
        reused_prediction=prior is not None,
    )


async def _run_artifact(
    run: _Run,
    semaphore: asyncio.Semaphore,
    method: str,
    graph: Any,
    context: ActingContext,
    instances: Sequence[BenchInstance],
) -> None:
    """Run one artifact's pending instances, every character's, in one global story order."""
    async with semaphore:
        for instance in instances:
            key = (instance.artifact, method, instance.character, instance.position)
            if (*key, run.config.judge) in run.done:
                continue
            try:
                record = await _run_instance(run, method, graph, context, instance)
            except (InvalidAnswerError, NothingUsableError) as failed:
                _record_failure(run, method, instance, failed)
                continue
            append_jsonl(run.results_path, record)
            run.done.add(result_key(record))
            run.ran += 1
            run.rejudged += int(record["reused_prediction"])
            run.progress(_advanced(run, record))


def _advanced(run: _Run, record: Mapping[str, Any]) -> CountedLine:
    """The line of one finished instance: instances done of all, which one, minutes so far."""
    minutes = (time.monotonic() - run.started) / 60
    label = f"{record['method']} {record['artifact']} {record['character']}"
    return CountedLine(
        f"bench {run.ran}/{run.pending}: {label} done ({minutes:.1f} min)",
        done=run.ran,
        total=run.pending,
        label=label,
    )


def _started(remaining: int, skipped: int) -> CountedLine:
    """The first counted line: how many instances will run, how many an earlier run did."""
    before = f" ({skipped} done by an earlier run)" if skipped else ""
    return CountedLine(
        f"bench: {remaining} instances to run{before}",
        done=0,
        total=remaining,
        label=f"bench ({skipped} done before)" if skipped else "bench",
    )


def _record_failure(run: _Run, method: str, instance: BenchInstance, error: PersonaeError) -> None:
    """Append the failed instance to ``failures.jsonl``; stop when too many failed."""
    failure = {
        "artifact": instance.artifact,
        "method": method,
        "character": instance.character,
        "position": instance.position,
        "judge": run.config.judge,
        "reason": error.problem,
    }
    append_jsonl(run.results_path.with_name(FAILURES_FILE), failure)
    run.failed += 1
    run.progress(
        f"{method} {instance.artifact} {instance.character} at {instance.position} failed "
        f"(recorded, the bench goes on): {error.problem[:200]}"
    )
    run.config.max_failures.check(run.failed, run.pending, "bench instances")


def _first_error(group: BaseExceptionGroup[Any]) -> BaseException:
    leaves: list[BaseException] = []

    def collect(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                collect(inner)
        else:
            leaves.append(error)

    collect(group)
    preferred = [e for e in leaves if isinstance(e, PersonaeError)]
    return (preferred or leaves)[0]


def _model_mismatches(
    records: Iterable[Mapping[str, Any]], config: BenchConfig, methods: set[str]
) -> list[str]:
    """Warn when done results of these methods came from another acting model.

    The resume key leaves the model out (a rerun must not redo work because a model alias
    changed), so comparing models needs separate ``--out`` folders: say so instead of mixing.
    """
    model = config.name_of("model")
    others = sorted(
        {str(r.get("model")) for r in records if r["method"] in methods} - {model, "None"}
    )
    if not others:
        return []
    return [
        f"{config.out_dir / RESULTS_FILE} already has results from model {', '.join(others)}; "
        f"they are kept and skipped, not rerun with {model} (use another --out to compare models)"
    ]


def _prior_predictions(
    records: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, str, str, int], Mapping[str, Any]]:
    """Predictions already made under another judge: re-judged, not re-run."""
    prior: dict[tuple[str, str, str, int], Mapping[str, Any]] = {}
    for record in records:
        key = result_key(record)
        prior.setdefault(key[:4], record)
    return prior


def announce_cost(
    config: BenchConfig,
    work: Sequence[tuple[str, Any, Any, Any]],
    done: set[Any],
    progress: Progress,
    storylines: Mapping[str, Storyline] | None = None,
) -> None:
    """Tell the estimated calls and tokens of what is left to run, and who will be paid."""
    from personae.agents.costs import estimate_line
    from personae.evals.bookmarks.costs import estimate_bench

    pending = [
        (label, [i for i in found if (*_key(i, label), config.judge) not in done])
        for label, _, _, found in work
    ]
    models = {
        "model": config.name_of("model"),
        "fast model": config.name_of("fast_model"),
        "judge": config.name_of("judge_model"),
    }
    progress(estimate_line(estimate_bench(pending, storylines), models).rstrip("\n"))


def _key(instance: BenchInstance, label: str) -> tuple[str, str, str, int]:
    return instance.artifact, label, instance.character, instance.position


async def run_bench(
    storylines: Sequence[str],
    *,
    methods: Sequence[str],
    out: Path,
    context: BenchContext | None = None,
    progress: Progress = quiet,
) -> BenchOutcome:
    """Run (or resume) BOOKMARKS' benchmark (Table 2); write results.jsonl, summary.json, reports.

    Each of ``methods`` (``vanilla``, ``ricl``, ``eta``, ``bookmarks``, ...) acts at every test
    instance of ``storylines`` (release JSON or JSONL) and is judged; ``out`` gets the results,
    the summary, the reports and (by default) the methods' memory. ``context`` holds the run
    settings (models, judge, characters, limit, concurrency; default: the settings'). ``progress``
    gets the estimate, the notices, and a :class:`~personae.progress.CountedLine` per finished
    instance (a caller may draw a bar). Everything that can be wrong with the input (files,
    characters, methods, judge) is checked before the first instance runs, so bad input writes
    nothing.

    Raises:
        InputError: a storyline, character, method or judge the run cannot use.
        NothingUsableError: every instance failed.
    """
    settings = context or BenchContext()
    config = BenchConfig(
        storylines=tuple(storylines),
        methods=tuple(methods),
        out_dir=out,
        **{f.name: getattr(settings, f.name) for f in fields(BenchContext)},
    )
    return await run_bench_config(config, progress=progress)


async def run_bench_config(config: BenchConfig, *, progress: Progress = quiet) -> BenchOutcome:
    """:func:`run_bench` of one :class:`BenchConfig` (its inputs and settings in one record)."""
    _check_config(config)
    storylines = _open_storylines(config.storylines)
    instances = build_instances(
        (s for s, _ in storylines.values()), config.characters, config.limit, config.scene_size
    )
    runs = [parse_method(text) for text in dict.fromkeys(config.methods)]
    runs = list({r.label: r for r in runs}.values())
    loaded = {r.method: load_method(r.method) for r in runs}
    memory_root = config.memory_dir or config.out_dir / "memory"
    work = []
    for method_run in runs:
        graph, context_cls = loaded[method_run.method]
        for artifact, pending in instances.items():
            context = _context(
                config, context_cls, method_run, storylines[artifact][1], memory_root
            )
            work.append((method_run.label, graph, context, pending))
    judge_model = config.models().chat_model(config.judge_model, "judge")
    results_path = config.out_dir / RESULTS_FILE
    records, notes = read_results(results_path)
    notes += _model_mismatches(records, config, {r.label for r in runs})
    for note in notes:
        progress(note)
    done = {result_key(r) for r in records}
    steps = _steps(config, memory_root)
    run = _Run(
        config=config,
        judge_model=judge_model,
        judge_cache=AnswerStore(config.judge_cache or config.out_dir / JUDGE_CACHE_DIR),
        results_path=results_path,
        done=done,
        predictions=_prior_predictions(records),
        progress=progress,
        steps=steps,
    )
    announce_cost(config, work, done, progress, {a: s for a, (s, _) in storylines.items()})
    settings = bench_rows(config, {label: context for label, _, context, _ in work})
    total = sum(len(p) for *_, p in work)
    remaining = sum(
        1
        for label, _, _, pending in work
        for i in pending
        if (i.artifact, label, i.character, i.position, config.judge) not in done
    )
    run.pending = remaining
    run.started = time.monotonic()
    progress(_started(remaining, total - remaining))
    complete = False
    try:
        async with steps, asyncio.TaskGroup() as group:
            semaphore = asyncio.Semaphore(config.concurrency)
            for label, graph, context, pending in work:
                group.create_task(_run_artifact(run, semaphore, label, graph, context, pending))
        complete = True
    except BaseExceptionGroup as errors:
        raise _first_error(errors) from None
    finally:
        summary, summary_path, report_paths = _write_outputs(config, complete, runs, settings)
    if run.failed and not summary["instances"]:
        first = summary["failed"]["failures"][0]
        raise NothingUsableError(
            f"every one of the {run.failed} bench instances failed (first: {first['reason']})"
        )
    return BenchOutcome(
        run.ran,
        total - remaining,
        summary,
        summary_path,
        report_paths,
        notes,
        run.rejudged,
        run.resumed,
        run.failed,
    )


def _steps(config: BenchConfig, memory_root: Path) -> Any:
    """Where the method steps run: checkpointed in this process, or on a LangGraph server."""
    if config.server_url:
        from personae.evals.bookmarks.server_steps import ServerSteps

        return ServerSteps(config.server_url, config.out_dir)
    return StepCheckpoints(memory_root, config.models().settings)


def _context(
    config: BenchConfig,
    context_cls: type[ActingContext],
    method_run: MethodRun,
    storyline_path: str,
    memory_root: Path,
) -> ActingContext:
    """The method's context for one artifact: shared settings, ablations, its own memory."""
    known = {f.name for f in fields(context_cls)}
    overrides = {**METHODS[method_run.method].fields, **method_run.overrides()}
    if "roles" in known:
        overrides.setdefault("roles", config.roles)
    missing = sorted(set(overrides) - known)
    if missing:
        raise ConfigurationError(
            f"{context_cls.__name__} has no field {missing[0]!r} for {method_run.label!r}",
            "update Personae (the method does not support this ablation)",
        )
    return context_cls(
        storyline_path=storyline_path,
        model=config.model,
        fast_model=config.fast_model,
        openai_base_url=config.openai_base_url,
        temperature=config.temperature,
        top_p=config.top_p,
        memory_dir=str(memory_root / method_run.label),
        scene_size=config.scene_size,
        hide_title=config.hide_title,
        **_embedding_field(context_cls, config.embedding),
        **overrides,
    )


def _write_outputs(
    config: BenchConfig,
    complete: bool,
    runs: Sequence[MethodRun] = (),
    settings: Sequence[PaperSetting] = (),
) -> tuple[dict[str, Any], Path, tuple[Path, Path]]:
    """summary.json and the reports from every result of this judge (atomic writes)."""
    records, _ = read_results(config.out_dir / RESULTS_FILE)
    mine = [r for r in records if r["judge"] == config.judge]
    failures = open_failures(config.out_dir / FAILURES_FILE, {result_key(r) for r in mine})
    summary: dict[str, Any] = {
        "judge": config.judge,
        "judge_model": config.name_of("judge_model"),
        "model": config.name_of("model"),
        "fast_model": config.name_of("fast_model"),
        "complete": complete,
        "instances": len(mine),
        "hide_title": config.hide_title,
        "roles": config.roles,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "ablations": _ablations_of(mine, runs),
        "paper_settings": rows_json(settings),
        "failed": {"instances": len(failures), "failures": failures},
        **summarize(mine),
    }
    summary["degraded_answers"] = degraded_answers(
        summary
    )  # per method, methods with none left out
    if methods := chosen_methods():  # how structured answers were asked for, per endpoint
        summary["structured_output"] = methods
    summary_path = config.out_dir / SUMMARY_FILE
    if not mine:
        return summary, summary_path, (Path(), Path())
    write_json_atomic(summary_path, summary)
    return summary, summary_path, write_report(config.out_dir, summary, mine)


def open_failures(path: Path, done: set[ResultKey]) -> list[dict[str, Any]]:
    """Failed instances not run successfully since (the first failure of each), in order."""
    records, _ = read_results(path)
    return [r for r in records if result_key(r) not in done]


def _ablations_of(
    records: Iterable[Mapping[str, Any]], runs: Sequence[MethodRun]
) -> dict[str, list[str]]:
    """Method label → its ablations (every label in the results or in this run)."""
    labels = dict.fromkeys([*(str(r["method"]) for r in records), *(r.label for r in runs)])
    result: dict[str, list[str]] = {}
    for label in labels:
        name, *ablations = label.split("+")
        result[label] = [a for a in ablations if a in ABLATIONS] if name in METHODS else []
    return result
