"""`personae chat`: talk to a character with the AMADEUS agent, on a terminal or one question.

``personae chat --character NAME`` opens an interactive conversation with an indexed character;
``--ask "QUESTION"`` prints one answer and exits; ``--json`` adds the knowledge chunks, the
Guided Selection slot and verdicts, the attributes and whether the fallback fired. Passing a
persona source (``personae chat profiles/kenshiro/profile.json``) indexes it first (an
unchanged source costs nothing). The conversation is checkpointed in ``MEMORY/chats.sqlite``:
the terminal conversation resumes where it stopped (``--thread`` names one; ``--ask`` is a
fresh conversation unless ``--thread`` is given).

The flags fill the AMADEUS run context, which takes what they leave out from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL`` (``--model``: role-play and, unless ``--gs-model`` / ``--ae-model``, Guided
Selection and the Attribute Extractor), ``CHROMA_HOST`` / ``CHROMA_PORT``, ``PERSONAE_EMBEDDINGS`` (unless
``--embedding``: the index of that embedding is used).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from personae.commands.amadeus.persona import add_index_flags
from personae.commands.models import add_model_flags, model_fields
from personae.degraded import print_degraded
from personae.errors import InputError

if TYPE_CHECKING:
    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.runners.amadeus import ChatTurn

EXIT_WORDS = ("/exit", "/quit", "/bye")


def register(commands: Any) -> None:
    """Add `amadeus chat` (also `personae chat`)."""
    parser = commands.add_parser("chat", help="talk to a character (AMADEUS role-play agent)")
    parser.add_argument(
        "source", nargs="?", help="persona to index first (profile.json, .md, wiki URL/.html)"
    )
    parser.add_argument("--character", help="the indexed character to talk to")
    parser.add_argument(
        "--method",
        choices=("amadeus", "naive", "none"),
        default="amadeus",
        help="amadeus (GS + AE), naive (retrieval only) or none (no retrieval)",
    )
    parser.add_argument("--ask", help="ask one question, print the answer and exit")
    parser.add_argument("--json", action="store_true", help="print each turn as JSON")
    parser.add_argument("--thread", help="conversation name (kept in MEMORY/chats.sqlite)")
    parser.add_argument("--gs-wave", type=int, default=1, help="Guided Selection checks at once")
    add_selection_model_flags(parser)
    add_index_flags(parser)
    add_model_flags(parser)
    parser.set_defaults(handler=run)


def add_selection_model_flags(parser: Any) -> None:
    """``--gs-model`` and ``--ae-model``: the paper runs both on GPT-4.1 whatever role-plays."""
    parser.add_argument(
        "--gs-model",
        help="Guided Selection model provider:model (the paper: openai:gpt-4.1; default --model)",
    )
    parser.add_argument(
        "--ae-model",
        help="Attribute Extractor model provider:model (the paper: openai:gpt-4.1; "
        "default --gs-model, else --model)",
    )


def agent_context(args: argparse.Namespace, *, ask: bool = True) -> AmadeusContext:
    """The AMADEUS run context of the parsed flags (the settings fill the rest).

    The strong model is asked for here (``ask``): no LLM or a bad spec fails before any work.
    A runner that checks its inputs first asks for it itself (``ask=False``).
    """
    from personae.graphs.amadeus.graph import AmadeusContext

    context = AmadeusContext(
        method=args.method,
        gs_model=getattr(args, "gs_model", None) or "",
        ae_model=getattr(args, "ae_model", None) or "",
        memory_dir=str(args.memory),
        splitter=args.splitter,
        embedding=args.embedding or "",
        gs_wave=args.gs_wave,
        **model_fields(args),
    )
    if ask:
        context.llm("strong")
    return context


def _write_turn(args: argparse.Namespace, turn: ChatTurn) -> None:
    if args.json:
        sys.stdout.write(json.dumps(turn.as_json(), ensure_ascii=False, indent=2) + "\n")
    elif args.ask is not None:
        sys.stdout.write(turn.response + "\n")
    else:
        sys.stdout.write(f"{turn.character}: {turn.response}\n\n")
    sys.stdout.flush()
    print_degraded(turn.degraded)


async def _converse(args: argparse.Namespace, context: Any, character: str) -> None:
    import asyncio

    from personae.runners.amadeus import open_chat

    thread = args.thread or ("default" if args.ask is None else None)
    async with open_chat(character, context=context, thread=thread) as chat:
        if args.ask is not None:
            _write_turn(args, await chat.ask(args.ask))
            return
        if not args.json:
            sys.stderr.write(f"Talking to {character} (/exit to leave; the chat is kept).\n")
        while True:
            try:
                line = await asyncio.to_thread(input, "You: " if sys.stdin.isatty() else "")
            except EOFError:
                return
            if line.strip().casefold() in EXIT_WORDS:
                return
            if not line.strip():
                continue
            _write_turn(args, await chat.ask(line))


def run(args: argparse.Namespace) -> int:
    """Index the source if one is given, resolve the character, then converse."""
    import asyncio

    from personae.commands.amadeus.persona import index_options
    from personae.runners.amadeus import index_persona, indexed_character
    from personae.settings import check_checkpointer_spec

    if args.ask is not None and not args.ask.strip():
        raise InputError("--ask is empty", "pass the question to ask")
    if args.gs_wave < 1:
        raise InputError("--gs-wave must be at least 1", "pass 1 or more")
    context = agent_context(args)
    check_checkpointer_spec(context.settings.checkpointer)  # before indexing writes anything
    options = index_options(args, context)
    character = args.character
    if args.source:
        done = asyncio.run(
            index_persona(args.source, character=character, index=options, context=context)
        )
        character = done.character
        if done.stats.added or done.stats.deleted:
            sys.stderr.write(f"indexed {done.character}: {done.stats.added} chunks added\n")
    if not character:
        raise InputError("no character given", "pass --character NAME or a persona source")
    asyncio.run(_converse(args, context, indexed_character(character, options)))
    return 0
