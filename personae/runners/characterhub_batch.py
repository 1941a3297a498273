"""CharacterHub's batch runner: profile a character list, de-duplicated and filtered, resumably.

``personae profile --batch`` (here or on ``--server``) and library users call
:func:`profile_characters`. It checks the run's settings, drops duplicate rows by the chosen rule
and (with the paper's rule) the rows the paper's quality control drops (§3.1, both in
:mod:`personae.memory.characterhub.dedup`), reports the estimate before the first call, and
profiles the rest a few at a time with :func:`~personae.runners.characterhub.profile_character`
(the runner the web page's one-character jobs and the MCP tool call) over the folder's one
checkpointer or one server client. A character whose ``profile.json`` exists is not run again,
and an interrupted one resumes from its checkpoint, so rerunning an interrupted batch finishes
it. A failed character degrades the batch; it never stops the others. The result,
:class:`ProfileBatch`, is what the CLI prints and what a page can show
(:meth:`ProfileBatch.as_json`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from personae.errors import InputError, PersonaeError
from personae.memory.characterhub.character_list import CharacterRow
from personae.runners import Progress, quiet

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from personae.agents.costs import Estimate
    from personae.graphs.characterhub.state import ProfilerContext
    from personae.memory.characterhub.dedup import DedupRule
    from personae.server_runs import ServerRuns

Outcome = Literal["profiled", "done", "duplicate", "filtered", "failed"]
"""What a batch did with a row: profiled now, done before, dropped (duplicate, filtered), failed."""
OUTCOMES: tuple[Outcome, ...] = ("profiled", "done", "duplicate", "filtered", "failed")


@dataclass(frozen=True)
class CharacterOutcome:
    """What a batch did with one row of its character list."""

    row: CharacterRow
    outcome: Outcome
    detail: str = ""
    """``duplicate``: the kept row's name; ``filtered``: the reason; ``failed``: the error line."""
    folder: Path | None = None
    """``profiled`` and ``done``: the character's folder (``profile.json``, ``.md``, ``card``)."""
    llm_calls: int = 0
    """``profiled``: the model calls of the character's run, as its ``profile.json`` counts them."""
    tokens: int = 0
    """``profiled``: input plus output tokens of the character's run."""
    resumed: bool = False
    """``profiled``: written from a checkpoint (an interrupted run resumed, or finished before)."""

    def as_json(self) -> dict[str, Any]:
        """The outcome as plain JSON values (a page or an API answer)."""
        return {
            "name": self.row.name,
            "franchise": self.row.franchise,
            "wiki": self.row.wiki,
            "source": self.row.source,
            "outcome": self.outcome,
            "detail": self.detail,
            "folder": str(self.folder) if self.folder else None,
            "llm_calls": self.llm_calls,
            "tokens": self.tokens,
            "resumed": self.resumed,
        }


@dataclass(frozen=True)
class ProfileBatch:
    """A batch's report: one outcome per row, in the list's order, and the estimate shown first."""

    outcomes: list[CharacterOutcome]
    estimate: Estimate
    """At most what the characters left after de-duplication and filtering cost (before the run)."""
    notices: list[str] = field(default_factory=list)
    """Lines about the whole batch (a quality filter without an alias table)."""

    def of(self, outcome: Outcome) -> list[CharacterOutcome]:
        """The rows with ``outcome``, in the list's order."""
        return [o for o in self.outcomes if o.outcome == outcome]

    @property
    def counts(self) -> dict[Outcome, int]:
        """How many rows had each outcome (every outcome present, zeros included)."""
        found = Counter(o.outcome for o in self.outcomes)
        return {outcome: found[outcome] for outcome in OUTCOMES}

    @property
    def llm_calls(self) -> int:
        """Model calls of the characters profiled, as their ``profile.json`` count them.

        A run resumed or read back from its checkpoint counts what it paid before too.
        """
        return sum(o.llm_calls for o in self.outcomes)

    @property
    def tokens(self) -> int:
        """Input plus output tokens of the characters profiled (counted as :attr:`llm_calls`)."""
        return sum(o.tokens for o in self.outcomes)

    def summary(self) -> str:
        """One line: ``2 profiled, 1 already done, 1 duplicates, 0 filtered, 0 failed``."""
        n = self.counts
        return (
            f"{n['profiled']} profiled, {n['done']} already done, {n['duplicate']} duplicates, "
            f"{n['filtered']} filtered, {n['failed']} failed"
        )

    def as_json(self) -> dict[str, Any]:
        """The report as plain JSON values (a page or an API answer)."""
        return {
            "summary": self.summary(),
            "counts": dict(self.counts),
            "llm_calls": self.llm_calls,
            "tokens": self.tokens,
            "estimate": {
                "calls": self.estimate.calls,
                "tokens": self.estimate.tokens,
                "detail": self.estimate.detail,
            },
            "notices": list(self.notices),
            "outcomes": [o.as_json() for o in self.outcomes],
        }


