"""A character in time (BOOKMARKS): a storyline's actions, its bookmarks, and what is true at P.

``/storylines`` lists the storylines the server was started with (``--storyline``);
``/storylines/{n}?character=X&position=P`` shows X's actions along the story (those at or after
P greyed: a reader at P has not seen them), the bookmarks of the bank as they stood at P (each
answer as a reader at P may see it: never one synced past P), and a form asking "what is true
about X at position P", answered by the ``storyline_memory`` tool of
:func:`personae.create_storyline_memory_tool`, the one the MCP ``storyline_memory`` tool calls.
The storyline is picked by its number in the server's list and the position by a slider
bounded by the storyline's length; both are checked again on the server.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import StructuredTool, ToolException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from personae.errors import InputError, PersonaeError
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.bookmark import BookmarkType
from personae.memory.bookmarks.storyline import Storyline, open_storyline
from personae.web.options import WebOptions
from personae.web.pages.arcs import bounded_text, status_of
from personae.web.render import error_page, render

QUESTION_TYPES = ("state", "behavioral", "concept")
"""The paper's bookmark types, as the tool takes them (state, its default, first)."""


@dataclass(frozen=True)
class BankEntry:
    """One bookmark as a reader at the chosen position may see it."""

    id: str
    type: str
    character: str
    question: str
    answer: str
    synced_to: int
    """The position its shown answer became valid from (always <= the chosen position)."""


def pick_storyline(options: WebOptions, number: int) -> tuple[Path, Storyline]:
    """The ``number``-th served storyline (0-based), loaded; one-line errors otherwise."""
    if not 0 <= number < len(options.storylines):
        count = len(options.storylines)
        raise InputError(
            f"no storyline {number} (this server serves {count})",
            "pick one on /storylines, or start personae web with --storyline FILE",
        )
    path = options.storylines[number]
    return path, open_storyline(path)


def storyline_listing(options: WebOptions) -> list[dict[str, Any]]:
    """Every served storyline: name, actions, chapters, characters (or why it did not load)."""
    rows: list[dict[str, Any]] = []
    for number, path in enumerate(options.storylines):
        try:
            storyline = open_storyline(path)
        except PersonaeError as error:
            rows.append({"number": number, "path": str(path), "error": str(error)})
            continue
        rows.append(
            {
                "number": number,
                "path": str(path),
                "name": storyline.name,
                "actions": len(storyline),
                "chapters": len(storyline.chapters),
                "characters": storyline.characters,
                "error": None,
            }
        )
    return rows


def chosen_position(value: str | None, storyline: Storyline) -> int:
    """The position a request names (default: the last one), checked against the storyline."""
    if value is None or value == "":
        return len(storyline) - 1
    try:
        number = int(value)
    except ValueError:
        raise InputError(
            f"position {value[:20]!r} is not a number",
            f"use a position from 0 to {len(storyline) - 1}",
        ) from None
    return storyline.check_position(number)


def bank_of(options: WebOptions, path: Path) -> BookmarkBank | None:
    """The storyline's bookmark bank, or None when its memory folder was not made yet.

    Opened as the tool opens it (same storyline scope, embedding and Chroma settings), so the
    page shows the very bank the answers go to; without ``bookmarks_memory`` that is the bank
    in this server's process.
    """
    from personae import BookmarksContext
    from personae.graphs.bookmarks.resources import resources_for

    memory = options.bookmarks_memory
    if memory is not None and not memory.is_dir():
        return None
    context = BookmarksContext(
        storyline_path=str(path),
        memory_dir=str(memory) if memory is not None else None,
        embedding=options.embedding,
    )
    return resources_for(
        str(path), context.memory_dir, context.chroma, context.text_embedding()
    ).bank


def bank_at(bank: BookmarkBank, character: str, position: int) -> tuple[list[BankEntry], int]:
    """The bookmarks a reader at ``position`` may see, and how many are answered only later.

    As the agent sees its bank: every state and concept bookmark, and ``character``'s own
    behavioral ones; each answer as it stood at ``position`` (archived versions brought back).
    """
    shown: list[BankEntry] = []
    later = 0
    for bookmark in bank.all():
        if bookmark.type is BookmarkType.BEHAVIORAL and bookmark.character != character:
            continue
        if bookmark.archived:
            bookmark = bank.get(bookmark.id, at=position)
        answer = bookmark.answer_at(position)
        if not answer:
            later += 1
            continue
        synced = max(v.position for v in bookmark.history if v.position <= position)
        shown.append(
            BankEntry(
                bookmark.id,
                bookmark.type.value,
                bookmark.character,
                bookmark.question,
                answer,
                synced,
            )
        )
    return shown, later


