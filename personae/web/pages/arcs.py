"""A character in time (ARCANE): the arcs of an imported novel, and role-play as of a chapter.

``/arcs`` lists the novels ``personae arcane import`` saved in the data folder and the
characters ``personae arcane build-arcs`` gave arcs; ``/arcs/{novel}/{character}`` draws the
character's axes across the chapters (each phase a band over its chapter range) with a chapter
slider that greys out the future beyond the chosen chapter, and asks the character a question
as of that chapter through :func:`personae.act_at_chapter` (the paper's ``arc`` mode by
default), the same runner ``personae arcane act`` and the MCP ``arcane_act`` tool call. The
novel and the character in the address are checked against what is on disk before anything is
read; the chapter and the mode against the novel's chapters and the runner's modes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from personae.agents.arcane.roleplayer import MODES
from personae.errors import InputError, PersonaeError
from personae.memory.arcane.novel_store import Novel, known_novels, open_novel
from personae.memory.arcane.records import ArcRecord, load_arcs
from personae.web.options import WebOptions
from personae.web.render import error_page, render

DEFAULT_MODE = "arc"
"""ARCANE's method: the character's arc as of the chapter (the other modes are baselines)."""
LONGEST_TEXT = 4000
"""Characters a scenario or question may have (the CLI takes any; a form needs a bound)."""


@dataclass(frozen=True)
class Band:
    """One phase of an axis as the timeline draws it: a band over its chapter range."""

    label: str
    start: int
    end: int
    description: str
    moments: list[str]


@dataclass(frozen=True)
class AxisRow:
    """One axis of the character: its name, poles, direction and phases in story order."""

    axis_id: str
    name: str
    kind: str
    target: str | None
    pole_start: str
    pole_end: str
    direction: str
    bands: list[Band]


def axis_row(arc: ArcRecord, chapters: int) -> AxisRow:
    """The timeline row of ``arc``; phase ranges clamped to the novel's chapters."""
    bands = []
    for phase in sorted(arc.trajectory, key=lambda p: p.chapter_range[0]):
        start = min(max(1, int(phase.chapter_range[0])), chapters)
        end = min(max(start, int(phase.chapter_range[1])), chapters)
        bands.append(
            Band(phase.phase, start, end, phase.position_description, list(phase.key_moments))
        )
    return AxisRow(
        arc.axis_id,
        arc.axis_name,
        arc.axis_type,
        arc.relational_target,
        arc.pole_start,
        arc.pole_end,
        arc.arc_direction,
        bands,
    )


def novel_listing(data_dir: Path) -> list[dict[str, Any]]:
    """Every imported novel: slug, title, chapters, characters with arcs (or its error)."""
    rows: list[dict[str, Any]] = []
    for slug in known_novels(data_dir):
        try:
            novel = open_novel(data_dir, slug)
            arcs = load_arcs(novel.folder)
        except PersonaeError as error:
            rows.append({"slug": slug, "title": slug, "chapters": 0, "cast": [], "error": error})
            continue
        cast: dict[str, int] = {}
        for arc in arcs:
            cast[arc.character] = cast.get(arc.character, 0) + 1
        rows.append(
            {
                "slug": novel.slug,
                "title": novel.title,
                "chapters": novel.count,
                "cast": sorted(cast.items()),
                "error": None,
            }
        )
    return rows


def open_character(data_dir: Path, slug: str, character: str) -> tuple[Novel, list[ArcRecord]]:
    """The novel named ``slug`` and ``character``'s arcs in it; one-line errors otherwise.

    ``slug`` must be one of the imported novels' folder names (never a path): the address is
    compared with the listing before any file is opened.
    """
    known = known_novels(data_dir)
    if slug not in known:
        raise InputError(
            f"no imported novel {slug!r} in {data_dir} (imported: {', '.join(known) or 'none'})",
            "pick one on /arcs, or import it with personae arcane import FILE --title TITLE",
        )
    novel = open_novel(data_dir, slug)
    arcs = load_arcs(novel.folder)
    mine = [arc for arc in arcs if arc.character == character]
    if not mine:
        with_arcs = sorted({arc.character for arc in arcs})
        raise InputError(
            f"{character!r} has no arcs in {novel.slug} "
            f"(characters with arcs: {', '.join(with_arcs) or 'none'})",
            f"build them with personae arcane build-arcs {novel.slug} --character NAME",
        )
    return novel, mine