def estimate_characters(context: ProfilerContext, characters: int) -> Estimate:
    """At most what profiling ``characters`` characters costs: one profile's estimate, times n."""
    from personae.agents.costs import Estimate
    from personae.runners.characterhub import estimate_profile

    one = estimate_profile(context)
    detail = one.detail if characters == 1 else f"{characters} characters: {one.detail}"
    return Estimate(one.calls * characters, one.tokens * characters, detail)


def report_estimate(context: ProfilerContext, characters: int, progress: Progress) -> Estimate:
    """Say the estimate of ``characters`` profiles and the models paid, before the first call."""
    from personae.agents.costs import estimate_line

    estimate = estimate_characters(context, characters)
    models = {"model": context.model, "fast model": context.fast_model}
    progress(estimate_line(estimate, models).rstrip("\n"))
    return estimate


def check_profile_run(context: ProfilerContext, *, local: bool) -> None:
    """Check what a run reads only once it started, so a typo fails before the estimate.

    The models (no LLM, or a bad spec), the cache folder, the checkpointer setting (``local``:
    the checkpoints are kept here, not on a server) and the Fandom template.

    Raises:
        PersonaeError: the setting's one-line message.
    """
    from personae.files import CACHE_FIX, check_writable_dir
    from personae.settings import check_checkpointer_spec
    from personae.urls import web_url

    context.llm("strong")  # no LLM or a bad spec fails here, before any fetch
    context.llm("fast")
    context.role_llm("rewrite")
    context.role_llm("search")
    if context.cache_dir:
        check_writable_dir(Path(context.cache_dir), "PERSONAE_CACHE_DIR", CACHE_FIX)
    if local:
        check_checkpointer_spec(context.settings.checkpointer)
    template = context.fandom_template.replace("{slug}", "x")
    web_url(template, "PERSONAE_FANDOM_TEMPLATE", "https://{slug}.fandom.com")


async def profile_characters(
    rows: Iterable[CharacterRow],
    *,
    out: Path | str = "profiles",
    context: ProfilerContext | None = None,
    dedup: DedupRule = "personae",
    aliases: Mapping[str, str] | None = None,
    concurrency: int = 2,
    force: bool = False,
    skip_done: bool = True,
    card_system_prompt: bool = False,
    keep_checkpoints: bool = False,
    server: str | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    wait: bool = True,
    progress: Progress = quiet,
) -> ProfileBatch:
    """Profile every character of ``rows`` into ``out/<key>/``, ``concurrency`` at a time.

    ``rows`` come from :func:`~personae.memory.characterhub.character_list.read_character_list`
    (a CSV) or are built in code. Duplicates are dropped first: ``dedup="paper"`` is
    CharacterHub's rule (different sources, exact franchise after ``aliases``, name similarity
    above 0.85), ``"personae"`` (default) ours (reordered names and romanisation variants
    merged, relatives never); rows that would write one folder are always one character. With
    the paper's rule its quality control follows: rows without a franchise are dropped, and with
    ``aliases`` rows whose franchise the table lacks. Each dropped row is one ``progress`` line.
    Then ``progress`` gets the estimate (models named), before the first call.

    A row whose ``profile.json`` exists is ``done`` and not run (unless ``force``, which also
    drops its checkpoints, or not ``skip_done``: then it runs through its checkpoint, which
    reads a finished run of the same settings back without a call, as the web page's jobs
    do); an interrupted one resumes from its checkpoint. ``context``,
    ``card_system_prompt`` and ``keep_checkpoints`` are :func:`profile_character`'s. With
    ``server`` (a LangGraph server's URL) every row runs there, one thread each, through one
    client; else on ``checkpointer`` (default: ``out``'s ``.checkpoints.sqlite``, one
    connection for the batch). A character that fails is reported and the rest go on. A
    character another run is profiling (in this process or another) waits for that run and
    takes its profile (:func:`profile_character`'s lock); with ``wait=False`` it fails instead.

    Raises:
        InputError: no rows, an empty name, a bad wiki URL or ``concurrency`` below 1.
        PersonaeError: a bad setting (model, cache folder, checkpointer), before any call.
    """
    from personae.graphs.characterhub.state import ProfilerContext
    from personae.memory.characterhub.character_list import check_rows

    listed = list(rows)
    check_rows(listed)
    if concurrency < 1:
        raise InputError(f"concurrency is {concurrency}; it must be at least 1", "pass 1 or more")
    say = progress
    run_context = context or ProfilerContext()
    out_dir = Path(out)
    check_profile_run(run_context, local=server is None)
    plan, notices = _select(listed, dedup, aliases, say)
    kept = [row for row, planned in zip(listed, plan, strict=True) if planned is None]
    estimate = report_estimate(run_context, len(kept), say)
    async with _runs_on(out_dir, run_context, server, checkpointer) as (saver, runs):

        async def profile(row: CharacterRow) -> CharacterOutcome:
            return await _profile_row(
                row, out_dir, run_context, force, skip_done, card_system_prompt,
                keep_checkpoints, saver, runs, wait, say,
            )  # fmt: skip

        ran = iter(await _bounded(kept, profile, concurrency))
    outcomes = [planned or next(ran) for planned in plan]
    return ProfileBatch(outcomes=outcomes, estimate=estimate, notices=notices)


