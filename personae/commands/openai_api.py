"""`personae serve openai`: an OpenAI-compatible chat server, one model per character.

Chat apps (SillyTavern, Open WebUI, LibreChat) and agent stacks that speak OpenAI's chat API
talk to a persona (AMADEUS, with its retrieval) or an ARCANE character as of a chapter
(``novel/character@chapter``). Served on 127.0.0.1 by default; another ``--host`` needs
``--token`` (or ``PERSONAE_WEB_TOKEN``), which clients send as their API key. Settings as every
command: the flags fill the run contexts, the environment the rest, read once at start.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.commands.guarded_server import add_guarded_server_flags, guard, url_host
from personae.commands.models import add_embedding_flag, add_model_flags, model_fields

DEFAULT_PORT = 8090
"""Beside the web page's 8080 (Chroma takes 8000, ``langgraph dev`` 2024)."""


def register(commands: Any) -> None:
    """Add the `openai` command."""
    parser = commands.add_parser(
        "openai",
        help="an OpenAI-compatible chat server: personas and ARCANE characters as models",
        description=(
            "Serve OpenAI's chat API (GET /v1/models, POST /v1/chat/completions, streamed or "
            "not) so a chat app or an agent stack talks to a character: every indexed persona "
            "is a model, and every ARCANE character with arcs is novel/character@chapter. "
            "Loopback only unless --host and --token say otherwise."
        ),
    )
    add_guarded_server_flags(
        parser,
        port=DEFAULT_PORT,
        port_help=f"port (default {DEFAULT_PORT})",
        token_help="API key every request must send (PERSONAE_WEB_TOKEN; required with another "
        "--host)",
        who="the server",
    )
    parser.add_argument("--personas", type=Path, default=Path("personas"), help="persona memory")
    parser.add_argument("--data", default="", help="ARCANE data folder (PERSONAE_DATA_DIR)")
    add_model_flags(parser)
    add_embedding_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check the flags, build the app, serve until Ctrl-C."""
    import uvicorn

    from personae.openai_api.app import create_app
    from personae.openai_api.options import OpenAIServerOptions
    from personae.settings import load_settings

    settings = load_settings()
    allowed = guard(args, settings)
    token = allowed.token
    options = OpenAIServerOptions(
        personas_dir=args.personas,
        data_dir=Path(args.data) if args.data else settings.data_dir,
        embedding=args.embedding,
        models=dict(model_fields(args)),
    )
    app = create_app(options, token=token, allowed_hosts=allowed.allowed_hosts)
    shown = url_host(args.host)
    sys.stderr.write(
        f"personae: OpenAI-compatible chat at http://{shown}:{args.port}/v1 "
        f"(API key: {'the --token' if token else 'any'})\n"
    )
    sys.stderr.flush()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
