"""`personae arcane prepare|prompt|act`: a novel's role-play inputs; a character as of a chapter.

``personae arcane prepare BOOK`` writes the T34 chapter summaries and the chapter-masked RAG
index (needed by the Summary, RAG and LifeChoice modes). ``personae arcane act BOOK --character
NAME --chapter N "SCENARIO" ["QUESTION"]`` answers as the character at chapter N with the Arc
context (or ``--mode``), the point-in-time use a storytelling app wants.

The flags fill the ARCANE run context, which takes what they leave out from the settings
(precedence in :mod:`personae.commands.models`): ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``,
``PERSONAE_MODEL`` (``--model``), ``PERSONAE_DATA_DIR`` (``--data``), ``PERSONAE_CACHE_DIR``
(answers cached under ``arcane/``), ``PERSONAE_EMBEDDINGS`` (``--embedding``), ``CHROMA_HOST`` /
``CHROMA_PORT`` (the chunk index on a Chroma server instead of the novel's folder).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from personae.commands.arcane import cache_note
from personae.commands.arcane.novel import add_data_flag, context_fields
from personae.degraded import print_degraded
from personae.errors import InputError

CHUNK_EMBEDDING_HELP = (
    "chunk embedding: hashing, local or openai:<model> (default: PERSONAE_EMBEDDINGS, else "
    "hashing; role-play needs the one the index was prepared with)"
)
MODE_NAMES = ("vanilla", "summary", "rag", "lifechoice", "timechara", "arc", "mixedarc", "archint")


def register(commands: Any) -> None:
    """Add `arcane prepare`, `arcane prompt` and `arcane act`."""
    from personae.commands.models import add_embedding_flag, add_model_flags

    prepare = commands.add_parser("prepare", help="chapter summaries (T34) and the RAG index")
    prepare.add_argument("book", help="book slug or title")
    add_embedding_flag(prepare, CHUNK_EMBEDDING_HELP)
    prepare.add_argument("--concurrency", type=int, default=4, help="summaries at once")
    add_data_flag(prepare)
    add_model_flags(prepare)
    prepare.set_defaults(handler=run_prepare)
    prompt = commands.add_parser("prompt", help="the exact role-play prompt of a probe phase")
    prompt.add_argument("book", help="book slug or title")
    prompt.add_argument("--probe", required=True, help="probe id (probes.jsonl)")
    prompt.add_argument("--phase", type=int, required=True, help="phase index")
    prompt.add_argument("--mode", default="arc", help=f"context mode: {', '.join(MODE_NAMES)}")
    add_embedding_flag(prompt, CHUNK_EMBEDDING_HELP)
    add_data_flag(prompt)
    add_model_flags(prompt)
    prompt.set_defaults(handler=run_prompt)
    act = commands.add_parser("act", help="answer as a character at chapter N")
    act.add_argument("book", help="book slug or title")
    act.add_argument("scenario", help="the situation")
    act.add_argument("question", nargs="?", help="the question (default: how they respond)")
    act.add_argument("--character", required=True, help="who answers")
    act.add_argument("--chapter", type=int, required=True, help="the point in the story")
    act.add_argument("--mode", default="arc", help=f"context mode: {', '.join(MODE_NAMES)}")
    act.add_argument("--axis", help="Arc mode: one axis id (default: all the character's)")
    add_embedding_flag(act, CHUNK_EMBEDDING_HELP)
    act.add_argument("--show-prompt", action="store_true", help="print the prompt too")
    add_data_flag(act)
    add_model_flags(act)
    act.set_defaults(handler=run_act)


def _progress(line: str) -> None:
    """One plain line on stderr (a terminal, or the log when it is not one)."""
    sys.stderr.write(f"• {line}\n")
    sys.stderr.flush()


def run_prepare(args: argparse.Namespace) -> int:
    """Summarize missing chapters and index the chunks; print what it cost."""
    import asyncio
    from pathlib import Path

    from personae.graphs.arcane.context import ChunkStoreContext
    from personae.graphs.arcane.prepare import prepare_novel
    from personae.memory.arcane.novel_store import open_novel

    if args.concurrency < 1:
        raise InputError("--concurrency must be at least 1", "pass 1 or more")
    context = ChunkStoreContext(embedding=args.embedding, **context_fields(args))
    novel = open_novel(Path(context.data_dir), args.book)
    model, model_name = context.model_for()  # no LLM or a bad spec fails here
    embedding = context.text_embedding()  # so does a missing server or package
    report = asyncio.run(
        prepare_novel(
            novel,
            model=model,
            model_name=model_name,
            cache=context.cache(),
            embedding=embedding,
            concurrency=args.concurrency,
            chroma=context.chroma_settings(),
            progress=lambda line: _progress(f"{novel.title}: {line}"),
        )
    )
    sys.stdout.write(
        f"{novel.title}: {report.summarized} chapters summarized "
        f"({report.already_summarized} already), {report.chunks_added} chunks indexed "
        f"({report.chunks_total} in all); {report.usage.calls} LLM calls, "
        f"{report.usage.tokens:,} tokens{cache_note(report.usage.cache_hits)}\n"
    )
    if report.unsummarized:
        chapters = ", ".join(map(str, report.unsummarized))
        sys.stdout.write(f"  no summary for chapter(s) {chapters}: rerun to ask again\n")
        sys.stdout.flush()
        print_degraded(len(report.unsummarized), {"chapters": len(report.unsummarized)})
    return 0


def roleplay_context(args: argparse.Namespace) -> Any:
    """The role-play run context of ``arcane act``'s flags; the settings fill the rest.

    The model is asked for here: no LLM or a bad spec fails before any work.
    """
    from personae.graphs.arcane.roleplay import RoleplayContext

    context = RoleplayContext(
        embedding=args.embedding,
        arc_scope="axis" if args.axis else "character",
        **context_fields(args),
    )
    context.llm("strong")
    return context


def run_act(args: argparse.Namespace) -> int:
    """Role-play one answer at ``--chapter`` and print it."""
    import asyncio

    from personae.runners.arcane import act_at_chapter

    if args.mode not in MODE_NAMES:
        raise InputError(f"unknown mode {args.mode!r}", f"use one of {', '.join(MODE_NAMES)}")
    context = roleplay_context(args)
    answer = asyncio.run(
        act_at_chapter(
            args.book,
            args.character,
            args.chapter,
            args.scenario,
            question=args.question,
            mode=args.mode,
            axis=args.axis,
            context=context,
        )
    )
    if args.show_prompt:
        sys.stdout.write(f"--- system ---\n{answer.system}\n--- user ---\n{answer.user}\n---\n")
    sys.stdout.write(answer.response + "\n")
    return 0


def run_prompt(args: argparse.Namespace) -> int:
    """Render the T31 prompt a probe phase gets in a mode; no role-play call is made.

    Only TimeChara calls a model (its experts produce the hint), so only it needs one.
    """
    import asyncio

    from langgraph.checkpoint.memory import InMemorySaver

    from personae.graphs.arcane.roleplay import RoleplayContext, RoleplayInput, builder

    if args.mode not in MODE_NAMES:
        raise InputError(f"unknown mode {args.mode!r}", f"use one of {', '.join(MODE_NAMES)}")
    context = RoleplayContext(embedding=args.embedding, **context_fields(args))
    if args.mode == "timechara":
        context.llm("strong")  # no LLM or a bad spec fails here, before any work
    payload: RoleplayInput = {
        "novel": args.book,
        "mode": args.mode,
        "probe_id": args.probe,
        "phase_idx": args.phase,
    }
    app = builder.compile(checkpointer=InMemorySaver(), interrupt_before=["act_in_character"])
    config: Any = {"configurable": {"thread_id": "prompt"}}
    asyncio.run(app.ainvoke(payload, config, context=context))
    values = app.get_state(config).values
    sys.stdout.write(f"--- system ---\n{values['system']}\n--- user ---\n{values['user']}\n")
    return 0
