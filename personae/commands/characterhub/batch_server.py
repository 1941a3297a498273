"""``personae profile --batch FILE --server URL``: each character profiled on a LangGraph server.

Each row is a run of the ``profiler`` graph in its own thread (:mod:`personae.server_runs`),
``--concurrency`` at a time; its state comes back and is written into ``OUT/<key>/`` exactly as a
local run writes it (``profile.json``, ``profile.md``, ``card.json``). A rerun skips characters
whose files exist, reads finished threads back instead of running them again, and resumes an
interrupted one from the server's checkpoint. ``--force`` drops a character's thread first.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.commands.characterhub.batch import BatchReport, BatchRow, run_batch

if TYPE_CHECKING:
    from personae.graphs.characterhub.state import ProfilerContext
    from personae.server_runs import ServerRuns

Progress = Callable[[str], None]


async def profile_rows_on_server(
    rows: list[BatchRow], context: ProfilerContext, args: argparse.Namespace, progress: Progress
) -> BatchReport:
    """Profile ``rows`` on the server at ``args.server``; write each as a local run would."""
    from personae.memory.characterhub.profile_store import paths_for
    from personae.server_runs import ServerRuns

    async with ServerRuns(args.server, scope=f"profile:{args.out.resolve()}") as runs:
        return await run_batch(
            rows,
            lambda row: _profile_remote(row, context, args, progress, runs),
            done=lambda row: (
                not args.force
                and paths_for(args.out, row.name, row.franchise).profile_json.exists()
            ),
            concurrency=args.concurrency,
        )


async def _profile_remote(
    row: BatchRow,
    context: ProfilerContext,
    args: argparse.Namespace,
    progress: Progress,
    runs: ServerRuns,
) -> None:
    import asyncio

    from personae.memory.characterhub.profile_store import write_profile
    from personae.server_runs import context_payload

    fields = context_payload(context)
    if fields.get("cache_dir"):  # the server's working directory may differ
        fields["cache_dir"] = str(Path(fields["cache_dir"]).resolve())
    payload: dict[str, Any] = {"name": row.name, "franchise": row.franchise, "wiki_url": row.wiki}
    progress(f"{row.name}: running on {runs.url}")
    run = await runs.run("profiler", payload, fields, fresh=args.force)
    if run.reused:
        progress(f"{row.name}: already profiled on the server; writing the files")
    elif run.resumed:
        progress(f"{row.name}: resumed the interrupted server run")
    await asyncio.to_thread(
        write_profile,
        args.out,
        run.values,
        name=row.name,
        franchise=row.franchise,
        excluded_urls=context.exclude_urls,
        card_system_prompt=args.card_system_prompt,
    )
