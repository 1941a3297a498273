"""Profiles started from the page: each a job on disk, run in the server's loop, resumed on start.

A job is one small JSON record (its inputs, status, estimate, result or error), written
atomically, and an append-only log of the lines the CLI would print, both under
``WebOptions.jobs_dir``. The work is CharacterHub's batch runner
(:func:`personae.runners.characterhub_batch.profile_characters`, as ``personae profile --batch``)
over a one-row list, on the profiles folder's one SQLite checkpointer, so a server stopped mid-run leaves the record
``running`` and the checkpoint where the graph stood: the next server's start (the app's
lifespan) runs the job again and the runner resumes the thread instead of paying from scratch.

One job per character: a request for a character (its folder key, so ``Shin``, ``shin`` and
``Shin `` are one) that has a job queued or running joins that job instead of starting another;
the runner's lock (:mod:`personae.run_lock`) keeps a CLI or another server on the same folder
from paying for it twice too. At most ``--max-jobs`` run at once (:mod:`personae.run_queue`);
the rest are ``queued`` in order and their page shows their place in line.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from personae.errors import InputError, PersonaeError
from personae.run_queue import RunQueue, ordinal
from personae.urls import web_url

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from personae.agents.costs import Estimate
    from personae.graphs.characterhub.state import ProfilerContext
    from personae.web.options import WebOptions

JobStatus = Literal["queued", "running", "done", "failed"]
UNFINISHED: tuple[JobStatus, ...] = ("queued", "running")
"""A job in these states is resumed when the server starts, and joined by a request for it."""
Method = Literal["planned", "paper"]
METHODS: tuple[Method, ...] = get_args(Method)
"""The profiler's methods, as ``personae profile --method`` offers them (default first)."""
JOB_ID = re.compile(r"[0-9a-f]{12}")
"""A job's id as :func:`new_job_id` makes it: the only names read from the jobs folder."""


@dataclass(frozen=True, kw_only=True)
class ProfileRequest:
    """What the form asks for, checked as ``personae profile`` checks its arguments."""

    name: str
    franchise: str | None = None
    wiki: str | None = None
    method: Method = "planned"

    @classmethod
    def from_form(cls, form: Mapping[str, Any]) -> ProfileRequest:
        """The request of a submitted form.

        Raises:
            InputError: The CLI's one-line message (empty name, a wiki that is not a URL,
                an unknown method).
        """
        name = str(form.get("name") or "").strip()
        if not name:
            raise InputError(
                "the character name is empty", 'pass a name: personae profile "Kenshiro"'
            )
        franchise = str(form.get("franchise") or "").strip() or None
        wiki_text = str(form.get("wiki") or "").strip()
        wiki = (
            web_url(wiki_text, "the wiki URL", "https://hokuto.fandom.com") if wiki_text else None
        )
        method = str(form.get("method") or "planned")
        if method not in METHODS:
            raise InputError(f"unknown method {method!r}", f"pick one of {', '.join(METHODS)}")
        return cls(name=name, franchise=franchise, wiki=wiki, method=method)

    @property
    def key(self) -> str:
        """The character's key: its profile folder's name, whatever the spelling."""
        from personae.memory.characterhub.profile_store import profile_key

        return profile_key(self.name, self.franchise)


