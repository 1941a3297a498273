"""Resumable acting steps: a killed step reruns only the work that was in flight.

Why: one BOOKMARKS step makes tens of paid LLM calls (propose, match, one sync per active
bookmark, each several calls, then act). Without a checkpoint a step killed in its sync fan-out
starts over. LangGraph's SQLite checkpointer already keeps what a rerun needs: every finished
node's update, and within the sync superstep the writes of every finished ``Send`` task (its
synced bookmark), saved as each task completes (``durability="sync"``: written before the run
goes on, so a ``kill -9`` right after cannot lose it). A rerun of the same step resumes from
there: finished tasks are not run again, the in-flight ones are. Inside an in-flight task,
the calls that had already answered are not paid again either: the step's models journal every
answer (:mod:`personae.answer_store`, in ``<memory>/.step_calls/<thread>/``), so the rerun pays
only for the calls that were in flight when the step died.

The step's thread is keyed by the graph, its input (storyline, character, position) and every
context field that changes what the step computes (models, server, sampling, method settings),
so the same command resumes and any other settings start fresh. A finished step deletes its
thread, so the file only ever holds interrupted steps. Checkpoints live beside the memory they
refer to (a resumed sync reads its bookmark from that bank): ``<memory>/.checkpoints.sqlite``,
or the Postgres schema standing for that file when ``PERSONAE_CHECKPOINTER`` names a database
(:mod:`personae.checkpointers`).
Without a memory folder (an in-process bank that dies with the process) there is nothing to
resume against, and no checkpoint is kept.

One module for ``personae bookmarks act`` and ``personae bookmarks bench``: the benchmark runs every
method's graph through it, so an interrupted benchmark loses neither finished instances
(``results.jsonl``) nor the finished part of the instance that was running.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import shutil
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.resources import AsyncResources

if TYPE_CHECKING:
    from personae.settings import Settings

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = ".checkpoints.sqlite"
"""Interrupted steps' checkpoints, in the memory folder."""
JOURNAL_DIR = ".step_calls"
"""Interrupted steps' journaled LLM answers, one sub-folder per step, in the memory folder."""

UNKEYED_FIELDS = frozenset({"llm_retry_seconds", "call_journal"})
"""Context fields that never change a step's result (how long to retry, where answers are
journaled), left out of the key."""


def step_thread(graph_name: str, payload: Mapping[str, Any], context: Any) -> str:
    """The checkpoint thread of one step: readable prefix plus a hash of all it depends on."""
    fields = (
        {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
        if dataclasses.is_dataclass(context)
        else {}
    )
    keyed = {k: v for k, v in fields.items() if k not in UNKEYED_FIELDS}
    recipe = {"graph": graph_name, "input": dict(payload), "context": keyed}
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True, default=str).encode()).hexdigest()
    who = "-".join(str(payload.get(k, "")) for k in ("character", "position"))
    return f"{graph_name}:{who}:{digest[:16]}"


@dataclass(frozen=True)
class StepRun:
    """A step's output and whether it resumed an interrupted run."""

    output: dict[str, Any]
    resumed: bool


class StepCheckpoints(AsyncResources):
    """Run graph steps with an SQLite checkpoint in ``folder`` (``None``: plain runs).

    ``settings`` (the run context's) say where checkpoints go (``PERSONAE_CHECKPOINTER``);
    ``None`` reads them from the environment when the saver opens (a library caller's edge).

    Use as an async context manager; one open saver serves every step of a run (the benchmark
    runs many, concurrently: the saver serialises its writes).
    """

    def __init__(self, folder: Path | None, settings: Settings | None = None) -> None:
        self.path = None if folder is None else folder / CHECKPOINT_FILE
        self.settings = settings
        self.journals = None if folder is None else folder / JOURNAL_DIR
        self._saver: Any = None

    async def enter(self, stack: AsyncExitStack) -> None:
        """Open the SQLite saver (none without a folder); leaving closes it."""
        if self.path is not None:
            from personae.checkpointers import open_checkpointer
            from personae.settings import load_settings

            self.path.parent.mkdir(parents=True, exist_ok=True)
            stack.callback(setattr, self, "_saver", None)  # after closing: plain runs again
            manager = open_checkpointer(self.path, self.settings or load_settings())
            self._saver = await stack.enter_async_context(manager)

    async def invoke(
        self, graph: Any, payload: Mapping[str, Any], context: Any, *, fresh: bool = False
    ) -> StepRun:
        """Run (or resume) one step of ``graph``; ``fresh`` drops an interrupted run first.

        A step that fails (an exception, not a kill) keeps its checkpoint too: the rerun after
        the cause is fixed pays only for what had not finished.
        """
        if self._saver is None:
            return StepRun(await graph.ainvoke(dict(payload), context=context), False)
        thread = step_thread(graph.name, payload, context)
        config: Any = {"configurable": {"thread_id": thread}}
        app = graph.copy(update={"checkpointer": self._saver})
        journal = self._journal(thread)
        if fresh:
            await self._forget(thread, journal)
        resumed = bool((await app.aget_state(config)).next)
        if resumed:
            logger.info("resuming interrupted step %s", thread)
        from personae.run_context import (
            LLMContext,
        )  # here: `personae bookmarks act` imports this module

        if isinstance(context, LLMContext):  # same settings: the environment is not read again
            context = context.replaced(call_journal=str(journal))
        output = await app.ainvoke(
            None if resumed else dict(payload), config, context=context, durability="sync"
        )
        await self._forget(thread, journal)
        return StepRun(dict(output), resumed)

    def _journal(self, thread: str) -> Path:
        assert self.journals is not None
        return self.journals / hashlib.sha256(thread.encode()).hexdigest()[:24]

    async def _forget(self, thread: str, journal: Path) -> None:
        """Drop a step's checkpoints and journal (it finished, or a fresh run was asked)."""
        await self._saver.adelete_thread(thread)
        await asyncio.to_thread(_remove_journal, journal)


def _remove_journal(journal: Path) -> None:
    """Delete a step's journal, and the journals' folder once no step has one."""
    shutil.rmtree(journal, ignore_errors=True)
    with contextlib.suppress(OSError):
        journal.parent.rmdir()  # fails while another interrupted step keeps its journal