def storylines_index(request: Request) -> Response:
    """Every storyline the server serves."""
    options: WebOptions = request.app.state.options
    return render(request, "storylines.html", storylines=storyline_listing(options))


def storyline_view(request: Request) -> Response:
    """One storyline: its characters, or a character's actions and bank at a position."""
    options: WebOptions = request.app.state.options
    try:
        path, storyline = pick_storyline(options, request.path_params["number"])
    except PersonaeError as error:
        return error_page(request, str(error), 404)
    character = request.query_params.get("character")
    try:
        position = chosen_position(request.query_params.get("position"), storyline)
        if character is not None:
            character = storyline.check_character(character)
    except PersonaeError as error:
        return error_page(request, str(error))
    number = request.path_params["number"]
    return _page(request, options, number, path, storyline, character, position, {}, None)


async def ask_storyline(request: Request) -> Response:
    """Answer "what is true about X at position P" through the storyline memory tool."""
    from personae import create_storyline_memory_tool

    options: WebOptions = request.app.state.options
    number = request.path_params["number"]
    try:
        path, storyline = await asyncio.to_thread(pick_storyline, options, number)
    except PersonaeError as error:
        return error_page(request, str(error), 404)
    form = await request.form()
    asked = {k: str(form.get(k) or "") for k in ("character", "position", "question", "type")}
    asked["keyword"] = str(form.get("keyword") or "")
    try:
        character = storyline.check_character(asked["character"])
        position = chosen_position(asked["position"], storyline)
        question = bounded_text(asked["question"], "question", required=True)
        kind = asked["type"] or "state"
        if kind not in QUESTION_TYPES:
            raise InputError(
                f"unknown question type {kind[:20]!r}", "use state, behavioral or concept"
            )
        keyword = bounded_text(asked["keyword"], "keyword", required=False)
        memory = options.bookmarks_memory
        tool = await asyncio.to_thread(  # off the event loop: settings, the embedding
            create_storyline_memory_tool,
            str(path),
            memory_dir=str(memory) if memory is not None else None,
            model=options.models.get("model") or None,
            fast_model=options.models.get("fast_model") or None,
            embedding=options.embedding,
        )
        assert isinstance(tool, StructuredTool) and tool.coroutine is not None
        answer = str(
            await tool.coroutine(
                character=character,
                question=question,
                position=position,
                type=kind,
                keyword=keyword or None,
            )
        )
    except ToolException as error:  # the tool's own one-line errors (bad input, model down)
        return error_page(request, str(error))
    except PersonaeError as error:
        return error_page(request, str(error), status_of(error))
    return await asyncio.to_thread(
        _page, request, options, number, path, storyline, character, position, asked, answer
    )


def _page(
    request: Request,
    options: WebOptions,
    number: int,
    path: Path,
    storyline: Storyline,
    character: str | None,
    position: int,
    asked: dict[str, str],
    answer: str | None,
) -> Response:
    actions: list[Any] = []
    bank: list[BankEntry] = []
    later = 0
    has_bank = False
    if character is not None:
        actions = [storyline.actions[p] for p in storyline.positions_of(character)]
        opened = bank_of(options, path)
        if opened is not None:
            has_bank = True
            bank, later = bank_at(opened, character, position)
    memory = options.bookmarks_memory
    return render(
        request,
        "storylines_view.html",
        number=number,
        file=str(path),
        storyline={"name": storyline.name, "length": len(storyline)},
        characters=storyline.characters,
        character=character,
        position=position,
        actions=actions,
        bank=bank,
        later=later,
        has_bank=has_bank,
        memory=str(memory) if memory is not None else None,
        types=QUESTION_TYPES,
        asked={"question": "", "type": "state", "keyword": "", **asked},
        answer=answer,
    )


routes = [
    Route("/storylines", storylines_index, name="storylines"),
    Route("/storylines/{number:int}", storyline_view, methods=["GET"], name="storyline"),
    Route("/storylines/{number:int}", ask_storyline, methods=["POST"]),
]
