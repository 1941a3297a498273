"""ARCANE's human validity votes (§3.3) as library calls: export the sheet, resume with the votes.

An eval-split arc build pauses before keeping its axes (a LangGraph interrupt in the novel's
checkpoints). ``personae arcane annotate-arcs BOOK --export SHEET.csv`` and apps call
:func:`export_vote_sheet` (every paused axis, three annotator rows each); ``--import
VOTES.csv`` calls :func:`resume_with_votes`, which checks every vote before resuming any build,
so a sheet with a missing axis or a bad cell changes nothing. Nothing here prints.
"""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.errors import InputError
from personae.progress import Progress, quiet
from personae.runners.arcane import CHECKPOINT_DB, ArcBuild

if TYPE_CHECKING:
    from personae.graphs.arcane.arc_build import ArcBuildContext
    from personae.settings import Settings

VOTE_COLUMNS = ("annotator", "validity", "novel_span", "importance", "confidence")
"""The columns annotators fill, after the axis's own (character, axis_id, ...)."""
ANNOTATORS = ("a1", "a2", "a3")
"""One sheet row per annotator per axis: the paper has three annotators vote on each axis."""
Votes = dict[tuple[str, str], dict[str, list[dict[str, Any]]]]
"""Votes by (character, axis_id): ``{axis_id: [vote, ...]}``, as the build's resume takes them."""


@dataclass(frozen=True)
class VoteSheet:
    """The written sheet and the axes on it."""

    path: Path
    axes: int


async def export_vote_sheet(book: str, sheet: Path, *, context: ArcBuildContext) -> VoteSheet:
    """Write the annotation sheet of every build of ``book`` waiting for votes (atomically).

    ``context`` names the data folder (``context.data_dir``) and the checkpoint settings; no
    model is asked.

    Raises:
        InputError: no build of ``book`` is waiting for votes.
    """
    import asyncio

    from personae.files import write_text_atomic
    from personae.memory.arcane.novel_store import open_novel

    novel = open_novel(Path(context.data_dir), book)
    async with _paused_builds(novel.folder, context.settings) as (_, waiting):
        rows = [row for _, axes in waiting for row in axes]
    if not rows:
        raise InputError(
            f"no arc build of {novel.slug} is waiting for votes", "build with --split eval first"
        )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[*rows[0].keys(), *VOTE_COLUMNS])
    writer.writeheader()
    for row in rows:
        for annotator in ANNOTATORS:
            writer.writerow({**row, "annotator": annotator})
    await asyncio.to_thread(write_text_atomic, sheet, buffer.getvalue())
    return VoteSheet(sheet, len(rows))


def read_votes(path: Path) -> Votes:
    """Votes by (character, axis_id) from a filled sheet; validity must be yes/no/true/false/1/0.

    Raises:
        InputError: the file is missing, or a validity cell is not yes/no (naming its line).
    """
    from personae.files import require_file

    require_file(path, "the votes sheet", "pass the sheet exported with --export")
    votes: Votes = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle), 2):
            flag = (row.get("validity") or "").strip().lower()
            if flag not in ("yes", "no", "true", "false", "1", "0"):
                raise InputError(
                    f"{path} line {number}: validity {row.get('validity')!r} is not yes/no",
                    "fill the validity column with yes or no",
                )
            vote: dict[str, Any] = {k: (row.get(k) or "").strip() for k in VOTE_COLUMNS}
            vote["validity"] = flag in ("yes", "true", "1")
            key = (row.get("character", ""), row.get("axis_id", ""))
            votes.setdefault(key, {}).setdefault(key[1], []).append(vote)
    return votes


async def resume_with_votes(
    book: str, votes: Votes, *, context: ArcBuildContext, progress: Progress = quiet
) -> list[ArcBuild]:
    """Resume every build of ``book`` waiting for votes with ``votes``; each build after it.

    Every waiting axis must have votes: that is checked for all builds before any resumes.

    Raises:
        InputError: no build is waiting, or an axis has no votes (nothing is resumed).
    """
    from langgraph.types import Command

    from personae.memory.arcane.novel_store import open_novel

    novel = open_novel(Path(context.data_dir), book)
    async with _paused_builds(novel.folder, context.settings) as (app, waiting):
        if not waiting:
            raise InputError(
                f"no arc build of {novel.slug} is waiting for votes", "build with --split eval"
            )
        answers = []
        for config, rows in waiting:
            character = rows[0]["character"]
            answer: dict[str, list[dict[str, Any]]] = {}
            for row in rows:
                answer.update(votes.get((character, row["axis_id"]), {}))
            missing = [r["axis_id"] for r in rows if r["axis_id"] not in answer]
            if missing:
                raise InputError(
                    f"no votes for {character}'s axes {missing}", "fill every axis of the sheet"
                )
            answers.append((config, character, answer))
        builds = []
        for config, character, answer in answers:
            progress(f"{character}: resuming the arc build with the votes")
            await app.ainvoke(Command(resume=answer), config, context=context)
            final = await app.aget_state(config)
            builds.append(ArcBuild(character, bool(final.interrupts), True, dict(final.values)))
    return builds


@asynccontextmanager
async def _paused_builds(
    folder: Path, settings: Settings
) -> AsyncIterator[tuple[Any, list[tuple[Any, list[dict[str, Any]]]]]]:
    """The arc-build graph on ``folder``'s checkpoints and every build paused for votes.

    Each paused build is (its config, its sheet rows). Without a checkpoint file there is no
    graph and no build (no file is made). One open serves the listing and the resumes.
    """
    from personae.checkpointers import checkpoints_exist, open_checkpointer
    from personae.graphs.arcane.arc_build import build_graph
    from personae.graphs.arcane.context import checkpoint_serde

    if not await checkpoints_exist(folder / CHECKPOINT_DB, settings):
        yield None, []
        return
    found = []
    async with open_checkpointer(
        folder / CHECKPOINT_DB, settings, serde=checkpoint_serde()
    ) as saver:
        app = build_graph(saver)
        threads = {
            str(c.config.get("configurable", {}).get("thread_id")) async for c in saver.alist(None)
        }
        for thread in sorted(threads):
            config: Any = {"configurable": {"thread_id": thread}}
            snapshot = await app.aget_state(config)
            for pending in snapshot.interrupts:
                found.append((config, list(pending.value["axes"])))
        yield app, found
