"""The chapter-masked RAG index of a novel (ARCANE App. E): Chroma on disk, built once per novel.

Chunks are 1,500-character windows with 300 characters of overlap, cut **within** chapter
boundaries so every chunk belongs to exactly one chapter; each carries ``{chapter, idx,
start}`` metadata and every query filters ``chapter <= query_chapter``, so the RAG and
LifeChoice modes cannot retrieve text from after the point in the story being played.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chromadb.api import ClientAPI
from chromadb.api.types import EmbeddingFunction

from personae.memory.chroma import open_chroma, safe_collection_name
from personae.memory.embeddings import HashingEmbedding
from personae.memory.novel_store import Novel
from personae.settings import Settings


@dataclass(frozen=True)
class Chunk:
    """One window of one chapter."""

    chapter: int
    idx: int
    start: int
    text: str


def chunk_chapter(chapter: int, text: str, size: int = 1500, overlap: int = 300) -> list[Chunk]:
    """Windows of ``size`` characters advancing by ``size - overlap``, inside one chapter."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError("chunk size must be positive and overlap in [0, size)")
    step = size - overlap
    chunks: list[Chunk] = []
    start = 0
    while True:
        chunks.append(Chunk(chapter, len(chunks), start, text[start : start + size]))
        if start + size >= len(text):
            return chunks
        start += step


def collection_name(slug: str, embedding: str) -> str:
    """``arcane.<novel>.chunks.<embedding>`` made safe for Chroma."""
    return safe_collection_name(f"arcane.{slug}.chunks.{embedding}")


def embedding_function(spec: str, settings: Settings | None = None) -> EmbeddingFunction[Any]:
    """``hashing`` (offline, default in tests) or ``openai:<model>`` (e.g. text-embedding-3-small)."""
    if spec == "hashing":
        return HashingEmbedding()
    provider, _, name = spec.partition(":")
    if provider == "openai" and name:
        from chromadb.utils.embedding_functions import OpenAIEmbeddingFunction

        return OpenAIEmbeddingFunction(
            api_key=(settings.openai_api_key if settings else None) or "not-needed",
            model_name=name,
            api_base=settings.openai_base_url if settings else None,
        )
    from personae.errors import ConfigurationError

    raise ConfigurationError(
        f"unknown embedding {spec!r}", "use hashing or openai:text-embedding-3-small"
    )


class ChunkIndex:
    """The Chroma collection of a novel's chunks; queries are always chapter-masked."""

    def __init__(self, client: ClientAPI, slug: str, embedding: str, function: Any) -> None:
        self.collection = client.get_or_create_collection(
            collection_name(slug, embedding),
            embedding_function=function,
            metadata={"hnsw:space": "cosine"},
        )

    @classmethod
    def open(
        cls, folder: Path, slug: str, embedding: str = "hashing", settings: Settings | None = None
    ) -> ChunkIndex:
        """The index stored in ``folder/chroma`` (or on the Chroma server of ``settings``)."""
        client = open_chroma(folder / "chroma", settings)
        return cls(client, slug, embedding, embedding_function(embedding, settings))

    def __len__(self) -> int:
        return int(self.collection.count())

    def build(self, novel: Novel, size: int = 1500, overlap: int = 300) -> int:
        """Index every chapter (ids are stable, so a rerun adds only what is missing)."""
        added = 0
        for idx in range(1, novel.count + 1):
            chunks = chunk_chapter(idx, novel.chapter(idx).text, size, overlap)
            ids = [f"c{c.chapter}_{c.idx}" for c in chunks]
            have = set(self.collection.get(ids=ids, include=[])["ids"])
            new = [(i, c) for i, c in zip(ids, chunks, strict=True) if i not in have]
            if new:
                self.collection.add(
                    ids=[i for i, _ in new],
                    documents=[c.text for _, c in new],
                    metadatas=[
                        {"chapter": c.chapter, "idx": c.idx, "start": c.start} for _, c in new
                    ],
                )
                added += len(new)
        return added

    def search(self, query: str, *, max_chapter: int, k: int = 6) -> list[Chunk]:
        """The ``k`` nearest chunks from chapters ``<= max_chapter`` (the no-future mask)."""
        if len(self) == 0 or k <= 0:
            return []
        found = self.collection.query(
            query_texts=[query],
            n_results=k,
            where={"chapter": {"$lte": max_chapter}},  # type: ignore[dict-item]
            include=["documents", "metadatas"],
        )
        documents = (found.get("documents") or [[]])[0]
        metadatas = (found.get("metadatas") or [[]])[0]
        chunks = [
            Chunk(int(m["chapter"]), int(m["idx"]), int(m["start"]), str(d))  # type: ignore[arg-type]
            for d, m in zip(documents, metadatas, strict=True)
        ]
        return [c for c in chunks if c.chapter <= max_chapter]
