"""Runners: one module per paper job; each runner does a whole job and returns a typed result.

A paper's main jobs live in ``<paper>.py``, its further ones in ``<paper>_<part>.py``
(evaluation, export, votes).

A runner runs, resumes and writes its files; it never prints. The CLI, the MCP server and apps
call these (``from personae import ...``).
"""

from collections.abc import Callable

Progress = Callable[[str], None]
"""Where a runner reports a step (one line, no newline); the CLI writes it to stderr."""


def quiet(line: str) -> None:
    """The default progress of every runner: nothing."""
