"""The command tree, built from the folders: the everyday verbs, ``serve``, one group per paper.

A paper's commands live in ``personae/commands/<paper>/``: the folder is the group
(``personae <paper>``), its ``__init__`` holds the group's one-line ``HELP`` (and, if the
workflow has an order, the ``ORDER`` its commands are listed in), and every module there with a
``register(commands)`` adds its commands under their real names. Adding a command is adding one
module; adding a paper is adding one folder. Above the groups stand the everyday verbs (``profile``
and ``chat`` are their paper's commands shown again at the top, ``doctor``) and ``serve``.
The old spellings are one table, :mod:`personae.commands.aliases`.

Only the standard library is imported here: this runs for ``personae --help``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Iterable, Sequence
from types import ModuleType

import personae.commands

EVERYDAY: dict[str, tuple[str, str]] = {
    "profile": ("characterhub", "profile"),
    "chat": ("amadeus", "chat"),
}
"""Everyday verbs that are a paper's command, listed at the top too (the same parser)."""

TOP_MODULES = ("personae.commands.doctor",)
"""Modules registering a top-level command of their own (``doctor`` belongs to no paper)."""

SERVE_HELP = (
    "the ways in that stay running: the local web page (web), the MCP server (mcp) and an "
    "OpenAI-compatible chat server (openai)"
)
SERVE_MODULES = ("personae.commands.web", "personae.commands.mcp", "personae.commands.openai_api")
"""The ``serve`` group: what stays running."""

SHORTCUTS: dict[str, tuple[str, str]] = {"web": ("serve", "web"), "mcp": ("serve", "mcp")}
"""Short spellings that stay (not deprecated, not listed): ``personae web`` is ``personae serve
web``. Both servers are everyday ways in, but eight commands at the top leave room for one
group holding them; MCP client configurations written with ``personae mcp`` keep working."""

PAPER_ORDER = ("characterhub", "bookmarks", "amadeus", "arcane")
"""The papers' ``--help`` order (the order they came in); a paper folder not named follows."""


def add_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Fill the top-level ``commands``: the everyday verbs, ``serve``, then the paper groups."""
    papers = paper_names()
    for paper in papers:
        _add_paper(commands, paper)
    for verb, path in EVERYDAY.items():
        leaf, help_text = _leaf(commands, path)
        leaf.prog = f"{leaf.prog.split(' ', 1)[0]} {verb}"
        _attach(commands, verb, leaf, help_text)
    for module in TOP_MODULES:
        importlib.import_module(module).register(commands)
    serve = _add_group(commands, "serve", SERVE_HELP)
    for module in SERVE_MODULES:
        importlib.import_module(module).register(serve)
    for short, path in SHORTCUTS.items():
        commands.choices[short] = _leaf(commands, path)[0]  # hidden: parses, not listed
    top = [*EVERYDAY, *(m.rsplit(".", 1)[1] for m in TOP_MODULES), "serve", *papers]
    _order(commands, top)
    commands.metavar = "COMMAND"


def paper_names() -> list[str]:
    """The paper groups: every package in ``personae/commands/``, in :data:`PAPER_ORDER`."""
    found = [info.name for info in pkgutil.iter_modules(personae.commands.__path__) if info.ispkg]
    return sorted(found, key=lambda name: (_rank(PAPER_ORDER, name), name))


def command_modules(package: ModuleType) -> list[ModuleType]:
    """The modules of a paper's package that register commands (helpers have no ``register``)."""
    modules = (
        importlib.import_module(f"{package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
        if not info.ispkg
    )
    return [module for module in modules if hasattr(module, "register")]


def _add_paper(commands: argparse._SubParsersAction, paper: str) -> None:  # type: ignore[type-arg]
    package = importlib.import_module(f"{personae.commands.__name__}.{paper}")
    group = _add_group(commands, paper, package.HELP)
    for module in command_modules(package):
        module.register(group)
    _order(group, getattr(package, "ORDER", ()))


def _add_group(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    help_text: str,
) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help_text, description=help_text
    )
    return parser.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def _leaf(
    commands: argparse._SubParsersAction,  # type: ignore[type-arg]
    path: tuple[str, str],
) -> tuple[argparse.ArgumentParser, str | None]:
    """The parser of ``group command`` and the help line its group lists it with."""
    group = subcommands(commands.choices[path[0]])
    assert group is not None, path
    help_text = next(entry.help for entry in group._choices_actions if entry.dest == path[1])
    return group.choices[path[1]], help_text


def _attach(
    action: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    parser: argparse.ArgumentParser,
    help_text: str | None,
) -> None:
    """List an existing ``parser`` under ``name`` (``add_parser`` can only make a new one)."""
    action.choices[name] = parser
    action._choices_actions.append(action._ChoicesPseudoAction(name, (), help_text))


def _order(action: argparse._SubParsersAction, names: Sequence[str]) -> None:  # type: ignore[type-arg]
    """List ``action``'s commands in the order of ``names`` (the others after, as registered)."""
    action._choices_actions.sort(key=lambda entry: _rank(names, entry.dest))


def _rank(names: Sequence[str], name: str) -> int:
    return names.index(name) if name in names else len(names)


def subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:  # type: ignore[type-arg]
    """The subcommands action of ``parser`` (None for a command without subcommands)."""
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def visible_commands(parser: argparse.ArgumentParser) -> list[str]:
    """The subcommand names ``parser``'s ``--help`` lists (old spellings are hidden)."""
    action = subcommands(parser)
    return [entry.dest for entry in action._choices_actions] if action is not None else []


def command_path(
    parser: argparse.ArgumentParser, argv: Iterable[str]
) -> tuple[list[str], argparse.ArgumentParser]:
    """The command names ``argv`` walks through, and the parser it ends at.

    Only options can come before a command name (``-v``), so every non-option word is a
    command name until a parser with no subcommands is reached.
    """
    path: list[str] = []
    for word in argv:
        action = subcommands(parser)
        if action is None:
            break
        if word.startswith("-"):
            continue
        if word not in action.choices:
            break
        path.append(word)
        parser = action.choices[word]
    return path, parser
