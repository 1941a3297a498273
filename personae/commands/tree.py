"""The command tree a user sees: the everyday verbs at the top, one group per paper below.

The command modules still ``register`` their parsers where they always did (``eval arcane``,
``novel import``, ``act``, ...), so a flag another change adds inside a ``register`` function
lands in both spellings at once. :func:`arrange` then builds the tree ``personae --help``
shows by attaching those same parser objects under the paper groups (:data:`LAYOUT`), keeps
every old spelling parsing as a hidden alias of the same parser (:data:`OLD_PATHS`), and gives
the model-role flags one vocabulary (:data:`RENAMED_FLAGS`; the old flag spellings still
parse). :func:`deprecations` names the new spelling of each old one a command line used; the
CLI turns each into one :class:`DeprecatedSpelling` warning, one line on the console.

Only the standard library is imported here: this runs for ``personae --help``.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence

TOP_COMMANDS = ("profile", "chat", "doctor")
"""The everyday verbs, kept at the top under the names they always had."""

SHORTCUTS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("web",): ("serve", "web"),
    ("mcp",): ("serve", "mcp"),
}
"""Short spellings that stay (not deprecated, not listed): ``personae web`` is ``personae serve
web``. Both servers are everyday ways in, but eight commands at the top leave room for one
group holding them; MCP client configurations written with ``personae mcp`` keep working."""

GROUPS: dict[str, str] = {
    "serve": "the ways in that stay running: the local web page (web) and the MCP server (mcp)",
    "characterhub": "CharacterHub: deep-search profiles and the profile evaluation",
    "bookmarks": "BOOKMARKS: storyline memory, its benchmark and data",
    "amadeus": "AMADEUS: persona indexes, role-play and its evaluations",
    "arcane": "ARCANE: novels, character arcs, probes, role-play as of a chapter, evaluation",
}
"""One group per paper, in ``--help`` order after :data:`TOP_COMMANDS`."""

LAYOUT: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "serve": (
        ("web", ("web",)),
        ("mcp", ("mcp",)),
    ),
    "characterhub": (
        ("profile", ("profile",)),
        ("eval", ("eval", "profile")),
    ),
    "bookmarks": (
        ("act", ("act",)),
        ("bench", ("bench", "bookmarks")),
        ("fetch", ("data", "fetch")),
        ("positions", ("data", "positions")),
    ),
    "amadeus": (
        ("index", ("persona", "index")),
        ("chat", ("chat",)),
        ("eval-personality", ("eval", "personality")),
        ("eval-qa", ("eval", "persona-qa")),
        ("eval-chunks", ("eval", "persona-chunks")),
        ("eval-human", ("eval", "persona-human")),
    ),
    "arcane": (
        ("import", ("novel", "import")),
        ("chapters", ("novel", "chapters")),
        ("build-arcs", ("arc", "build")),
        ("show-arc", ("arc", "show")),
        ("annotate-arcs", ("arc", "annotate")),
        ("build-probes", ("probes", "build")),
        ("prepare", ("arcane", "prepare")),
        ("act", ("arcane", "act")),
        ("prompt", ("arcane", "prompt")),
        ("eval", ("eval", "arcane")),
        ("eval-perturb", ("eval", "arcane-perturb")),
        ("eval-report", ("eval", "arcane-report")),
        ("export", ("export", "arcane")),
    ),
}
"""Each group's commands, in ``--help`` order: (new name, the path its module registers)."""

OLD_PATHS: dict[tuple[str, ...], tuple[str, ...]] = {
    registered: (group, name)
    for group, children in LAYOUT.items()
    for name, registered in children
    if registered[0] not in TOP_COMMANDS
    and registered != (group, name)
    and registered not in SHORTCUTS
}
"""Old spelling -> new spelling; the old ones parse as hidden aliases for one release."""

OLD_GROUPS = frozenset(old[0] for old in OLD_PATHS)
"""The top-level names of the old spellings (``eval``, ``arc``, ...), hidden from ``--help``."""

RENAMED_FLAGS: dict[tuple[str, ...], dict[str, str]] = {
    ("arcane", "export"): {"--teacher": "--teacher-model"},
    ("arcane", "show-arc"): {"--at-chapter": "--chapter"},
    ("bookmarks", "bench"): {"--judge": "--judge-method"},
}
"""Per command (new path), old flag -> new flag.

The one vocabulary: a flag that names a model ends in ``-model`` (``--model``, ``--fast-model``,
``--judge-model`` wherever the role exists; a paper's own role keeps the paper's word:
``--search-model``/``--rewrite-model`` (CharacterHub), ``--extractor-model`` (its protocol),
``--gs-model``/``--ae-model`` (AMADEUS's Guided Selection and Attribute Extractor),
``--critic-model``, ``--validator-model``, ``--coder-model``, ``--teacher-model`` (ARCANE)); a
flag that picks a way of working ends in ``-method`` (``bench``'s ``--judge`` named a matching
rule, not a model); a chapter is ``--chapter`` (``arcane act``'s word).
"""

METAVARS = {"--teacher-model": "PROVIDER:MODEL", "--chapter": "N", "--judge-method": "exact|nli"}
"""What ``--help`` shows after each renamed flag (the old ``dest`` would show ``TEACHER``)."""


class DeprecatedSpelling(DeprecationWarning):
    """An old command or flag spelling was used: it still runs, and goes in the next release.

    A :class:`DeprecationWarning` raised from :mod:`personae.cli`, so, as Python does for every
    deprecation, a program that calls ``main`` shows it only when it asks to (``-W default``,
    pytest); the ``personae`` console script shows each as one line on stderr.
    """


