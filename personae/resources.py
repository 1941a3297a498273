"""One way to hold async resources (a checkpointer, a server client) for an ``async with``.

Why: several runners and step runners are async context managers that open one or two things
on entry and must close them on exit, also when opening fails halfway. Written by hand, each
forwarded ``__aenter__``/``__aexit__`` to what it held; here that is one ``AsyncExitStack``.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any, Self


class AsyncResources:
    """Base of an async context manager whose :meth:`enter` opens what it holds on a stack.

    Leaving the ``async with`` closes everything entered, in reverse order; an :meth:`enter`
    that raises closes what it had entered before the error propagates.
    """

    _stack: AsyncExitStack
    """What :meth:`enter` entered (set on entry)."""

    async def enter(self, stack: AsyncExitStack) -> None:
        """Open what this object holds, entering each resource (and its reset) on ``stack``."""

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            await self.enter(stack)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._stack.__aexit__(*exc_info)
