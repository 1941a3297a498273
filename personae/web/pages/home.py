"""The front page: what is in each folder, a link to each view."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from personae.web.render import render


def home(request: Request) -> Response:
    """The folders the server reads and how many things each holds."""
    options = request.app.state.options
    folders = [
        ("Profiles", options.profiles_dir),
        ("Personas", options.personas_dir),
        ("ARCANE data", options.data_dir),
        ("Runs", options.runs_dir),
    ]
    rows = [(label, str(path), path.is_dir()) for label, path in folders]
    storylines = [str(path) for path in options.storylines]
    return render(request, "home.html", folders=rows, storylines=storylines)


routes = [Route("/", home, name="home")]
