"""Build a novel's role-play inputs once: T34 chapter summaries and the chapter-masked RAG index.

Summaries are appended to ``summaries.jsonl`` one chapter at a time (a killed run resumes at
the first chapter without one) and every call goes through the answer cache. The chunk index
adds only missing chunks, so rerunning costs nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from personae.agents.arcane.summarizer import summary_messages
from personae.answer_store import AnswerStore
from personae.files import append_jsonl
from personae.llm import LLMUsage, call_text
from personae.memory.arcane.novel_chunks import ChunkIndex
from personae.memory.arcane.novel_store import Novel
from personae.memory.arcane.records import load_summaries
from personae.memory.embeddings import TextEmbedding
from personae.settings import Settings


@dataclass(frozen=True)
class PrepareReport:
    """What ``prepare_novel`` did."""

    summarized: int
    already_summarized: int
    chunks_added: int
    chunks_total: int
    usage: LLMUsage
    unsummarized: list[int]
    """Chapters whose summary came back empty: not written, asked again by the next run."""


async def prepare_novel(
    novel: Novel,
    *,
    model: BaseChatModel,
    model_name: str,
    cache: AnswerStore,
    embedding: TextEmbedding | None = None,
    chunk_chars: int = 1500,
    chunk_overlap: int = 300,
    concurrency: int = 4,
    chroma: Settings | None = None,
    progress: Callable[[str], None] | None = None,
) -> PrepareReport:
    """Summarize every chapter without a summary, then index the chunks.

    ``embedding`` (None: hashing) and ``chroma`` (None: embedded Chroma in the novel's folder)
    are the store settings the caller read at its edge. A chapter whose summary comes back
    empty twice degrades: nothing is written for it (``unsummarized``), the next run asks again.
    A failing call cancels the summaries not started yet.
    """
    folder: Path = novel.folder
    done = await asyncio.to_thread(load_summaries, folder)
    todo = [i for i in range(1, novel.count + 1) if i not in done]
    usage = LLMUsage()
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(idx: int) -> tuple[int, str, LLMUsage]:
        async with gate:
            text = await asyncio.to_thread(lambda: novel.chapter(idx).text)
            messages = summary_messages(novel=novel.title, chapter_idx=idx, chapter_text=text)
            summary, used = await call_text(model, messages, store=cache, model_name=model_name)
            if not summary.strip():  # an empty answer, cached: ask once more past the cache
                summary, again = await call_text(model, messages)
                used = used + again
            return idx, summary.strip(), used

    tasks = [asyncio.ensure_future(one(i)) for i in todo]
    unsummarized: list[int] = []
    try:
        for finished in asyncio.as_completed(tasks):
            idx, summary, used = await finished
            usage = usage + used
            if not summary:
                unsummarized.append(idx)
                usage = usage + LLMUsage(degraded=1)
                continue
            row = {"chapter": idx, "summary": summary, "model": model_name}
            await asyncio.to_thread(append_jsonl, folder / "summaries.jsonl", row)
            if progress:
                progress(f"summary of chapter {idx}")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    index = await asyncio.to_thread(ChunkIndex.open, novel, embedding, chroma)
    added = await asyncio.to_thread(index.build, novel, chunk_chars, chunk_overlap)
    summarized = len(todo) - len(unsummarized)
    return PrepareReport(summarized, len(done), added, len(index), usage, sorted(unsummarized))
