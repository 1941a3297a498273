"""The ``personae`` console script: parses arguments and turns errors into one-line messages."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from personae.errors import PersonaeError

COMMAND_MODULES = (
    "personae.commands.profile",
    "personae.commands.eval",
    "personae.commands.bench",
    "personae.commands.act",
    "personae.commands.data",
    "personae.commands.persona",
    "personae.commands.chat",
)


class _Parser(argparse.ArgumentParser):
    """argparse with our exit code and one-line error style."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"personae: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """The full parser; each command module adds its own subcommand with ``register``."""
    parser = _Parser(prog="personae", description="Role-playing agents on LangGraph.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (0 ok, 2 bad input/config, 3 remote failure)."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    args = build_parser().parse_args(argv)
    try:
        code = int(args.handler(args) or 0)
    except PersonaeError as error:
        print(f"personae: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("personae: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    return code


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