@dataclass(frozen=True, kw_only=True)
class Job:
    """One profile started from the page: its record on disk."""

    id: str
    request: ProfileRequest
    status: JobStatus
    created: str
    """UTC time the job was started (ISO 8601)."""
    updated: str
    estimate_calls: int
    estimate_tokens: int
    error: str = ""
    """A failed run's one-line message (with the kept draft's location when there is one)."""
    profile_key: str = ""
    """The finished profile's folder name under the profiles folder (its page's key)."""
    starts: int = 1
    """How many times a server ran it (more than 1: resumed after a restart)."""

    def as_json(self) -> dict[str, Any]:
        """The record as written."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        """A record as read back."""
        return cls(**{**data, "request": ProfileRequest(**data["request"])})


def new_job_id() -> str:
    """A fresh job id (random hex; nothing from the request ends up in a file name)."""
    return secrets.token_hex(6)


def now() -> str:
    """The current UTC time, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class JobStore:
    """The jobs folder: ``<id>.json`` records and ``<id>.log`` progress lines."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def record_path(self, job_id: str) -> Path:
        """Where job ``job_id``'s record lives (``job_id`` already checked)."""
        return self.folder / f"{job_id}.json"

    def log_path(self, job_id: str) -> Path:
        """Where job ``job_id``'s progress lines are appended."""
        return self.folder / f"{job_id}.log"

    def write(self, job: Job) -> None:
        """Replace ``job``'s record atomically: a reader sees the old record or the new one."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.record_path(job.id)
        partial = path.with_name(f".{job.id}.{secrets.token_hex(4)}.tmp")
        partial.write_text(json.dumps(job.as_json(), indent=2) + "\n", encoding="utf-8")
        os.replace(partial, path)

    def read(self, job_id: str) -> Job | None:
        """Job ``job_id``'s record, or None (no such job, not an id, unreadable)."""
        if not JOB_ID.fullmatch(job_id):
            return None
        try:
            return Job.from_json(json.loads(self.record_path(job_id).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError, KeyError):
            return None

    def all(self) -> list[Job]:
        """Every readable job, newest first."""
        if not self.folder.is_dir():
            return []
        jobs = (self.read(path.stem) for path in self.folder.glob("*.json"))
        return sorted((job for job in jobs if job), key=lambda job: job.created, reverse=True)

    def append_line(self, job_id: str, line: str) -> None:
        """Add one progress line to the job's log (one line each: newlines are flattened)."""
        with self.log_path(job_id).open("a", encoding="utf-8") as log:
            log.write(" ".join(line.splitlines()) + "\n")

    def lines(self, job_id: str, after: int = 0) -> list[str]:
        """The job's progress lines after the first ``after``."""
        try:
            text = self.log_path(job_id).read_text(encoding="utf-8")
        except OSError:
            return []
        return text.splitlines()[after:]


class ProfileJobs:
    """Starts, runs and resumes the page's profiles inside the server's event loop."""

    def __init__(self, options: WebOptions) -> None:
        assert options.jobs_dir is not None, "options are resolved by create_app"
        self.options = options
        self.store = JobStore(options.jobs_dir)
        self.queue = RunQueue(options.max_jobs)
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._exits = AsyncExitStack()
        self._saver: BaseCheckpointSaver[Any] | None = None
        self._saver_lock = asyncio.Lock()

    def context(self, request: ProfileRequest) -> ProfilerContext:
        """The run context of ``request``: the server's model flags, its method, web or not.

        Raises:
            PersonaeError: A bad model spec or setting (the CLI's message), before any call.
        """
        from personae.graphs.characterhub.state import ProfilerContext

        context = ProfilerContext(
            method=request.method, web_search=self.options.web_search, **self.options.models
        )
        context.llm("strong")  # no LLM or a bad spec fails here, as in the CLI
        context.llm("fast")
        return context

    def estimate(self, request: ProfileRequest) -> tuple[Estimate, dict[str, str]]:
        """At most what profiling ``request`` costs, and the models it pays (shown first)."""
        from personae.runners.characterhub import estimate_profile

        context = self.context(request)
        models = {"model": context.model, "fast model": context.fast_model}
        return estimate_profile(context), models

    def running_for(self, request: ProfileRequest) -> Job | None:
        """The unfinished (queued or running) job profiling the same character, if any.

        The same character is the same folder key, whatever the name's case or spaces, the
        wiki's spelling or the method: one character is profiled by one job at a time.
        """
        key = request.key
        return next(
            (
                job
                for job in self.store.all()
                if job.status in UNFINISHED and job.request.key == key
            ),
            None,
        )

    def place(self, job: Job) -> int | None:
        """``job``'s place in the queue (1: next to run), or None when it is not waiting."""
        return self.queue.place(job.id)

    async def start(self, request: ProfileRequest) -> Job:
        """Record a new job for ``request`` and run it in the background; the job.

        When a job for the same character is queued or running, that job instead: a second
        request joins the first and never pays again.
        """
        estimate, _ = await asyncio.to_thread(self.estimate, request)
        running = self.running_for(request)  # checked after the await: no double start
        if running is not None:
            return running
        stamp = now()
        job = Job(
            id=new_job_id(),
            request=request,
            status="running",
            created=stamp,
            updated=stamp,
            estimate_calls=estimate.calls,
            estimate_tokens=estimate.tokens,
        )
        self.store.write(job)
        self.store.append_line(
            job.id, f"started: at most {estimate.calls:,} LLM calls, ~{estimate.tokens:,} tokens"
        )
        self._spawn(job)
        return job

    async def resume(self) -> list[Job]:
        """Run again every job a stopped server left ``running`` (the app's start); those jobs."""
        resumed = []
        for job in reversed(self.store.all()):  # oldest first: the queue keeps its order
            if job.status in UNFINISHED and job.id not in self.tasks:
                job = replace(job, starts=job.starts + 1, updated=now())
                self.store.write(job)
                self.store.append_line(job.id, "server restarted: resuming from the checkpoint")
                self._spawn(job)
                resumed.append(job)
        return resumed

    async def close(self) -> None:
        """Stop the running jobs (their records stay ``running``: the next start resumes them)."""
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._exits.aclose()
        self._saver = None

    def _spawn(self, job: Job) -> None:
        task = asyncio.get_running_loop().create_task(self._run(job), name=f"profile job {job.id}")
        self.tasks[job.id] = task
        task.add_done_callback(lambda _: self.tasks.pop(job.id, None))

    async def _checkpointer(self, context: ProfilerContext) -> BaseCheckpointSaver[Any]:
        """The profiles folder's one checkpointer, opened by the first job, shared by all.

        One connection for every job: a connection each would make concurrent writers of the
        SQLite file fail with "database is locked" (see ``open_checkpoints``).
        """
        from personae.runners.characterhub import open_checkpoints

        async with self._saver_lock:
            if self._saver is None:
                opened = open_checkpoints(self.options.profiles_dir, context.settings)
                self._saver = await self._exits.enter_async_context(opened)
            return self._saver

    async def _run(self, job: Job) -> None:
        """Profile the job's character once it has a slot (queued while ``--max-jobs`` run).

        A character profiled before runs again through its checkpoint (``skip_done=False``): the
        same settings read the finished run back without a call, another method runs anew.
        """
        if self.queue.full:
            job = self._queued(job)
        async with self.queue.slot(job.id):
            if job.status == "queued":
                job = replace(job, status="running", updated=now())
                self.store.write(job)
                self.store.append_line(job.id, "running: its turn came")
            await self._profile(job)

    def _queued(self, job: Job) -> Job:
        """Record ``job`` as waiting in line (its place is the queue's, read live)."""
        place = len(self.queue.waiting) + 1
        job = replace(job, status="queued", updated=now())
        self.store.write(job)
        self.store.append_line(
            job.id, f"queued: {ordinal(place)} in line ({self.queue.limit} jobs run at once)"
        )
        return job

    async def _profile(self, job: Job) -> None:
        """The run itself, once the job has its slot."""
        from personae.memory.characterhub.character_list import CharacterRow
        from personae.runners.characterhub_batch import profile_characters

        request = job.request
        try:
            context = await asyncio.to_thread(self.context, request)
            report = await profile_characters(
                [CharacterRow(request.name, request.franchise, request.wiki)],
                out=self.options.profiles_dir,
                context=context,
                skip_done=False,
                progress=lambda line: self.store.append_line(job.id, line),
                checkpointer=await self._checkpointer(context),
            )
        except PersonaeError as error:
            self._finish(job, "failed", error=str(error))
        except Exception as error:  # noqa: BLE001 - a job's bug must not take the server down
            self._finish(job, "failed", error=f"unexpected error: {type(error).__name__}: {error}")
        else:
            (outcome,) = report.outcomes
            if outcome.folder is None:
                self._finish(job, "failed", error=outcome.detail)
            else:
                self._finish(job, "done", profile_key=outcome.folder.name)

    def _finish(
        self, job: Job, status: JobStatus, *, error: str = "", profile_key: str = ""
    ) -> None:
        self.store.append_line(job.id, f"failed: {error}" if error else f"done: {profile_key}")
        self.store.write(
            replace(job, status=status, error=error, profile_key=profile_key, updated=now())
        )
