"""The one error type the CLI turns into a one-line message and a non-zero exit."""

from __future__ import annotations


class PersonaeError(Exception):
    """A problem the user can fix: says what is wrong and what to do about it.

    The CLI prints ``str(error)`` on one line and exits with ``exit_code``; no traceback
    reaches the user. Library callers get an ordinary exception they can catch.
    """

    exit_code = 2

    def __init__(self, problem: str, fix: str | None = None) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}; {fix}" if fix else problem)


class ConfigurationError(PersonaeError):
    """A setting is missing or malformed (model string, API key, URL)."""


class InputError(PersonaeError):
    """A user-supplied input (file, name, position) is unusable."""


class RemoteError(PersonaeError):
    """A remote service (LLM, search, wiki) failed after retries."""

    exit_code = 3
