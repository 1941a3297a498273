"""Runs on a LangGraph server (``--server URL``): one thread per unit of work, resumable.

``profile --batch``, ``bookmarks bench`` and ``arcane eval`` can hand their units (a character,
a benchmark instance step, an evaluation unit) to a LangGraph server (``langgraph dev``, a
LangGraph Platform deployment) through ``langgraph-sdk`` instead of running them in the
process, and write what comes back into the same files the local run writes. Each unit gets its
own thread whose id is derived from the scope (the output folder), the graph, the input and the
run context, so a rerun of the same command finds its threads again:

- a thread whose last run finished is not run again: its state is read back;
- a thread whose run is still going (the client was killed, the server was not) is joined;
- a thread whose run failed or was interrupted is run again, from its last checkpoint when the
  server kept one (its ``next`` nodes), else from the input.

The context is sent whole, as this process filled it from its flags and settings (models,
server URL, sampling, paths), so the server runs what the local run would; API keys are never
sent (the server reads its own environment). Paths in the context and input are the server's:
a server on another machine needs the files at the same paths. Concurrency is the caller's
(each command bounds its units as it does locally).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import uuid
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from personae.errors import RemoteError
from personae.resources import AsyncResources
from personae.urls import web_url

THREAD_NAMESPACE = uuid.UUID("5f0e4a52-2d6b-4f4e-9c51-7d1c2a9b8e30")
"""Namespace of the deterministic thread ids (uuid5)."""
FINISHED = "idle"
"""A thread's status once its last run ended without error or interrupt."""


def context_payload(context: Any) -> dict[str, Any]:
    """A run context's fields as the JSON a server run takes (keys never are fields)."""
    if not dataclasses.is_dataclass(context):
        return dict(context or {})
    fields = {f.name: getattr(context, f.name) for f in dataclasses.fields(context)}
    loaded: dict[str, Any] = json.loads(json.dumps(fields, default=str))
    return loaded


def thread_for(
    scope: str, graph: str, payload: Mapping[str, Any], context: Mapping[str, Any]
) -> str:
    """The thread id of one unit: the same scope, graph, input and context give the same id."""
    recipe = {"scope": scope, "graph": graph, "input": payload, "context": context}
    return str(uuid.uuid5(THREAD_NAMESPACE, json.dumps(recipe, sort_keys=True, default=str)))


@dataclass(frozen=True)
class ServerRun:
    """What one unit's thread holds once its run is done."""

    values: dict[str, Any]
    """The thread's state (every channel, not only the graph's output)."""
    thread_id: str
    reused: bool
    """The thread had finished before this call: nothing was run."""
    resumed: bool
    """The thread's run had failed or been interrupted and was resumed from its checkpoint."""


class ServerRuns(AsyncResources):
    """A client of one LangGraph server for one command's units (an async context manager)."""

    def __init__(self, url: str, scope: str) -> None:
        self.url = web_url(url, "--server", "http://127.0.0.1:2024").rstrip("/")
        self.scope = scope
        self._client: Any = None

    async def enter(self, stack: AsyncExitStack) -> None:
        """Connect to the server (a one-line error when it cannot be reached); leaving closes."""
        from langgraph_sdk import get_client

        # No read timeout: joining a run waits as long as the run takes.
        client = get_client(url=self.url, api_key=None, timeout=(10.0, None, 30.0, 10.0))
        stack.callback(setattr, self, "_client", None)
        stack.push_async_callback(client.aclose)
        try:
            await client.assistants.search(limit=1)
        except Exception as error:  # noqa: BLE001 - connection, HTTP and protocol errors alike
            raise self._unreachable(error) from None
        self._client = client

    def _unreachable(self, error: BaseException) -> RemoteError:
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        return RemoteError(
            f"the LangGraph server at {self.url} cannot be reached ({reason})",
            "start it (uv run langgraph dev) or fix --server",
        )

    async def run(
        self,
        graph: str,
        payload: Mapping[str, Any],
        context: Mapping[str, Any],
        *,
        fresh: bool = False,
        unit: Mapping[str, Any] | None = None,
    ) -> ServerRun:
        """Run ``graph`` on ``payload`` with ``context`` in the unit's thread, or read it back.

        ``fresh`` deletes the unit's thread first (``--force``): it runs again from the input.
        ``unit`` names the unit in the thread id instead of ``payload`` when two payloads are
        one unit (a character's spellings: its folder key); a thread an earlier version
        keyed by ``payload`` is then still found (one look-up when the unit has no thread).

        Raises:
            RemoteError: the server is unreachable, or the run ended in an error (the message
                names the thread; rerunning the command runs it again).
        """
        client = self._client
        thread_id = thread_for(self.scope, graph, unit or payload, context)
        legacy = thread_for(self.scope, graph, payload, context) if unit is not None else None
        try:
            if fresh:
                for dropped in (thread_id, legacy):
                    with contextlib.suppress(Exception):  # no such thread yet: nothing to drop
                        if dropped is not None:
                            await client.threads.delete(dropped)
            elif legacy is not None and legacy != thread_id:
                thread_id = await self._found(thread_id, legacy)
            thread = await client.threads.create(
                thread_id=thread_id,
                if_exists="do_nothing",
                graph_id=graph,
                metadata={"personae_scope": self.scope, "graph": graph},
            )
            status = thread.get("status")
            if status == FINISHED and thread.get("values"):
                state = await client.threads.get_state(thread_id)
                if not state.get("next"):
                    return ServerRun(dict(state["values"] or {}), thread_id, True, False)
            resumed = False
            running = await self._running(thread_id) if status == "busy" else None
            if running is None:
                state = await client.threads.get_state(thread_id)
                resumed = bool(state.get("next"))
                run = await client.runs.create(
                    thread_id,
                    graph,
                    input=None if resumed else dict(payload),
                    context=dict(context),
                    multitask_strategy="reject",
                )
                running = run["run_id"]
            await client.runs.join(thread_id, running)
            finished = await client.runs.get(thread_id, running)
            state = await client.threads.get_state(thread_id)
        except RemoteError:
            raise
        except Exception as error:  # noqa: BLE001 - connection, HTTP and protocol errors alike
            raise self._unreachable(error) from None
        if finished.get("status") != "success":
            raise RemoteError(
                f"{graph} run {running} on thread {thread_id} ended with status "
                f"{finished.get('status')!r} on {self.url}{_error_of(state)}",
                "see the server's log; rerun the command to run it again",
            )
        return ServerRun(dict(state.get("values") or {}), thread_id, False, resumed)

    async def _found(self, thread_id: str, legacy: str) -> str:
        """``thread_id``, or ``legacy`` when only that thread exists on the server."""
        import httpx

        for candidate in (thread_id, legacy):
            try:
                await self._client.threads.get(candidate)
            except httpx.HTTPStatusError as error:
                if error.response.status_code != 404:  # not "no such thread": say so
                    raise
                continue
            return candidate
        return thread_id

    async def _running(self, thread_id: str) -> str | None:
        """The run still going on ``thread_id`` (a killed client's), if any."""
        for status in ("running", "pending"):
            runs = await self._client.runs.list(thread_id, status=status, limit=1)
            if runs:
                return str(runs[0]["run_id"])
        return None


def _error_of(state: Mapping[str, Any]) -> str:
    """The error a failed run left in its thread's tasks, as ``: message``."""
    for task in state.get("tasks") or []:
        if task.get("error"):
            return ": " + " ".join(str(task["error"]).split())[:300]
    return ""
