"""Print the shape of the ``personae`` command line as ``--help`` shows it.

Counts what a user meets: top-level commands, leaf commands (a parser reached by two paths,
``profile`` and ``characterhub profile``, counts once), their options (``-h`` and ``-v``
aside), distinct long flags, flags only one command has, ``--*-model`` flags and groups with
one command. Old spellings hidden from ``--help`` are counted apart (they parse, with a
deprecation line). Run: ``uv run --frozen python benchmarks/cli_shape.py`` (``--json`` for one
object). Standard library only, on any checkout (the hidden-alias counts are 0 before the tree).
"""

from __future__ import annotations

import argparse
import json
import sys

from personae.cli import build_parser

GENERIC = {"-h", "--help", "-v", "--verbose"}


def _children(parser: argparse.ArgumentParser) -> tuple[dict[str, argparse.ArgumentParser], int]:
    """The subcommands ``--help`` lists, and how many more parse but are hidden."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            shown = [entry.dest for entry in action._choices_actions]
            return {name: action.choices[name] for name in shown}, len(action.choices) - len(shown)
    return {}, 0


def shape() -> dict[str, object]:
    """The figures, as :func:`main` prints them."""
    root = build_parser()
    top, hidden_top = _children(root)
    leaves: dict[int, tuple[str, argparse.ArgumentParser]] = {}
    paths = 0
    one_child_groups: list[str] = []
    pending = [(name, parser) for name, parser in top.items()]
    while pending:
        path, parser = pending.pop(0)
        children, _hidden = _children(parser)
        if len(children) == 1:
            one_child_groups.append(path)
        if not children:
            paths += 1
            leaves.setdefault(id(parser), (path, parser))
        pending += [(f"{path} {name}", child) for name, child in children.items()]
    options = 0
    owners: dict[str, set[str]] = {}
    for path, parser in leaves.values():
        for action in parser._actions:
            if not action.option_strings or GENERIC & set(action.option_strings):
                continue
            if action.help == argparse.SUPPRESS:
                continue
            options += 1
            for flag in action.option_strings:
                if flag.startswith("--"):
                    owners.setdefault(flag, set()).add(path)
    return {
        "top_level_commands": len(top),
        "hidden_top_level_spellings": hidden_top,
        "leaf_commands": len(leaves),
        "leaf_paths_shown": paths,
        "options": options,
        "distinct_long_flags": len(owners),
        "flags_on_one_command": sum(1 for paths_ in owners.values() if len(paths_) == 1),
        "model_flags": sorted(flag for flag in owners if flag.endswith("-model")),
        "groups_with_one_command": sorted(one_child_groups),
    }


def main() -> None:
    figures = shape()
    if "--json" in sys.argv[1:]:
        print(json.dumps(figures, indent=2))
        return
    for name, value in figures.items():
        shown = f"{len(value)}: {', '.join(value)}" if isinstance(value, list) else value
        print(f"{name.replace('_', ' ')}: {shown}")


if __name__ == "__main__":
    main()
