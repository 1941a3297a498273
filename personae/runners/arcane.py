"""ARCANE as library calls: import a novel, build arcs, act as of chapter N, evaluate.

The CLI (``personae arcane import``, ``build-arcs``, ``bookmarks act``, ``eval``, ``eval-perturb``,
``eval-report``), the MCP ``arcane_act`` tool and apps call these; nothing here prints (progress goes to the callback a
caller passes). Novels and arcs live in the data folder (``DATA/novels/<slug>/``); the run
contexts fill what they leave empty from the settings (``PERSONAE_DATA_DIR``, the models,
``PERSONAE_CACHE_DIR``, ``PERSONAE_EMBEDDINGS``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from personae.errors import InputError
from personae.files import check_writable_dir, parse_jsonl, require_file
from personae.runners import Progress, quiet

if TYPE_CHECKING:
    from personae.graphs.arcane.arc_build import ArcBuildContext
    from personae.graphs.arcane.roleplay import RoleplayContext
    from personae.tools.arcane.novel_text import Segmentation

CHECKPOINT_DB = ".checkpoints.sqlite"
"""The file in a novel's folder that checkpoints its arc builds, chapter by chapter."""


@dataclass(frozen=True)
class ImportedNovel:
    """A novel saved as numbered chapters."""

    title: str
    folder: Path
    """``DATA/novels/<slug>/`` with ``chapters.jsonl`` and ``meta.json``."""
    form: str
    """novel or play (the heading pattern that cut it)."""
    segmentation: Segmentation
    """The chapters and what the cleaning cut (front and back matter, contents entries)."""


def read_novel_source(path: Path, *, title: str | None, coser: bool) -> tuple[str, str, str]:
    """``(title, raw text, source description)`` of a plain-text novel or a CoSER record.

    Raises:
        InputError: the file is missing or not UTF-8, or ``title`` names no single CoSER record.
    """
    require_file(path, "the novel", "check the path")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not UTF-8 text", "convert it to UTF-8 first") from error
    if not coser:
        return title or path.stem.replace("_", " "), text, str(path)
    records = [row for _, row in parse_jsonl(text, str(path), "pass a CoSER books JSONL file")]
    titles = [str(r.get("title", "")) for r in records if isinstance(r, dict)]
    chosen = [r for r in records if isinstance(r, dict) and (title in (None, r.get("title")))]
    if len(chosen) != 1 or not isinstance(chosen[0].get("content"), str):
        raise InputError(
            f"--title must name one record of {path} (titles: {', '.join(titles) or 'none'})",
            'e.g. --title "Pride and Prejudice"',
        )
    return str(chosen[0]["title"]), chosen[0]["content"], f"{path}#{chosen[0]['title']}"


def import_novel(
    path: Path,
    *,
    data_dir: Path,
    title: str | None = None,
    coser: bool = False,
    chapter_pattern: str | None = None,
    start_marker: str | None = None,
    end_marker: str | None = None,
) -> ImportedNovel:
    """Clean and cut a novel into chapters and save them under ``data_dir/novels/<slug>/``.

    ``path`` is a UTF-8 plain-text novel, or with ``coser`` a CoSER books JSONL file whose
    record ``title`` names. The cleaning drops page artefacts, drop caps and a modern edition's
    front and back matter; ``start_marker`` / ``end_marker`` cut where the heuristics do not.
    """
    from personae.memory.arcane.novel_store import save_novel
    from personae.tools.arcane.novel_text import DEFAULT_PATTERNS, segment_novel

    name, raw, source = read_novel_source(path, title=title, coser=coser)
    if not name.strip():
        raise InputError("the title is empty", "pass --title")
    check_writable_dir(data_dir, "--data")
    segmentation = segment_novel(
        raw, chapter_pattern=chapter_pattern, start_marker=start_marker, end_marker=end_marker
    )
    form = "play" if segmentation.pattern == DEFAULT_PATTERNS[1] else "novel"
    folder = save_novel(
        data_dir,
        title=name.strip(),
        segmentation=segmentation,
        source=source,
        form=form,
        raw_sha256=hashlib.sha256(raw.encode()).hexdigest(),
    )
    return ImportedNovel(name, folder, form, segmentation)


@dataclass(frozen=True)
class ArcBuild:
    """One character's arc build as its checkpoint holds it after this call."""

    character: str
    waiting_for_votes: bool
    """An eval-split build paused for human validity votes (``personae arcane annotate-arcs``)."""
    ran: bool = True
    """False when the build was already waiting for votes: nothing ran."""
    values: dict[str, Any] = field(default_factory=dict)
    """The build's state: ``arcs`` kept, ``dropped`` and ``flags`` lines, ``degraded`` items,
    ``usage`` (``llm_calls``, ``input_tokens``, ``output_tokens``, ``cache_hits``)."""


