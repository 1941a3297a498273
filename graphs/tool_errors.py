"""How the graphs' LangChain tools fail: as a message the calling model reads, never a raise.

A ReAct agent that calls ``profile_character`` with a name no wiki knows, or while the LLM
server is down, must get the reason back as the tool's answer (and may try another name); a
raised exception ends the agent's whole run instead (2 of 8 runs crashed that way).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec

from langchain_core.tools import ToolException

from personae.errors import PersonaeError

P = ParamSpec("P")


def errors_as_tool_messages(
    coroutine: Callable[P, Awaitable[str]],
) -> Callable[P, Awaitable[str]]:
    """``coroutine`` with every Personae error turned into a :class:`ToolException`.

    Build the tool with ``handle_tool_error=True``: LangChain then returns the one-line error
    (what is wrong and what to do) as the tool's answer.
    """

    @functools.wraps(coroutine)
    async def guarded(*args: P.args, **kwargs: P.kwargs) -> str:
        try:
            return await coroutine(*args, **kwargs)
        except PersonaeError as error:
            raise ToolException(str(error)) from None

    return guarded
