"""`personae mcp`: serve Personae's tools and resources over the Model Context Protocol.

``personae mcp`` speaks MCP on stdin/stdout (what Claude Desktop, Cursor and most MCP clients
start); ``--transport http`` serves streamable HTTP at ``http://HOST:PORT/mcp``. Tools:
``profile_character``, ``ask_character`` (AMADEUS, over ``--personas``), ``storyline_memory``
(BOOKMARKS, over each ``--storyline``), ``arcane_act`` (ARCANE, over ``--data``); resources:
``personae://profiles`` (``--profiles``) and ``personae://personas``. Settings as every
command: the flags fill each graph's run context, the environment the rest (read once, when
the server starts). With no LLM configured the server still starts (MCP clients pass a minimal
environment): it lists its tools and resources and answers each tool call with the error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.commands.models import add_embedding_flag, add_model_flags, model_fields
from personae.errors import InputError
from personae.run_queue import DEFAULT_MAX_JOBS, check_max_jobs

ARCANE_MODES = ("vanilla", "summary", "rag", "lifechoice", "timechara", "arc")


def register(commands: Any) -> None:
    """Add the `mcp` command."""
    parser = commands.add_parser(
        "mcp",
        help="serve the tools (profile, ask, storyline memory, ARCANE act) over MCP",
        description=(
            "Serve profile_character, ask_character, storyline_memory and arcane_act, and the "
            "profiles and persona indexes as read-only resources, over the Model Context "
            "Protocol: stdio (default) or streamable HTTP."
        ),
    )
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP: address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="HTTP: port (default 8000)")
    parser.add_argument("--profiles", type=Path, default=Path("profiles"), help="profiles folder")
    parser.add_argument("--personas", type=Path, default=Path("personas"), help="persona memory")
    parser.add_argument(
        "--storyline", type=Path, action="append", default=[], help="a storyline (repeatable)"
    )
    parser.add_argument(
        "--bookmarks-memory", type=Path, help="bookmark bank folder (default: none)"
    )
    parser.add_argument("--data", default="", help="ARCANE data folder (PERSONAE_DATA_DIR)")
    parser.add_argument("--arcane-mode", choices=ARCANE_MODES, default="arc")
    parser.add_argument("--method", choices=("amadeus", "naive", "none"), default="amadeus")
    parser.add_argument("--no-web", action="store_true", help="profile from wikis only")
    parser.add_argument("--wiki", help="the wiki profile_character always uses (URL)")
    parser.add_argument(
        "--max-jobs",
        type=int,
        default=DEFAULT_MAX_JOBS,
        help=f"profile_character calls run at once; later ones wait in line (default {DEFAULT_MAX_JOBS})",
    )
    add_model_flags(parser)
    add_embedding_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Build the server (every context, once) and serve until the client or Ctrl-C ends it."""
    from personae.mcp.options import ServerOptions
    from personae.mcp.server import build_server

    for storyline in args.storyline:
        if not storyline.is_file():
            raise InputError(f"no storyline at {storyline}", "pass an existing storyline file")
    if not 0 < args.port < 65536:
        raise InputError(f"--port {args.port} is not a port number", "pass 1-65535")
    options = ServerOptions(
        profiles_dir=args.profiles,
        personas_dir=args.personas,
        storylines=tuple(args.storyline),
        bookmarks_memory=args.bookmarks_memory,
        data_dir=args.data,
        arcane_mode=args.arcane_mode,
        method=args.method,
        web_search=not args.no_web,
        wiki=args.wiki,
        embedding=args.embedding,
        max_jobs=check_max_jobs(args.max_jobs),
        models=dict(model_fields(args)),
    )
    server = build_server(options, host=args.host, port=args.port, log_level="WARNING")
    if args.transport == "stdio":
        server.run("stdio")
        return 0
    sys.stderr.write(f"personae: serving MCP at http://{args.host}:{args.port}/mcp\n")
    sys.stderr.flush()
    server.run("streamable-http")
    return 0
