"""The web app: one Starlette application over the folders of :class:`WebOptions`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from personae.web.jobs import ProfileJobs
from personae.web.options import WebOptions
from personae.web.pages import arcs, chat, home, new_character, profiles, reports, storylines
from personae.web.render import STATIC
from personae.web.security import LOOPBACK_NAMES, GuardMiddleware

PAGE_MODULES = (home, new_character, profiles, chat, arcs, storylines, reports)
"""Every view's module; each exposes ``routes`` (its Starlette routes). Fixed paths are
served before ``{param}`` paths (``create_app`` sorts them), so ``/profiles/new`` is never
taken for a profile key."""


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """On start, resume the profiles a stopped server left running; on stop, stop them.

    A stopped job keeps its record ``running`` and its checkpoint, so the next start picks it
    up where the graph stood (:class:`personae.web.jobs.ProfileJobs`).
    """
    jobs: ProfileJobs = app.state.jobs
    await jobs.resume()
    try:
        yield
    finally:
        await jobs.close()


def create_app(
    options: WebOptions,
    *,
    token: str | None = None,
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES,
) -> Starlette:
    """The app serving ``options``'s folders.

    ``allowed_hosts`` are the names a request's ``Host`` may carry (loopback names by
    default: a DNS-rebinding page is refused); ``token``, when set, is asked of every request.
    """
    routes: list[BaseRoute] = [Mount("/static", StaticFiles(directory=STATIC), name="static")]
    for module in PAGE_MODULES:
        routes.extend(module.routes)
    # Fixed paths before patterns, whatever the modules' order: /profiles/{key} must not
    # answer for /profiles/new (another view's page).
    routes.sort(key=lambda route: "{" in getattr(route, "path", ""))
    app = Starlette(
        routes=routes,
        middleware=[Middleware(GuardMiddleware, allowed_hosts=allowed_hosts, token=token)],
        lifespan=lifespan,
    )
    app.state.options = options.resolved()
    app.state.jobs = ProfileJobs(app.state.options)
    return app
