"""The MCP server's profile runs: one per character, at most ``--max-jobs`` at once.

MCP clients call ``profile_character`` whenever their model decides to, several at once and
the same character twice. A call for a character (its folder key: ``Shin``, ``shin`` and
``Shin `` are one) that has a run going awaits that run and returns its profile; a new run
takes one of ``--max-jobs`` slots (:mod:`personae.run_queue`) or waits in line, saying its
place to the caller's progress. The runner's own lock (:mod:`personae.run_lock`) keeps a CLI or
a web page on the same folder from paying for the character again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from personae.progress import Progress, quiet
from personae.run_queue import RunQueue, ordinal

if TYPE_CHECKING:
    from personae.graphs.characterhub.state import ProfilerContext
    from personae.mcp.options import ServerOptions
    from personae.runners.characterhub import Profile


class ProfileRuns:
    """The server's running profiles by character key, behind one queue."""

    def __init__(self, options: ServerOptions, context: ProfilerContext) -> None:
        self.options = options
        self.context = context
        self.queue = RunQueue(options.max_jobs)
        self.running: dict[str, asyncio.Task[Profile]] = {}

    async def profile(
        self, name: str, franchise: str | None, *, progress: Progress = quiet
    ) -> Profile:
        """``name``'s profile: from the run already going for its key, or from a new one.

        The run is shielded: a client that gives up does not stop it for the others who joined
        it (it finishes, and its profile is saved for the next call).
        """
        from personae.memory.characterhub.profile_store import profile_key

        key = profile_key(name, franchise)
        task = self.running.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(
                self._run(key, name, franchise, progress), name=f"profile {key}"
            )
            self.running[key] = task
            task.add_done_callback(lambda _: self.running.pop(key, None))
        else:
            progress(f"{name}: joined the run already profiling {key}")
        return await asyncio.shield(task)

    async def _run(self, key: str, name: str, franchise: str | None, progress: Progress) -> Profile:
        from personae import profile_character

        if self.queue.full:
            place = len(self.queue.waiting) + 1
            progress(f"queued: {ordinal(place)} in line ({self.queue.limit} profiles run at once)")
        async with self.queue.slot(key):
            return await profile_character(
                name,
                franchise=franchise,
                wiki=self.options.wiki,
                out=self.options.profiles_dir,
                context=self.context,
                progress=progress,
            )
