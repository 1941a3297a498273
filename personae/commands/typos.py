"""A mistyped command or flag: the closest choice of that level, for a one-line error.

Only the standard library is imported here: this runs for every argument error.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence


def visible_flags(parser: argparse.ArgumentParser) -> list[str]:
    """The long flags ``parser``'s ``--help`` shows (but ``--help`` and ``--verbose``)."""
    return [
        flag
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
        if flag.startswith("--") and flag not in ("--help", "--verbose")
    ]


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
