"""The benchmark's method steps run on a LangGraph server (``bookmarks bench --server URL``).

Same interface as :class:`~personae.graphs.bookmarks.step_checkpoints.StepCheckpoints`, so the
benchmark runner, its judge, its records and its reports are the local run's: only where the
step runs changes. Each step is a run of the method's graph (``bookmarks``, ``vanilla``, ``ricl``,
``eta``: the assistants of ``langgraph.json``) in its own thread
(:mod:`personae.server_runs`); the server's checkpointer makes an interrupted step resume, and a
rerun reads a finished step back instead of running it. One artifact's steps still run one after
the other, in story order (they share its bookmark bank, on the server's disk).
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from personae.graphs.bookmarks.step_checkpoints import StepRun
from personae.resources import AsyncResources
from personae.server_runs import ServerRuns, context_payload

PATH_FIELDS = ("storyline_path", "memory_dir")
"""Context fields holding paths: sent absolute, so a server with another working directory
finds the same files."""
STEP_OUTPUT = ("action", "grounding", "stats")
"""What the runner reads of a step's output."""


class ServerSteps(AsyncResources):
    """Run (or read back) each method step in its own thread on the server at ``url``."""

    def __init__(self, url: str, out_dir: Path) -> None:
        self.runs = ServerRuns(url, scope=f"bench:{out_dir.resolve()}")

    async def enter(self, stack: AsyncExitStack) -> None:
        """Connect to the server; leaving closes the client."""
        await stack.enter_async_context(self.runs)

    async def invoke(
        self, graph: Any, payload: Any, context: Any, *, fresh: bool = False
    ) -> StepRun:
        """One step of ``graph`` on the server; its output as the local step returns it."""
        fields = context_payload(context)
        for name in PATH_FIELDS:
            if fields.get(name):
                fields[name] = str(Path(fields[name]).resolve())
        run = await self.runs.run(graph.name, dict(payload), fields)
        output = {key: run.values[key] for key in STEP_OUTPUT if key in run.values}
        return StepRun(output, run.resumed)
