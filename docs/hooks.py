"""MkDocs hooks: the reference pages' tables, generated from the code at build time.

Why: a default written by hand in the manual drifts from the code (the README once gave three
different judge defaults for one graph). A page asks for a table with a marker line,
``<!-- generated: cli -->`` or ``<!-- generated: settings -->``, and this hook replaces the
marker with text made from the parser (``personae.cli.build_parser``) or from
``personae/settings.py`` (:data:`~personae.settings.VARIABLES` and the :class:`Settings`
fields' defaults and docstrings). tests/test_docs.py imports the same functions.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell: one line, pipes and brackets escaped.

    A help text's ``[,wiki][,source]`` would otherwise read as a reference link.
    """
    text = " ".join(text.split()).replace("|", "\\|")
    return text.replace("[", "\\[").replace("]", "\\]")


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """The visible subcommands of ``parser`` (names shown in its help), in help order."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        shown = [choice.dest for choice in action._choices_actions]
        for name in shown:
            yield name, action.choices[name]


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every runnable command under ``parser``: its words, its parser and its one-line help."""
    helps = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    for name, child in _subcommands(parser):
        words = (*path, name)
        children = list(_subcommands(child))
        if children:
            yield from _leaves(child, words)
        else:
            yield words, child, str(helps.get(name, ""))


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    """One table row per argument of ``parser``: its spelling, default and help."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            continue
        name = ", ".join(action.option_strings) or (action.metavar or action.dest)
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 else default
        if isinstance(shown, (list, tuple)):
            shown = " ".join(str(value) for value in shown)
        help_text = formatter._expand_help(action) if action.help else ""
        rows.append(f"| `{_cell(str(name))}` | {_cell(str(shown))} | {_cell(help_text)} |")
    return rows


def cli_reference() -> str:
    """Every command's options, from the parser the ``personae`` console script builds."""
    from personae.cli import build_parser

    parser = build_parser()
    lines = ["Generated from the parser (`personae.cli.build_parser`) when the manual is built."]
    for words, command, help_text in _leaves(parser, ()):
        lines += ["", f"### `personae {' '.join(words)}`", ""]
        if help_text:
            lines += [_cell(help_text), ""]
        lines += ["```text", command.format_usage().strip(), "```", ""]
        rows = _option_rows(command)
        if rows:
            lines += ["| argument | default | what it does |", "|---|---|---|", *rows]
    return "\n".join(lines) + "\n"


def _settings_fields() -> dict[str, tuple[str, str]]:
    """Each :class:`Settings` field's default (as written in the source) and docstring."""
    tree = ast.parse((ROOT / "personae" / "settings.py").read_text(encoding="utf-8"))
    body = next(
        node.body
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == "Settings"
    )
    fields: dict[str, tuple[str, str]] = {}
    for statement, following in zip(body, [*body[1:], None], strict=True):
        if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
            continue
        default = ast.unparse(statement.value) if statement.value is not None else ""
        doc = ""
        if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
            doc = str(following.value.value)
        fields[statement.target.id] = (default, doc)
    return fields


def _default_value(expression: str) -> str:
    """A field's default as a user reads it (constants resolved from the settings module)."""
    import personae.settings as settings

    if not expression or expression == "None":
        return "unset"
    try:
        # A copy of the module's names: eval never writes into the settings module itself.
        value: Any = eval(expression, dict(vars(settings)))  # noqa: S307 - our own constants
    except Exception:  # noqa: BLE001 - shown as written when not a plain constant
        return f"`{expression}`"
    return f"`{value}`" if value not in ("", None) else "unset"


def settings_reference() -> str:
    """Every environment variable Personae reads, with its default and meaning."""
    from personae.settings import VARIABLES

    fields = _settings_fields()
    lines = [
        "Generated from `personae/settings.py` (`VARIABLES` and the `Settings` fields) when the "
        "manual is built.",
        "",
        "| variable | default | what it sets |",
        "|---|---|---|",
    ]
    for variable, field in VARIABLES.items():
        default, doc = fields[field]
        lines.append(f"| `{variable}` | {_cell(_default_value(default))} | {_cell(doc)} |")
    return "\n".join(lines) + "\n"


def judge_defaults() -> str:
    """Each evaluation's judge when neither ``--judge-model`` nor ``PERSONAE_JUDGE_MODEL`` names one."""
    from personae.evals.arcane.eval_graph import ArcaneEvalContext
    from personae.evals.bookmarks.bench import BenchModels

    rows = [
        ("`personae bookmarks bench`", f"`{BenchModels.default_judge}`", "the BOOKMARKS paper's"),
        (
            "`personae arcane eval`, the `arcane_eval` graph",
            f"`{ArcaneEvalContext.default_judge}`",
            "the ARCANE paper's (App. F), never the model under test",
        ),
        ("`personae characterhub eval`, the AMADEUS evaluations", "the strong model", ""),
    ]
    lines = [
        "Generated from the evaluations' own defaults (`BenchModels.default_judge`, "
        "`ArcaneEvalContext.default_judge`) when the manual is built.",
        "",
        "| evaluation | judge by default | why |",
        "|---|---|---|",
    ]
    lines += [f"| {what} | {judge} | {why} |" for what, judge, why in rows]
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "settings": settings_reference,
    "judges": judge_defaults,
}


def expand(markdown: str) -> str:
    """``markdown`` with every ``<!-- generated: NAME -->`` line replaced by its table."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated block {name!r}: one of {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: expand the generated blocks of each page."""
    return expand(markdown)
