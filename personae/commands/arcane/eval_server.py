"""``personae arcane eval BOOK... --server URL``: each evaluation unit on a LangGraph server.

The units are planned here, as the local run plans them (every (probe, mode) of each role-play
model not yet in ``OUT/results.jsonl``); each is one run of the ``arcane_eval`` graph in its own
thread (:mod:`personae.server_runs`), ``--concurrency`` at a time, with an empty ``out_dir`` so
the server writes nothing and returns the unit's record, which is appended here: the same
``results.jsonl``, ``summary.json`` and reports as a local run. A rerun skips the units in
``results.jsonl``, reads finished threads back and resumes interrupted ones.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from personae.commands.arcane import cache_note
from personae.degraded import print_degraded


def evaluate_on_server(
    args: argparse.Namespace, context: Any, role_players: list[str], modes: list[str]
) -> None:
    """Evaluate every model's pending units on ``args.server``; append their records."""
    from personae.evals.arcane.eval_graph import plan

    for model in role_players:
        run_context = context.replaced(model=model)
        state: Any = {"novels": args.books, "modes": modes, "limit": args.limit}
        state["out_dir"] = str(args.out)
        units, skipped = plan(state, run_context)
        usage = asyncio.run(_run_units(args, run_context, units))
        calls = sum(u.get("llm_calls", 0) for u in usage)
        hits = sum(u.get("cache_hits", 0) for u in usage)
        sys.stderr.write(
            f"• {model}: {len(units)} units evaluated on {args.server}, {skipped} already done, "
            f"{calls} LLM calls{cache_note(hits)}\n"
        )
        missing = sum(u.get("degraded", 0) for u in usage)
        print_degraded(missing, {"judgments_missing": missing})


async def _run_units(
    args: argparse.Namespace, context: Any, units: list[Any]
) -> list[dict[str, int]]:
    from personae.fanout import gather_all
    from personae.files import append_jsonl
    from personae.server_runs import ServerRuns, context_payload

    fields = context_payload(context)
    for name in ("data_dir", "cache_dir"):
        if fields.get(name) and fields[name] != "none":  # the server's cwd may differ
            fields[name] = str(Path(fields[name]).resolve())
    fields["concurrency"] = 1  # one unit per thread; the units' concurrency is bounded here
    slots = asyncio.Semaphore(args.concurrency)
    usage: list[dict[str, int]] = []

    async def one(runs: ServerRuns, unit: Any) -> None:
        payload = {
            "novels": [unit["novel"]],
            "modes": [unit["mode"]],
            "limit": None,
            "out_dir": "",
            "probe_ids": [unit["probe"]["probe_id"]],
        }
        async with slots:
            run = await runs.run("arcane_eval", payload, fields)
        for record in run.values.get("records") or []:
            await asyncio.to_thread(append_jsonl, args.out / "results.jsonl", record)
            usage.append(dict(record.get("usage") or {}))

    async with ServerRuns(args.server, scope=f"arcane:{args.out.resolve()}") as runs:
        await gather_all(one(runs, unit) for unit in units)  # a failure cancels the rest
    return usage
