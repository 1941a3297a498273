"""`personae eval`: one subcommand per protocol, each registered by its paper's command package."""

from __future__ import annotations

import importlib
from typing import Any

PROTOCOLS = (
    "personae.commands.arcane.eval",
    "personae.commands.characterhub.eval_profile",
    "personae.commands.amadeus.eval_personality",
    "personae.commands.amadeus.eval_persona_qa",
    "personae.commands.amadeus.eval_persona_chunks",
    "personae.commands.amadeus.eval_persona_human",
    "personae.commands.arcane.eval_perturb",
    "personae.commands.arcane.eval_report",
)
"""Modules with a ``register(protocols)`` that adds their ``eval`` subcommand, in help order."""


def register(commands: Any) -> None:
    """Add the `eval` command; each paper's protocols add themselves below it."""
    parser = commands.add_parser("eval", help="run an evaluation protocol")
    protocols = parser.add_subparsers(dest="protocol", required=True)
    for name in PROTOCOLS:
        importlib.import_module(name).register(protocols)