def arc_thread(slug: str, character: str) -> Any:
    """The checkpoint thread of one character's build."""
    return {"configurable": {"thread_id": f"arc_build:{slug}:{character}"}}


async def build_arcs(
    book: str,
    character: str,
    *,
    split: str = "train",
    context: ArcBuildContext,
    progress: Progress = quiet,
    keep_checkpoints: bool = False,
) -> ArcBuild:
    """Build (or resume) one character's arcs (T12-T16) of an imported novel.

    ``book`` is the novel's slug or title in ``context.data_dir``. The build is checkpointed
    per chapter in the novel's folder: a killed build resumes at its chapter; an eval-split
    build waiting for votes is left waiting. Every model call is cached, so a rerun pays only
    for what it has not asked yet. A finished build keeps only its last checkpoint (what a
    rerun reads) unless ``keep_checkpoints``.
    """
    from personae.checkpointers import open_checkpointer, prune_finished
    from personae.graphs.arcane.arc_build import build_graph
    from personae.graphs.arcane.context import checkpoint_serde
    from personae.memory.arcane.novel_store import open_novel

    novel = open_novel(Path(context.data_dir), book)
    folder, slug = novel.folder, novel.slug
    character = novel.check_character(character)

    config = arc_thread(slug, character)
    async with open_checkpointer(
        folder / CHECKPOINT_DB, context.settings, serde=checkpoint_serde()
    ) as saver:
        app = build_graph(saver)
        snapshot = await app.aget_state(config)
        payload: Any = {"novel": slug, "character": character, "split": split}
        if snapshot.next:
            if snapshot.interrupts:
                progress(
                    f"{character}: waiting for votes (personae arcane annotate-arcs {slug} --export)"
                )
                return ArcBuild(character, True, False, dict(snapshot.values))
            payload = None
            progress(f"{character}: resuming at chapter {snapshot.values.get('cursor', 1)}")
        stream = app.astream(
            payload, config, context=context, stream_mode="updates", durability="sync"
        )
        async for chunk in stream:
            for node, update in chunk.items():
                if node == "process_chapter" and isinstance(update, dict):
                    progress(f"{character}: chapter {int(update['cursor']) - 1} read")
        final = await app.aget_state(config)
        if not (keep_checkpoints or final.next or final.interrupts):
            await prune_finished(saver, config["configurable"]["thread_id"])
    return ArcBuild(character, bool(final.interrupts), True, dict(final.values))


@dataclass(frozen=True)
class ChapterAnswer:
    """A character's answer as of a chapter, and the prompt that produced it."""

    response: str
    chapter: int
    """The query chapter: nothing after it reached the prompt."""
    mode: str
    """The context mode (``arc``: the paper's method)."""
    system: str
    user: str
    context_chapters: tuple[int, ...] = ()
    """The chapters the context block drew on, each once, ascending (all <= ``chapter``):
    where the answer's knowledge came from (arc phases, summaries or retrieved chunks)."""


async def act_at_chapter(
    novel: str,
    character: str,
    chapter: int,
    scenario: str,
    *,
    question: str | None = None,
    mode: str = "arc",
    axis: str | None = None,
    context: RoleplayContext | None = None,
) -> ChapterAnswer:
    """Play ``character`` of an imported ``novel`` as they are at ``chapter`` (ARCANE).

    ``mode`` is the paper's context mode (``arc``: the character's arc as of the chapter;
    ``vanilla``, ``summary``, ``rag``, ``lifechoice``, ``timechara`` its baselines), ``axis``
    one arc axis instead of all the character's. ``question`` left out asks what they do.
    """
    from personae.graphs.arcane.roleplay import RoleplayContext, build_graph, scene_input

    run_context = context or RoleplayContext(arc_scope="axis" if axis else "character")
    payload = scene_input(novel, mode, character, chapter, scenario, question, axis)
    result = await build_graph().ainvoke(payload, context=run_context)
    return ChapterAnswer(
        str(result["response"]),
        int(result["query_chapter"]),
        mode,
        str(result.get("system", "")),
        str(result.get("user", "")),
        tuple(sorted({int(c) for c in result.get("context_chapters", [])})),
    )


# --- the evaluation (§4, App. E-G, K, N): run, resume, write results.jsonl and the reports ---
