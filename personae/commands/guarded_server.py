"""The flags and start-up checks every server that runs paid jobs shares: host, port, token.

``personae serve web`` and ``personae serve openai`` both listen on loopback by default, need a
token off loopback (``check_bind``), answer only to the Host names they were told (DNS
rebinding) and refuse a port outside 1-65535. One place for those flags and checks, so the two
servers cannot drift apart on what keeps them safe. Only the standard library is imported at
module level: this runs for ``personae --help``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from personae.errors import InputError

if TYPE_CHECKING:
    from personae.settings import Settings


@dataclass(frozen=True)
class Guard:
    """What a server starts with: its token (or none, on loopback) and the Host names it answers."""

    token: str | None
    allowed_hosts: tuple[str, ...]


def url_host(host: str) -> str:
    """``host`` as it stands in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def add_guarded_server_flags(
    parser: Any, *, port: int, port_help: str, token_help: str, who: str
) -> None:
    """``--host``, ``--port``, ``--token`` and ``--allowed-host``; ``who`` answers to Host names."""
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=port, help=port_help)
    parser.add_argument("--token", help=token_help)
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help=f"a Host name {who} answers to besides loopback and --host (repeatable)",
    )


def guard(args: argparse.Namespace, settings: Settings) -> Guard:
    """Check the flags (a token off loopback, a port number) and say what the server allows."""
    from personae.web.security import LOOPBACK_NAMES, check_bind

    token: str | None = args.token or settings.web_token
    check_bind(args.host, token)
    if not 0 < args.port < 65536:
        raise InputError(f"--port {args.port} is not a port number", "pass 1-65535")
    hosts = tuple(str(name) for name in (*LOOPBACK_NAMES, args.host, *args.allowed_host))
    return Guard(token, hosts)
