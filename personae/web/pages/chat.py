"""Talk to a character: AMADEUS chat with an indexed persona, and a profile indexed in one click.

``/chat`` lists the persona indexes of the persona memory and the profiles that can become
one; ``POST /chat/index`` (``profile=KEY``) indexes a profile's ``profile.json`` with the
public :func:`personae.index_persona` and opens its chat. ``/chat/{character}`` is the
conversation: each answer with the chunks Guided Selection kept (ids and text). The
conversation is the one ``personae chat --character NAME`` keeps: thread ``default`` in
``<personas>/chats.sqlite``, through :func:`personae.open_chat`, so the terminal and the page
continue each other.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from personae.errors import InputError, PersonaeError, RemoteError
from personae.runners.amadeus import CHAT_DB
from personae.web.profile_files import PROFILE_FILE, profile_file
from personae.web.render import error_page, render

THREAD = "default"
"""The conversation ``personae chat --character NAME`` keeps on a terminal (its ``--thread``
default), so the page continues the same one."""
MAX_MESSAGE = 4000
"""Characters a message may have (a pasted book is a mistake, not a question)."""


def persona_manifests(personas_dir: Path) -> list[dict[str, Any]]:
    """The manifest of every persona index in the memory folder (none when it is absent)."""
    if not personas_dir.is_dir():
        return []  # opening Chroma on a missing folder would create it
    from personae.memory.amadeus.persona_store import indexed_personas, open_client

    found = indexed_personas(open_client(str(personas_dir)))
    return sorted(found, key=lambda m: (str(m["character"]).casefold(), m["collection"]))


def persona_characters(personas_dir: Path) -> set[str]:
    """The indexed characters' names, casefolded."""
    return {str(m["character"]).casefold() for m in persona_manifests(personas_dir)}


def chat_url(character: str) -> str:
    """The chat page of ``character``."""
    return "/chat/" + quote(character, safe="")


def shown_path(path: str | Path, options: Any) -> str:
    """``path`` relative to the folder the page serves from (the profiles folder's parent)."""
    base = options.profiles_dir.parent
    resolved = Path(path)
    return str(resolved.relative_to(base)) if resolved.is_relative_to(base) else str(path)


def _context(options: Any) -> Any:
    from personae.graphs.amadeus.graph import AmadeusContext

    return AmadeusContext(
        memory_dir=str(options.personas_dir), embedding=options.embedding, **options.models
    )


def _lock(request: Request, character: str) -> asyncio.Lock:
    """One turn at a time per conversation (two tabs must not fork its checkpoints)."""
    state = request.app.state
    locks: dict[str, asyncio.Lock] | None = getattr(state, "chat_locks", None)
    if locks is None:
        locks = state.chat_locks = {}
    return locks.setdefault(character.casefold(), asyncio.Lock())


async def chat_index(request: Request) -> Response:
    """The personas to talk to, and the profiles that can become one."""
    from personae.web.profile_files import shelf

    options = request.app.state.options
    manifests = await asyncio.to_thread(persona_manifests, options.personas_dir)
    indexed = {str(m["character"]).casefold() for m in manifests}
    rows, _ = await asyncio.to_thread(shelf(request).summaries)
    profiles = [row for row in rows if row.check != "draft"]
    return render(
        request,
        "chat.html",
        personas=[{**m, "url": chat_url(str(m["character"]))} for m in manifests],
        profiles=[(row, row.name.casefold() in indexed) for row in profiles],
        folder=str(options.personas_dir),
    )


async def index_profile(request: Request) -> Response:
    """Index the posted ``profile`` (a key) as a persona, then open its chat."""
    from personae.runners.amadeus import index_persona, persona_index_settings

    options = request.app.state.options
    key = str((await request.form()).get("profile") or "")
    try:
        path = profile_file(options.profiles_dir, key)
    except InputError as error:
        return error_page(request, str(error), 404)
    try:
        if path.name != PROFILE_FILE:
            raise InputError(
                f"profile {key!r} is an unchecked draft, not a profile",
                "profile the character again; a draft is not indexed",
            )
        context = _context(options)
        settings = persona_index_settings(options.personas_dir, context=context)
        done = await index_persona(path, index=settings, context=context)
    except PersonaeError as error:
        return error_page(request, str(error), _status(error))
    return RedirectResponse(chat_url(done.character), status_code=303)


def _status(error: PersonaeError) -> int:
    """400 for what the user can change on the page, 502 for a model or server that failed."""
    return 502 if isinstance(error, RemoteError) else 400


async def _manifest(options: Any, character: str) -> dict[str, Any]:
    manifests = await asyncio.to_thread(persona_manifests, options.personas_dir)
    wanted = character.strip().casefold()
    for manifest in manifests:
        if str(manifest["character"]).casefold() == wanted:
            return manifest
    names = sorted({str(m["character"]) for m in manifests})
    raise InputError(
        f"no persona index of {character!r} in {options.personas_dir} "
        f"(indexed: {', '.join(names) or 'none yet'})",
        "index a profile from its page, or run personae amadeus index SOURCE",
    )


async def conversation(request: Request) -> Response:
    """The kept conversation with the character and a box for the next message."""
    from personae.runners.amadeus import open_chat

    options = request.app.state.options
    try:
        manifest = await _manifest(options, request.path_params["character"])
        character = str(manifest["character"])
        async with open_chat(character, context=_context(options), thread=THREAD) as chat:
            turns = await chat.history()
    except PersonaeError as error:
        return error_page(request, str(error), 404)
    return render(
        request,
        "chat_character.html",
        character=character,
        manifest=manifest,
        turns=turns,
        action=chat_url(character),
        thread=THREAD,
        source=shown_path(str(manifest.get("source", "")), options),
        chats=shown_path(options.personas_dir / CHAT_DB, options),
    )


async def send(request: Request) -> Response:
    """Ask the character the posted ``message``; the answer appears in the conversation."""
    from personae.runners.amadeus import ask_character

    options = request.app.state.options
    message = str((await request.form()).get("message") or "")
    try:
        character = str((await _manifest(options, request.path_params["character"]))["character"])
    except InputError as error:
        return error_page(request, str(error), 404)
    try:
        if len(message) > MAX_MESSAGE:
            raise InputError(
                f"the message has {len(message)} characters, more than {MAX_MESSAGE}",
                "send a shorter message",
            )
        async with _lock(request, character):
            await ask_character(character, message, context=_context(options), thread=THREAD)
    except PersonaeError as error:
        return error_page(request, str(error), _status(error))
    return RedirectResponse(chat_url(character) + "#last", status_code=303)


routes = [
    Route("/chat", chat_index, name="chat"),
    Route("/chat/index", index_profile, methods=["POST"], name="chat_index_profile"),
    Route("/chat/{character}", conversation, name="conversation"),
    Route("/chat/{character}", send, methods=["POST"], name="chat_send"),
]
