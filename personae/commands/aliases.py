"""The old command spellings: one table (old path -> new path), each kept for one release.

Why a table and not a second registration: every command registers once, under its real name
in its paper's folder, so grepping a command's name lands in its handler. The old spellings
(the CLI before the paper groups) then parse as hidden aliases of those same parser objects,
and :func:`deprecations` names the new spelling of each old one a command line used; the CLI
turns each into one :class:`DeprecatedSpelling` warning, one line on the console.

This module and its tests are the only places the old spellings are written
(tests/test_one_language.py fails on one anywhere else). Standard library only: this runs for
``personae --help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from personae.commands.tree import command_path, subcommands

REMOVAL = "the next release"

OLD_PATHS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("eval", "profile"): ("characterhub", "eval"),
    ("act",): ("bookmarks", "act"),
    ("bench", "bookmarks"): ("bookmarks", "bench"),
    ("data", "fetch"): ("bookmarks", "fetch"),
    ("data", "positions"): ("bookmarks", "positions"),
    ("persona", "index"): ("amadeus", "index"),
    ("eval", "personality"): ("amadeus", "eval-personality"),
    ("eval", "persona-qa"): ("amadeus", "eval-qa"),
    ("eval", "persona-chunks"): ("amadeus", "eval-chunks"),
    ("eval", "persona-human"): ("amadeus", "eval-human"),
    ("novel", "import"): ("arcane", "import"),
    ("novel", "chapters"): ("arcane", "chapters"),
    ("arc", "build"): ("arcane", "build-arcs"),
    ("arc", "show"): ("arcane", "show-arc"),
    ("arc", "annotate"): ("arcane", "annotate-arcs"),
    ("probes", "build"): ("arcane", "build-probes"),
    ("eval", "arcane"): ("arcane", "eval"),
    ("eval", "arcane-perturb"): ("arcane", "eval-perturb"),
    ("eval", "arcane-report"): ("arcane", "eval-report"),
    ("export", "arcane"): ("arcane", "export"),
}
"""Old spelling -> new spelling. The old ones parse (hidden from ``--help``) until REMOVAL."""

OLD_FLAGS: dict[tuple[str, ...], dict[str, str]] = {
    ("arcane", "export"): {"--teacher": "--teacher-model"},
    ("arcane", "show-arc"): {"--at-chapter": "--chapter"},
    ("bookmarks", "bench"): {"--judge": "--judge-method"},
}
"""Per command (its path), old flag -> new flag: each old flag parses as its new one.

The one vocabulary: a flag that names a model ends in ``-model``; a flag that picks a way of
working ends in ``-method`` (``bench``'s old flag named a matching rule, not a model); a chapter
is ``--chapter`` (``arcane act``'s word).
"""


class DeprecatedSpelling(DeprecationWarning):
    """An old command or flag spelling was used: it still runs, and goes in the next release.

    A :class:`DeprecationWarning` raised from :mod:`personae.cli`, so, as Python does for every
    deprecation, a program that calls ``main`` shows it only when it asks to (``-W default``,
    pytest); the ``personae`` console script shows each as one line on stderr.
    """


def add_old_spellings(root: argparse.ArgumentParser) -> None:
    """Let every old spelling of :data:`OLD_PATHS` and :data:`OLD_FLAGS` parse, unlisted.

    An old path reaches the very parser its new path does (not a copy), so it parses, defaults
    and dispatches identically; an old top-level word (``eval``, ``arc``, ...) is a hidden
    parser holding those leaves, absent from ``personae --help`` and from its usage line.
    """
    top = _subcommands(root)
    for old, new in OLD_PATHS.items():
        leaf = _parser_at(root, new)
        if len(old) == 1:
            top.choices[old[0]] = leaf
            continue
        holder = top.choices.get(old[0])
        if holder is None:
            holder = type(root)(
                prog=f"{root.prog} {old[0]}",
                description=f"Old spellings, kept until {REMOVAL}: each names its new one.",
            )
            holder.add_subparsers(dest=f"old_{old[0]}", required=True, metavar="COMMAND")
            top.choices[old[0]] = holder
        below = _subcommands(holder)
        below.choices[old[1]] = leaf
        now = f"now '{root.prog} {' '.join(new)}'"
        below._choices_actions.append(below._ChoicesPseudoAction(old[1], (), now))
    for path, flags in OLD_FLAGS.items():
        leaf = _parser_at(root, path)
        for old_flag, new_flag in flags.items():
            leaf._option_string_actions[old_flag] = leaf._option_string_actions[new_flag]


def deprecations(root: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """One sentence per old spelling ``argv`` uses (its command path, then its flags)."""
    path, _command = command_path(root, argv)
    notes: list[str] = []
    new_path = tuple(path)
    for old, new in OLD_PATHS.items():
        if tuple(path[: len(old)]) == old:
            new_path = new + tuple(path[len(old) :])
            notes.append(
                f"'{root.prog} {' '.join(path)}' is now '{root.prog} {' '.join(new_path)}'; "
                f"the old spelling goes in {REMOVAL}"
            )
            break
    used = {word.split("=", 1)[0] for word in argv if word.startswith("--")}
    for old_flag, new_flag in OLD_FLAGS.get(new_path, {}).items():
        if old_flag in used:
            notes.append(
                f"'{old_flag}' is now '{new_flag}' ({root.prog} {' '.join(new_path)}); "
                f"the old spelling goes in {REMOVAL}"
            )
    return notes


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    action = subcommands(parser)
    assert action is not None, parser.prog
    return action


def _parser_at(root: argparse.ArgumentParser, path: Sequence[str]) -> argparse.ArgumentParser:
    parser = root
    for name in path:
        parser = _subcommands(parser).choices[name]
    return parser
