"""Profiles: the list of what ``personae profile`` wrote, and one profile with its sources.

``/profiles`` lists name, franchise, facts, check state and date (sortable);
``/profiles/{key}`` shows the first-person profile, the facts by dimension with each source's
passage, the check's verdicts and counts, the notices, and links to ``card.json`` (Character
Card V3, downloaded) and ``profile.md``. Keys are checked as the MCP resources check them: a key
Personae does not make, or a file linked outside the folder, is the one-line "no profile" page.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from personae.errors import InputError
from personae.web.pages.chat import persona_characters
from personae.web.profile_files import (
    PROFILE_FILE,
    profile_file,
    read_document,
    shelf,
)
from personae.web.profile_view import profile_view
from personae.web.render import error_page, render
from personae.web.security import inside

SORTS: dict[str, Any] = {
    "name": lambda row: (row.name.casefold(), row.key),
    "franchise": lambda row: (row.franchise.casefold(), row.name.casefold()),
    "facts": lambda row: (row.facts, row.key),
    "check": lambda row: (row.check, row.key),
    "date": lambda row: (row.written, row.key),
}
"""The list's sortable columns and each one's key."""
PAGE_SIZE = 100
"""Rows per page of the list (a thousand rows is a page nobody reads, and costs the render)."""
DOWNLOADS = ("card.json", "profile.md")
"""The files of a profile the page serves besides showing ``profile.json``."""


def profiles(request: Request) -> Response:
    """The list: ``?q=`` filters names and franchises, ``?sort=``/``?order=`` sort, ``?page=``."""
    query = request.query_params
    sort, descending = query.get("sort", "name"), query.get("order") == "desc"
    search = query.get("q", "").strip()
    if sort not in SORTS:
        message = f"no column {sort!r} to sort by; use one of {', '.join(SORTS)}"
        return error_page(request, message, 400)
    rows, unreadable = shelf(request).summaries()
    if search:
        wanted = search.casefold()
        rows = [r for r in rows if wanted in r.name.casefold() or wanted in r.franchise.casefold()]
    rows.sort(key=SORTS[sort], reverse=descending)
    pages = max(1, -(-len(rows) // PAGE_SIZE))
    number = query.get("page", "1")
    if not number.isdigit() or not 1 <= int(number) <= pages:
        return error_page(request, f"no page {number!r} of {pages}; pass 1 to {pages}", 400)
    start = (int(number) - 1) * PAGE_SIZE
    return render(
        request,
        "profiles.html",
        rows=rows[start : start + PAGE_SIZE],
        total=len(rows),
        first=start + 1,
        page=int(number),
        pages=pages,
        search=search,
        unreadable=unreadable,
        sort=sort,
        descending=descending,
        columns=list(SORTS),
        url=list_url,
        folder=str(request.app.state.options.profiles_dir),
    )


def list_url(sort: str, order: str, search: str, page: int = 1) -> str:
    """The list's address with these settings."""
    return "/profiles?" + urlencode(
        {"sort": sort, "order": order, **({"q": search} if search else {}), "page": page}
    )


def profile(request: Request) -> Response:
    """One profile; a key that names none is a 404 page with the one-line reason."""
    options = request.app.state.options
    key = request.path_params["key"]
    try:
        path = profile_file(options.profiles_dir, key)
        document = read_document(path)
    except InputError as error:
        return error_page(request, str(error), 404)
    view = profile_view(key, document)
    card = _optional_file(options.profiles_dir, key, "card.json")
    markdown = _optional_file(options.profiles_dir, key, "profile.md")
    indexed = view.name.casefold() in persona_characters(options.personas_dir)
    return render(
        request,
        "profile.html",
        profile=view,
        has_card=card is not None,
        has_markdown=markdown is not None,
        indexable=path.name == PROFILE_FILE,
        indexed=indexed,
    )


def _optional_file(folder: Any, key: str, name: str) -> Any:
    path = folder / key / name
    return path if path.is_file() and inside(path, (folder,)) else None


def profile_download(request: Request) -> Response:
    """``card.json`` as a download (named after the key), ``profile.md`` as plain text."""
    options = request.app.state.options
    key, name = request.path_params["key"], request.path_params["name"]
    try:
        profile_file(options.profiles_dir, key)  # the key is one Personae makes
    except InputError as error:
        return error_page(request, str(error), 404)
    path = _optional_file(options.profiles_dir, key, name) if name in DOWNLOADS else None
    if path is None:
        return error_page(request, str(unknown_file(options.profiles_dir, key, name)), 404)
    if name == "card.json":
        return FileResponse(path, media_type="application/json", filename=f"{key}.card.json")
    return FileResponse(
        path,
        media_type="text/plain; charset=utf-8",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def unknown_file(folder: Any, key: str, name: str) -> InputError:
    """The error for a profile without ``name`` (a draft has no card)."""
    if name not in DOWNLOADS:
        return InputError(
            f"profile {key!r} has no file {name!r} to download",
            f"ask for {' or '.join(DOWNLOADS)}",
        )
    return InputError(
        f"profile {key!r} has no {name} (a draft has none)",
        "profile the character again to write it",
    )


routes = [
    Route("/profiles", profiles, name="profiles"),
    Route("/profiles/{key}", profile, name="profile"),
    Route("/profiles/{key}/{name}", profile_download, name="profile_file"),
]
