"""A new character on demand: the form, its cost estimate, the background job and its progress.

``/profiles/new`` asks for a name, franchise, wiki and method; submitting it shows what the run
will cost at most (calls, tokens) and a Start button; Start records a job
(:mod:`personae.web.jobs`) and opens its page, where the lines the CLI would print appear as
they come (``job.js`` polls ``/jobs/{id}/lines``). Its routes come before the Profiles view's
``/profiles/{key}`` in ``PAGE_MODULES`` so that ``new`` is never read as a profile key.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from personae.errors import PersonaeError
from personae.run_queue import ordinal
from personae.web.jobs import METHODS, UNFINISHED, Job, ProfileJobs, ProfileRequest
from personae.web.render import error_page, render

RECENT = 10
"""Jobs listed under the form (``/jobs`` lists them all)."""


def jobs_of(request: Request) -> ProfileJobs:
    """The app's job runner (made by ``create_app``)."""
    jobs: ProfileJobs = request.app.state.jobs
    return jobs


def form_values(form: Any) -> dict[str, str]:
    """The form's fields as text, to fill the form again."""
    return {key: str(form.get(key) or "") for key in ("name", "franchise", "wiki", "method")}


def show_form(
    request: Request, values: dict[str, str], error: str = "", status_code: int = 200
) -> Response:
    """The form (with the one-line error of the last submission) and the recent jobs."""
    recent = jobs_of(request).store.all()[:RECENT]
    return render(
        request,
        "new_character.html",
        status_code=status_code,
        values=values,
        methods=METHODS,
        error=error,
        jobs=recent,
    )


async def new_character(request: Request) -> Response:
    """GET: the form. POST: the inputs checked, then the estimate and a Start button."""
    if request.method == "GET":
        return show_form(request, {"name": "", "franchise": "", "wiki": "", "method": METHODS[0]})
    form = await request.form()
    values = form_values(form)
    jobs = jobs_of(request)
    try:
        wanted = ProfileRequest.from_form(form)
        estimate, models = await asyncio.to_thread(jobs.estimate, wanted)
    except PersonaeError as error:
        return show_form(request, values, str(error), 400)
    return render(
        request,
        "new_character_confirm.html",
        values=values,
        wanted=wanted,
        estimate=estimate,
        models=models,
    )


async def start_job(request: Request) -> Response:
    """Start the confirmed profile (or join the job already profiling that character); its page."""
    form = await request.form()
    jobs = jobs_of(request)
    try:
        wanted = ProfileRequest.from_form(form)
        job = jobs.running_for(wanted) or await jobs.start(wanted)
    except PersonaeError as error:
        return show_form(request, form_values(form), str(error), 400)
    return RedirectResponse(f"/jobs/{job.id}", status_code=303)


def job_list(request: Request) -> Response:
    """Every job, newest first, with its status."""
    return render(request, "jobs.html", jobs=jobs_of(request).store.all())


def find_job(request: Request) -> Job | None:
    """The job the path names (None: not an id, or no such job)."""
    return jobs_of(request).store.read(request.path_params["job_id"])


def job_page(request: Request) -> Response:
    """One job: inputs, estimate, the progress lines so far, its result or error."""
    job = find_job(request)
    if job is None:
        return error_page(request, "no such job; open one from the list at /jobs", 404)
    jobs = jobs_of(request)
    lines = jobs.store.lines(job.id)
    return render(
        request,
        "job.html",
        job=job,
        lines=lines,
        waiting=waiting_text(jobs, job),
        unfinished=UNFINISHED,
    )


def waiting_text(jobs: ProfileJobs, job: Job) -> str:
    """``3rd in line`` for a queued job, else empty."""
    place = jobs.place(job)
    return f"{ordinal(place)} in line" if place else ""


def job_lines(request: Request) -> Response:
    """The job's status and its progress lines after ``?after=N`` (what ``job.js`` polls)."""
    job = find_job(request)
    if job is None:
        return JSONResponse({"error": "no such job"}, status_code=404)
    after = request.query_params.get("after", "0")
    start = int(after) if after.isdigit() else 0
    return JSONResponse(
        {
            "status": job.status,
            "place": jobs_of(request).place(job),
            "waiting": waiting_text(jobs_of(request), job),
            "lines": jobs_of(request).store.lines(job.id, start),
            "error": job.error,
            "profile": f"/profiles/{job.profile_key}" if job.profile_key else "",
        }
    )


routes = [
    Route("/profiles/new", new_character, methods=["GET", "POST"], name="new_character"),
    Route("/jobs", job_list, methods=["GET"], name="jobs"),
    Route("/jobs", start_job, methods=["POST"], name="start_job"),
    Route("/jobs/{job_id}", job_page, name="job"),
    Route("/jobs/{job_id}/lines", job_lines, name="job_lines"),
]
