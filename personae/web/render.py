"""The pages' templates: Jinja2 with autoescape and a strict undefined policy.

Every value a page shows may come from a model or a web page (a profile's facts, a quoted
passage): autoescaping keeps it text, and :class:`jinja2.StrictUndefined` turns a misspelt
template variable into an error a test sees instead of an empty cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

NAV = (
    ("Profiles", "/profiles"),
    ("New character", "/profiles/new"),
    ("Chat", "/chat"),
    ("Arcs", "/arcs"),
    ("Storylines", "/storylines"),
    ("Reports", "/reports"),
)
"""The top bar, in order: (label, path)."""

environment = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(("html",)),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(request: Request, template: str, status_code: int = 200, **values: Any) -> HTMLResponse:
    """``template`` rendered with ``values``, the navigation and the request."""
    page = environment.get_template(template).render(
        request=request, nav=NAV, path=request.url.path, **values
    )
    return HTMLResponse(page, status_code=status_code)


def error_page(request: Request, message: str, status_code: int = 400) -> HTMLResponse:
    """A page with one line saying what is wrong and how to fix it (the CLI's message)."""
    return render(request, "error.html", status_code=status_code, message=message)
