"""Reports: the bench and evaluation reports already written under the runs folder.

What the evaluations write (their ``--out`` folders): ``report.md`` and ``report.html``
(``personae bookmarks bench``, ``personae arcane eval`` and ``arcane-report``), ``report.md``
(the AMADEUS evaluations), ``eval-report.{json,md,html}`` (``personae characterhub eval``) and each
run's ``summary.json``. The page lists those files under ``runs_dir`` and shows one: Markdown
rendered with raw HTML switched off (a report quotes model output and web pages, which must
stay text), JSON pretty-printed, and an HTML report inside a sandboxed frame, the file itself
served with a Content-Security-Policy that lets no script run and nothing load. A path in the
address must name one of those files, inside the runs folder once links are followed.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from personae.errors import InputError
from personae.process_caches import clears_on_reset
from personae.web.options import WebOptions
from personae.web.render import error_page, render
from personae.web.security import inside

REPORT_NAMES = frozenset(
    {
        "report.md",
        "report.html",
        "summary.json",
        "eval-report.md",
        "eval-report.html",
        "eval-report.json",
    }
)
"""The file names the evaluations give their reports (and nothing else is served)."""
MAX_FILES = 2000
"""Reports listed at most (a runs folder of many runs stays one quick page)."""
MAX_DEPTH = 6
"""Folder levels searched under the runs folder."""
LARGEST_SHOWN = 4 * 1024 * 1024
"""Bytes of a Markdown or JSON report rendered in the page (larger: open the file)."""
REPORT_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "frame-ancestors 'self'; base-uri 'none'; form-action 'none'; sandbox"
)
"""The CSP of a served HTML report: its inline styles and SVG, no script, nothing fetched."""


@dataclass(frozen=True)
class ReportFile:
    """A report under the runs folder."""

    relative: str
    """Its path under the runs folder, with ``/`` (the address the page uses)."""
    folder: str
    name: str
    size: int
    modified: str
    """UTC, to the minute."""


def find_reports(runs_dir: Path) -> tuple[list[ReportFile], bool]:
    """The reports under ``runs_dir``, newest first, and whether the listing was cut.

    Hidden folders (checkpoints, caches) are skipped, links are not followed, and the search
    stops at :data:`MAX_DEPTH` levels and :data:`MAX_FILES` files.
    """
    found: list[ReportFile] = []
    if not runs_dir.is_dir():
        return found, False
    for folder, folders, files in os.walk(runs_dir):
        here = Path(folder)
        depth = len(here.relative_to(runs_dir).parts)
        folders[:] = sorted(f for f in folders if not f.startswith(".") and depth < MAX_DEPTH)
        for name in sorted(files):
            path = here / name
            if name not in REPORT_NAMES or path.is_symlink():
                continue
            stat = path.stat()
            relative = path.relative_to(runs_dir).as_posix()
            when = datetime.fromtimestamp(stat.st_mtime, UTC).strftime("%Y-%m-%d %H:%M")
            found.append(ReportFile(relative, str(Path(relative).parent), name, stat.st_size, when))
            if len(found) >= MAX_FILES:
                return sorted(found, key=lambda r: r.modified, reverse=True), True
    return sorted(found, key=lambda r: (r.modified, r.relative), reverse=True), False


def report_path(runs_dir: Path, relative: str) -> Path:
    """The report ``relative`` names under ``runs_dir``; a one-line error for anything else.

    The name must be a report's, no part may be hidden or ``..``, and the file, links
    followed, must lie inside the runs folder.
    """
    parts = relative.split("/")
    path = runs_dir.joinpath(*parts)
    if (
        parts[-1] not in REPORT_NAMES
        or any(part in ("", ".", "..") or part.startswith(".") for part in parts)
        or not inside(path, (runs_dir,))
        or not path.is_file()
    ):
        raise InputError(
            f"no report {relative[:200]!r} in {runs_dir}",
            "pick one on /reports (report.md, report.html, summary.json, eval-report.*)",
        )
    return path


FIGURE_NOTE = '<p class="muted">(an HTML figure: see the HTML report)</p>\n'
"""What a raw HTML block of a Markdown report (the reports' inline SVG plots) becomes."""


def markdown_html(text: str) -> str:
    """``text`` rendered as CommonMark with tables; its raw HTML is never passed through.

    A raw HTML block (a report's inline SVG plot) becomes a note pointing at the HTML report,
    inline HTML stays visible as escaped text, and links keep markdown-it's check (no
    ``javascript:``).
    """
    return str(_markdown().render(text))


@functools.cache
def _markdown() -> Any:
    """The one parser (building one costs more than rendering a report); it keeps no state."""
    from markdown_it import MarkdownIt
    from markdown_it.common.utils import escapeHtml

    parser = MarkdownIt("commonmark", {"html": True}).enable("table")
    parser.add_render_rule("html_block", lambda self, tokens, idx, options, env: FIGURE_NOTE)
    parser.add_render_rule(
        "html_inline", lambda self, tokens, idx, options, env: escapeHtml(tokens[idx].content)
    )
    return parser


clears_on_reset("web.reports.markdown", _markdown.cache_clear)


def reports_index(request: Request) -> Response:
    """Every report under the runs folder, newest first."""
    options: WebOptions = request.app.state.options
    reports, cut = find_reports(options.runs_dir)
    return render(
        request,
        "reports.html",
        runs_dir=str(options.runs_dir),
        reports=reports,
        cut=cut,
        limit=MAX_FILES,
    )


def report_view(request: Request) -> Response:
    """One report: Markdown rendered, JSON pretty-printed, HTML in a sandboxed frame."""
    options: WebOptions = request.app.state.options
    relative = request.path_params["report"]
    try:
        path = report_path(options.runs_dir, relative)
        body, kind = "", path.suffix.lstrip(".")
        if kind != "html":
            if path.stat().st_size > LARGEST_SHOWN:
                raise InputError(
                    f"{relative} is {path.stat().st_size // 1024} KiB, too large to show here",
                    f"open {path} directly",
                )
            text = path.read_text(encoding="utf-8", errors="replace")
            body = markdown_html(text) if kind == "md" else _pretty_json(text)
    except InputError as error:
        return error_page(request, str(error), 404)
    twin = path.with_suffix(".html")
    html_twin = twin.relative_to(options.runs_dir).as_posix() if twin.is_file() else None
    return render(
        request,
        "reports_view.html",
        relative=relative,
        kind=kind,
        body=body,
        html_twin=kind == "md" and html_twin,
    )


def report_file(request: Request) -> Response:
    """An HTML report as written, under a policy that runs no script and loads nothing."""
    options: WebOptions = request.app.state.options
    try:
        path = report_path(options.runs_dir, request.path_params["report"])
    except InputError as error:
        return error_page(request, str(error), 404)
    media = {"html": "text/html", "md": "text/markdown", "json": "application/json"}
    return FileResponse(
        path,
        media_type=f"{media[path.suffix.lstrip('.')]}; charset=utf-8",
        headers={
            "Content-Security-Policy": REPORT_POLICY,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        },
    )


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text  # a torn file is shown as it is


routes = [
    Route("/reports", reports_index, name="reports"),
    Route("/reports/view/{report:path}", report_view, name="report"),
    Route("/reports/file/{report:path}", report_file, name="report_file"),
]
