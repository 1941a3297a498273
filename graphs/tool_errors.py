"""How the graphs' LangChain tools fail: as a message the calling model reads, never a raise.

A ReAct agent that calls ``profile_character`` with a name no wiki knows, or while the LLM
server is down, must get the reason back as the tool's answer (and may try another name); a
raised exception ends the agent's whole run instead (2 of 8 runs crashed that way).

The reader is a model holding tools, not a person at a terminal: the message says what went
wrong and which tool to call next, by the tool's name. A fix written for the CLI (a
``personae ...`` command, a ``--flag``) is dropped: the agent can run neither (issue 35: the ask
tool told the agent to run ``personae amadeus index``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from typing import ParamSpec

from langchain_core.tools import ToolException

from personae.errors import InputError, PersonaeError

P = ParamSpec("P")
NextStep = Callable[[PersonaeError], str | None]
"""A tool's advice for one of its errors (naming the tool to call), or None for the default."""
CLI_ADVICE = re.compile(r"\bpersonae [a-z]|(?<![\w-])--[a-z]")
"""A fix meant for the command line: a ``personae`` command or a flag."""


def agent_fix(error: PersonaeError) -> str | None:
    """``error``'s own fix when an agent (or the person it reports to) can follow it.

    A command in parentheses is left out and the rest kept ("use a chapter between 1 and 4");
    a fix that is a command is dropped whole.
    """
    fix = re.sub(
        r"\s*\([^()]*\)",
        lambda m: "" if CLI_ADVICE.search(m.group()) else m.group(),
        error.fix or "",
    )
    return fix if fix and not CLI_ADVICE.search(fix) else None


def tool_message(error: PersonaeError, tool: str, next_step: NextStep | None = None) -> str:
    """One line for the calling model: the problem, then the tool to call next.

    Bad input is the caller's to fix: it calls ``tool`` again with other arguments. Anything
    else (a model server down, a missing setting) is the app's: the agent tells its user, and
    may call ``tool`` again later.
    """
    advice = next_step(error) if next_step else None
    if advice is None:
        fix = agent_fix(error)
        if isinstance(error, InputError):
            advice = (
                f"{fix}, then call {tool} again"
                if fix
                else f"call {tool} again with other arguments"
            )
        else:
            setup = f" ({fix})" if fix else ""
            advice = f"not the call's fault: tell the user{setup}, or call {tool} again later"
    return f"{error.problem}; {advice}"


def errors_as_tool_messages(
    tool: str, next_step: NextStep | None = None
) -> Callable[[Callable[P, Awaitable[str]]], Callable[P, Awaitable[str]]]:
    """Turn every Personae error of tool ``tool`` into a :class:`ToolException` (a decorator).

    The message is :func:`tool_message`'s: ``next_step`` gives the tool's own advice for the
    errors it knows. Build the tool with ``handle_tool_error=True``: LangChain then returns the
    one line as the tool's answer.
    """

    def decorate(coroutine: Callable[P, Awaitable[str]]) -> Callable[P, Awaitable[str]]:
        @functools.wraps(coroutine)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> str:
            try:
                return await coroutine(*args, **kwargs)
            except PersonaeError as error:
                raise ToolException(tool_message(error, tool, next_step)) from None

        return guarded

    return decorate
