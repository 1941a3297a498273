"""A queue with a cap: at most N runs at once in a server, the rest wait in order.

The web page and the MCP server run profiles for whoever asks; twenty requests at once must not
mean twenty runs at once (each pays for a model and holds a connection). A run takes one of
``limit`` slots (:meth:`RunQueue.slot`); past that it waits, first come first served, and
:meth:`RunQueue.place` says where it stands (1: next to start), which the job page shows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from personae.errors import InputError

if TYPE_CHECKING:
    import asyncio

DEFAULT_MAX_JOBS = 2
"""Profiles a server runs at once (``--max-jobs``): two keep a small machine and its model
server busy without making every run wait for the others' calls."""


def check_max_jobs(value: int) -> int:
    """``--max-jobs``: at least 1.

    Raises:
        InputError: below 1.
    """
    if value < 1:
        raise InputError(f"--max-jobs is {value}; it must be at least 1", "pass 1 or more")
    return value


def ordinal(place: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``... ``11th``, ``21st``: a place in the queue."""
    suffix = "th" if 10 <= place % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(place % 10, "th")
    return f"{place}{suffix}"


class RunQueue:
    """At most ``limit`` runs hold a slot at once; the others wait in arrival order."""

    def __init__(self, limit: int = DEFAULT_MAX_JOBS) -> None:
        self.limit = check_max_jobs(limit)
        self.running: set[str] = set()
        self._waiting: list[tuple[str, asyncio.Future[None]]] = []

    def place(self, name: str) -> int | None:
        """``name``'s place in the queue (1: next to start), or None when it is not waiting."""
        names = [waiting for waiting, _ in self._waiting]
        return names.index(name) + 1 if name in names else None

    @property
    def full(self) -> bool:
        """A run asking now would wait (every slot taken, or others already in line)."""
        return len(self.running) >= self.limit or bool(self._waiting)

    @property
    def waiting(self) -> list[str]:
        """The waiting runs, next first."""
        return [name for name, _ in self._waiting]

    @asynccontextmanager
    async def slot(self, name: str) -> AsyncIterator[None]:
        """Hold one slot as ``name`` for the block, waiting in line for it if all are taken."""
        import asyncio

        if not self.full:
            self.running.add(name)
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append((name, turn))
            try:
                await turn
            except asyncio.CancelledError:
                self._waiting = [(n, f) for n, f in self._waiting if f is not turn]
                if turn.done() and not turn.cancelled():  # given the slot, then cancelled
                    self._leave(name)
                raise
        try:
            yield
        finally:
            self._leave(name)

    def _leave(self, name: str) -> None:
        """Free ``name``'s slot and give it to the first in line."""
        self.running.discard(name)
        while self._waiting and len(self.running) < self.limit:
            next_name, turn = self._waiting.pop(0)
            if not turn.done():
                self.running.add(next_name)
                turn.set_result(None)
