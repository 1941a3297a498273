"""`personae data` (placeholder until implemented)."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    """Add the `data` subcommand."""
    parser = commands.add_parser("data", help="(not implemented yet)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Not implemented yet."""
    raise SystemExit("not implemented")