def _select(
    rows: list[CharacterRow],
    dedup: DedupRule,
    aliases: Mapping[str, str] | None,
    say: Progress,
) -> tuple[list[CharacterOutcome | None], list[str]]:
    """De-duplicate, then (the paper's rule) filter: per row its outcome, or None (to run)."""
    from personae.memory.characterhub.dedup import deduplicate, quality_filter
    from personae.memory.characterhub.profile_store import profile_key

    kept, duplicates = deduplicate(
        rows, key=lambda row: profile_key(row.name, row.franchise), rule=dedup, aliases=aliases
    )
    for duplicate, original in duplicates:
        say(f"skipped {duplicate.name!r}: duplicate of {original.name!r}")
    plan = _placed(rows, kept, [CharacterOutcome(d, "duplicate", o.name) for d, o in duplicates])
    notices: list[str] = []
    if dedup == "paper":  # §3.1: de-duplication, then the quality filter
        passed, removed = quality_filter(kept, aliases)
        for row, reason in removed:
            say(f"skipped {row.name!r}: {reason} (the paper's quality filter)")
        filtered = iter(
            _placed(kept, passed, [CharacterOutcome(r, "filtered", why) for r, why in removed])
        )
        plan = [planned or next(filtered) for planned in plan]
        if aliases is None:
            notices.append(
                "no alias table (--franchise-aliases): the quality filter drops rows without "
                "a franchise only (the paper also drops franchises its alias table lacks)"
            )
            say(f"notice: {notices[-1]}")
    return plan, notices


def _placed(
    rows: list[CharacterRow], kept: list[CharacterRow], dropped: list[CharacterOutcome]
) -> list[CharacterOutcome | None]:
    """Per row, in order: None when kept, else its dropped outcome.

    ``kept`` and ``dropped`` split ``rows`` keeping their order, so one pass pairs them up (by
    identity: two equal rows are still two rows, the second a duplicate of the first).
    """
    placed: list[CharacterOutcome | None] = []
    left = iter(dropped)
    k = 0
    for row in rows:
        if k < len(kept) and row is kept[k]:
            placed.append(None)
            k += 1
        else:
            placed.append(next(left))
    return placed


@asynccontextmanager
async def _runs_on(
    out: Path,
    context: ProfilerContext,
    server: str | None,
    checkpointer: BaseCheckpointSaver[Any] | None,
) -> AsyncIterator[tuple[BaseCheckpointSaver[Any] | None, ServerRuns | None]]:
    """Where the batch's profiles run: one server client, the given saver, or ``out``'s own."""
    from personae.runners.characterhub import open_checkpoints, profile_server_runs

    if server is not None:
        async with profile_server_runs(server, out) as runs:
            yield None, runs
    elif checkpointer is not None:
        yield checkpointer, None
    else:
        async with open_checkpoints(out, context.settings) as saver:
            yield saver, None


async def _bounded(
    rows: list[CharacterRow],
    profile: Callable[[CharacterRow], Awaitable[CharacterOutcome]],
    concurrency: int,
) -> list[CharacterOutcome]:
    """``profile`` of each row, at most ``concurrency`` at once, in the rows' order."""
    slots = asyncio.Semaphore(concurrency)

    async def one(row: CharacterRow) -> CharacterOutcome:
        async with slots:
            return await profile(row)

    return list(await asyncio.gather(*(one(row) for row in rows)))


async def _profile_row(
    row: CharacterRow,
    out: Path,
    context: ProfilerContext,
    force: bool,
    skip_done: bool,
    card_system_prompt: bool,
    keep_checkpoints: bool,
    saver: BaseCheckpointSaver[Any] | None,
    runs: ServerRuns | None,
    wait: bool,
    progress: Progress,
) -> CharacterOutcome:
    """One row: ``done`` when its ``profile.json`` exists, else profiled (or failed, one line)."""
    from personae.memory.characterhub.profile_store import paths_for
    from personae.runners.characterhub import profile_character

    paths = paths_for(out, row.name, row.franchise)
    if skip_done and not force and paths.profile_json.exists():
        return CharacterOutcome(row, "done", folder=paths.directory)
    try:
        profile = await profile_character(
            row.name,
            franchise=row.franchise,
            wiki=row.wiki,
            out=out,
            context=context,
            force=force,
            card_system_prompt=card_system_prompt,
            progress=progress,
            checkpointer=saver,
            source=row.source,
            keep_checkpoints=keep_checkpoints,
            server=runs,
            wait=wait,
        )
    except PersonaeError as error:
        return CharacterOutcome(row, "failed", str(error))
    usage = profile.usage
    return CharacterOutcome(
        row,
        "profiled",
        folder=profile.paths.directory,
        llm_calls=usage.get("llm_calls", 0),
        tokens=usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
        resumed=profile.resumed,
    )