def arrange(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Turn the registered (old) top level into :data:`TOP_COMMANDS` plus :data:`GROUPS`.

    ``commands`` is the top-level subparsers action every command module registered into.
    The registered parsers are reused, not copied: a leaf reached by its old and its new
    spelling is one parser object, so it parses, defaults and dispatches identically.
    """
    registered = dict(commands.choices)
    helps = {entry.dest: entry.help for entry in commands._choices_actions}
    commands.choices.clear()
    commands._choices_actions.clear()
    for name in TOP_COMMANDS:
        _attach(commands, name, registered[name], helps[name])
    for group, help_text in GROUPS.items():
        parser = commands.add_parser(group, help=help_text, description=help_text)
        children = parser.add_subparsers(dest=f"{group}_command", required=True, metavar="COMMAND")
        for name, path in LAYOUT[group]:
            leaf, leaf_help = _registered_leaf(registered, helps, path)
            if path[0] not in TOP_COMMANDS and tuple(path) not in SHORTCUTS:
                leaf.prog = f"personae {group} {name}"
            _attach(children, name, leaf, leaf_help)
            for old, new in RENAMED_FLAGS.get((group, name), {}).items():
                _rename_flag(leaf, old, new)
    for name, parser in registered.items():
        if name in commands.choices:
            continue
        if name in OLD_GROUPS or (name,) in SHORTCUTS:
            commands.choices[name] = parser  # hidden: parses, absent from --help
        else:  # a command LAYOUT does not place yet stays in sight (tests ask for its place)
            _attach(commands, name, parser, helps[name])
    commands.metavar = "COMMAND"


def name_models_alike(parser: argparse.ArgumentParser) -> None:
    """Every ``--*-model`` flag of ``parser`` shows ``PROVIDER:MODEL`` in ``--help``.

    argparse would show each flag's own ``dest`` (``MODEL``, ``JUDGE_MODEL``, ``GS_MODEL``):
    one value shape, one name for it.
    """
    for action in parser._actions:
        if action.metavar is None and any(f.endswith("-model") for f in action.option_strings):
            action.metavar = "PROVIDER:MODEL"


def _registered_leaf(
    registered: dict[str, argparse.ArgumentParser],
    helps: dict[str, str | None],
    path: Sequence[str],
) -> tuple[argparse.ArgumentParser, str | None]:
    """The parser registered at ``path`` and the help line its parent lists it with."""
    parser, help_text = registered[path[0]], helps[path[0]]
    for name in path[1:]:
        action = subcommands(parser)
        assert action is not None, path
        help_text = next(e.help for e in action._choices_actions if e.dest == name)
        parser = action.choices[name]
    return parser, help_text


def _attach(
    action: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    parser: argparse.ArgumentParser,
    help_text: str | None,
) -> None:
    """List an existing ``parser`` under ``name`` (``add_parser`` can only make a new one)."""
    action.choices[name] = parser
    action._choices_actions.append(action._ChoicesPseudoAction(name, (), help_text))


def _rename_flag(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """``--help`` shows ``new``; ``old`` still parses (same action, same ``dest``)."""
    action = parser._option_string_actions[old]
    action.option_strings = [new if flag == old else flag for flag in action.option_strings]
    parser._option_string_actions[new] = action
    action.metavar = METAVARS[new]


def subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:  # type: ignore[type-arg]
    """The subcommands action of ``parser`` (None for a command without subcommands)."""
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def visible_commands(parser: argparse.ArgumentParser) -> list[str]:
    """The subcommand names ``parser``'s ``--help`` lists (old spellings are hidden)."""
    action = subcommands(parser)
    return [entry.dest for entry in action._choices_actions] if action is not None else []


def visible_flags(parser: argparse.ArgumentParser) -> list[str]:
    """The long flags ``parser``'s ``--help`` shows (but ``--help`` and ``--verbose``)."""
    return [
        flag
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
        if flag.startswith("--") and flag not in ("--help", "--verbose")
    ]


def command_path(
    parser: argparse.ArgumentParser, argv: Sequence[str]
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


def deprecations(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """One sentence per old spelling ``argv`` uses (a command path, then its flags)."""
    path, _command = command_path(parser, argv)
    notes: list[str] = []
    new_path = tuple(path)
    for old, new in OLD_PATHS.items():
        if tuple(path[: len(old)]) == old:
            new_path = new + tuple(path[len(old) :])
            notes.append(
                f"'personae {' '.join(path)}' is now 'personae {' '.join(new_path)}'; "
                "the old spelling goes in the next release"
            )
            break
    renamed = RENAMED_FLAGS.get(new_path, {})
    used = {word.split("=", 1)[0] for word in argv if word.startswith("--")}
    for old_flag, new_flag in renamed.items():
        if old_flag in used:
            notes.append(
                f"'{old_flag}' is now '{new_flag}' (personae {' '.join(new_path)}); "
                "the old spelling goes in the next release"
            )
    return notes


def unknown_flag(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The first ``--word`` in ``argv`` that no flag of ``parser`` is or begins with, else None.

    argparse takes unique prefixes (an ambiguous one it reports itself); words after ``--``
    are positional.
    """
    for word in argv:
        if word == "--":
            return None
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and not any(
            known.startswith(flag) for known in parser._option_string_actions
        ):
            return flag
    return None


def suggest(word: str, choices: Sequence[str], hidden: Sequence[str] = ()) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices`` (else of ``hidden``), or ``""``."""
    close = difflib.get_close_matches(word, choices, n=1) or difflib.get_close_matches(
        word, hidden, n=1
    )
    return f"; did you mean '{close[0]}'?" if close else ""