def chosen_chapter(value: str | None, novel: Novel) -> int:
    """The chapter a request names (default: the last), checked against the novel."""
    if value is None or value == "":
        return novel.count
    try:
        number = int(value)
    except ValueError:
        raise InputError(
            f"chapter {value[:20]!r} is not a number", f"use a chapter between 1 and {novel.count}"
        ) from None
    return novel.check_chapter(number)


def chosen_mode(value: str | None) -> str:
    """The role-play mode a form names (default: the paper's ``arc``), one of the runner's."""
    mode = value or DEFAULT_MODE
    if mode not in MODES:
        raise InputError(f"unknown mode {mode[:20]!r}", f"use one of {', '.join(MODES)}")
    return mode


def bounded_text(value: Any, what: str, *, required: bool) -> str:
    """A form's text field, stripped; one-line errors when missing or too long."""
    text = value.strip() if isinstance(value, str) else ""
    if required and not text:
        raise InputError(f"the {what} is empty", f"write the {what}, e.g. 'A letter arrives.'")
    if len(text) > LONGEST_TEXT:
        raise InputError(
            f"the {what} is {len(text)} characters long", f"keep it under {LONGEST_TEXT}"
        )
    return text


def status_of(error: PersonaeError) -> int:
    """400 for what the user can fix in the form, 502 when the model server failed."""
    return 502 if error.exit_code == 3 else 400


def arcs_index(request: Request) -> Response:
    """Every imported novel and the characters with arcs in it."""
    options: WebOptions = request.app.state.options
    return render(
        request, "arcs.html", data_dir=str(options.data_dir), novels=novel_listing(options.data_dir)
    )


def character_view(request: Request) -> Response:
    """The timeline of one character, greyed beyond ``?chapter=N``."""
    options: WebOptions = request.app.state.options
    try:
        novel, arcs = open_character(
            options.data_dir, request.path_params["novel"], request.path_params["character"]
        )
    except PersonaeError as error:
        return error_page(request, str(error), 404)
    try:
        chapter = chosen_chapter(request.query_params.get("chapter"), novel)
    except PersonaeError as error:
        return error_page(request, str(error))
    return _page(request, novel, arcs, chapter, {"mode": DEFAULT_MODE}, None)


async def ask_at_chapter(request: Request) -> Response:
    """Role-play the character as of the chosen chapter (:func:`personae.act_at_chapter`)."""
    from personae import RoleplayContext, act_at_chapter

    options: WebOptions = request.app.state.options
    slug, character = request.path_params["novel"], request.path_params["character"]
    try:
        novel, arcs = await asyncio.to_thread(open_character, options.data_dir, slug, character)
    except PersonaeError as error:
        return error_page(request, str(error), 404)
    form = await request.form()
    asked = {key: str(form.get(key) or "") for key in ("chapter", "mode", "scenario", "question")}
    try:
        chapter = chosen_chapter(asked["chapter"], novel)
        mode = chosen_mode(asked["mode"])
        scenario = bounded_text(asked["scenario"], "scenario", required=True)
        question = bounded_text(asked["question"], "question", required=False)
        context = await asyncio.to_thread(
            RoleplayContext,
            arc_scope="character",
            data_dir=str(options.data_dir),
            embedding=options.embedding,
            **options.models,
        )  # built off the event loop: the settings may read .env
        answer = await act_at_chapter(
            novel.slug,
            character,
            chapter,
            scenario,
            question=question or None,
            mode=mode,
            context=context,
        )
    except PersonaeError as error:
        return error_page(request, str(error), status_of(error))
    return await asyncio.to_thread(_page, request, novel, arcs, chapter, asked, answer)


def _page(
    request: Request,
    novel: Novel,
    arcs: list[ArcRecord],
    chapter: int,
    asked: dict[str, str],
    answer: Any,
) -> Response:
    character = arcs[0].character
    return render(
        request,
        "arcs_character.html",
        novel={"slug": novel.slug, "title": novel.title, "count": novel.count},
        character=character,
        chapters=[(idx, label) for idx, label, _ in novel.labels()],
        rows=[axis_row(arc, novel.count) for arc in arcs],
        chapter=chapter,
        modes=MODES,
        asked={"mode": DEFAULT_MODE, "scenario": "", "question": "", **asked},
        answer=answer,
    )


routes = [
    Route("/arcs", arcs_index, name="arcs"),
    Route("/arcs/{novel}/{character}", character_view, methods=["GET"], name="arcs_character"),
    Route("/arcs/{novel}/{character}", ask_at_chapter, methods=["POST"]),
]
