"""`personae web` (also `personae serve web`): the local web page over Personae's folders.

Profiles with their sources and checks, a new character profiled in the background, AMADEUS
chat, ARCANE arcs as of a chapter, BOOKMARKS storylines and the written reports, served on
127.0.0.1 by default. Another ``--host`` needs ``--token`` (or ``PERSONAE_WEB_TOKEN``): the page
runs jobs that cost model calls. Settings as every command: the flags fill the run contexts,
the environment the rest, read once when the server starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from personae.commands.guarded_server import add_guarded_server_flags, guard, url_host
from personae.commands.models import add_embedding_flag, add_model_flags, model_fields
from personae.errors import InputError
from personae.run_queue import DEFAULT_MAX_JOBS, check_max_jobs


def register(commands: Any) -> None:
    """Add the `web` command."""
    parser = commands.add_parser(
        "web",
        help="the local web page: profiles and their sources, chat, arcs, storylines, reports",
        description=(
            "Serve a local web page over the folders Personae writes: browse profiles with "
            "their sources and checks, profile a new character in the background, talk to a "
            "persona, see a character's arcs as of a chapter and a storyline's bookmarks, "
            "read the reports. Loopback only unless --host and --token say otherwise."
        ),
    )
    add_guarded_server_flags(
        parser,
        port=8080,
        port_help="port (default 8080; the sample wiki takes 8765)",
        token_help="token every request must carry (PERSONAE_WEB_TOKEN; required with another "
        "--host)",
        who="the page",
    )
    parser.add_argument("--profiles", type=Path, default=Path("profiles"), help="profiles folder")
    parser.add_argument("--personas", type=Path, default=Path("personas"), help="persona memory")
    parser.add_argument("--data", default="", help="ARCANE data folder (PERSONAE_DATA_DIR)")
    parser.add_argument(
        "--storyline", type=Path, action="append", default=[], help="a storyline (repeatable)"
    )
    parser.add_argument(
        "--bookmarks-memory", type=Path, help="bookmark bank folder (default: none, in process)"
    )
    parser.add_argument("--runs", type=Path, default=Path("runs"), help="reports folder")
    parser.add_argument("--no-web", action="store_true", help="new profiles from wikis only")
    parser.add_argument(
        "--max-jobs",
        type=int,
        default=DEFAULT_MAX_JOBS,
        help=f"profile jobs run at once; later ones wait in line (default {DEFAULT_MAX_JOBS})",
    )
    add_model_flags(parser)
    add_embedding_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check the flags, build the app, serve until Ctrl-C."""
    import uvicorn

    from personae.settings import load_settings
    from personae.web.app import create_app
    from personae.web.options import WebOptions

    settings = load_settings()
    allowed = guard(args, settings)
    token = allowed.token
    for storyline in args.storyline:
        if not storyline.is_file():
            raise InputError(f"no storyline at {storyline}", "pass an existing storyline file")
    options = WebOptions(
        profiles_dir=args.profiles,
        personas_dir=args.personas,
        data_dir=Path(args.data) if args.data else settings.data_dir,
        storylines=tuple(args.storyline),
        bookmarks_memory=args.bookmarks_memory,
        runs_dir=args.runs,
        web_search=not args.no_web,
        embedding=args.embedding,
        max_jobs=check_max_jobs(args.max_jobs),
        models=dict(model_fields(args)),
    )
    app = create_app(options, token=token, allowed_hosts=allowed.allowed_hosts)
    shown = url_host(args.host)
    suffix = f"/?token={token}" if token else "/"
    sys.stderr.write(f"personae: the web page is at http://{shown}:{args.port}{suffix}\n")
    sys.stderr.flush()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
