"""The one error type the CLI turns into a one-line message and a non-zero exit."""

from __future__ import annotations

from collections.abc import Sequence

from personae.credentials import hide_credentials


class PersonaeError(RuntimeError):
    """A problem the user can fix: says what is wrong and what to do about it.

    The CLI prints ``str(error)`` on one line and exits with ``exit_code``; no traceback
    reaches the user. Library callers get an ordinary exception they can catch. A
    ``RuntimeError`` because the LangGraph server (``langgraph dev``, Studio, the HTTP API)
    shows the message of the exception classes it allows (``RuntimeError`` among them) and
    replaces every other one with "An internal error occurred". The problem never shows a
    URL's user and password (:func:`~personae.credentials.hide_credentials`): CI logs keep it.
    """

    exit_code = 2

    def __init__(self, problem: str, fix: str | None = None) -> None:
        self.problem = problem = hide_credentials(problem)
        self.fix = fix
        super().__init__(f"{problem}; {fix}" if fix else problem)


class ConfigurationError(PersonaeError):
    """A setting is missing or malformed (model string, API key, URL)."""


class InputError(PersonaeError):
    """A user-supplied input (file, name, position) is unusable."""


def check_choice(value: str, allowed: Sequence[str], what: str) -> str:
    """``value`` if it is one of ``allowed``; otherwise one line naming the choices."""
    if value not in allowed:
        raise InputError(f"unknown {what} {value!r}", f"use {', '.join(allowed)}")
    return value


class RemoteError(PersonaeError):
    """A remote service (LLM, search, wiki) failed after retries."""

    exit_code = 3


class RunLockedError(RemoteError):
    """Another run holds the key and this one was told not to wait (``--no-wait``).

    The key is a character, a memory or an index folder (:mod:`personae.run_lock`).
    """


class NothingUsableError(RemoteError):
    """Every item of a run degraded (or the one it cannot do without did): nothing to write.

    Raised instead of writing an empty output; the message names what failed.
    """

    def __init__(self, problem: str, fix: str | None = None) -> None:
        super().__init__(
            f"nothing usable left: {problem}",
            fix or "use a stronger model (PERSONAE_MODEL), or one that follows the JSON schema",
        )


class TooManyFailuresError(RemoteError):
    """More items degraded than ``--max-failures`` allows: the run stops early, resumable."""
