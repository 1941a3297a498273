"""The chapter-masked RAG index of a novel (ARCANE App. E): Chroma on disk, built once per novel.

Chunks are 1,500-character windows with 300 characters of overlap, cut **within** chapter
boundaries so every chunk belongs to exactly one chapter; each carries ``{chapter, idx,
start}`` metadata and every query filters ``chapter <= query_chapter``, so the RAG and
LifeChoice modes cannot retrieve text from after the point in the story being played.
Searched exactly in numpy up to :data:`~personae.memory.exact.EXACT_MAX` chunks (a whole novel
is far fewer: the mask is applied to one product over every chunk), above that with HNSW at
:data:`~personae.memory.chroma.SEARCH_EF` and Chroma's filter.
The store follows the project's settings like every other Chroma store: embedded on disk in
the novel's folder, or on the server of ``CHROMA_HOST``; vectors of the ``PERSONAE_EMBEDDINGS``
embedding (both read at the edge and passed in).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import ChromaError

from personae.memory.arcane.novel_store import Novel
from personae.memory.chroma import (
    ensure_search_ef,
    open_chroma,
    open_collection,
    safe_collection_name,
    search_configuration,
)
from personae.memory.embeddings import DEFAULT_EMBEDDINGS, TextEmbedding, open_embedding
from personae.memory.exact import (
    EXACT_MAX,
    Snapshot,
    nearest,
    note_write,
    snapshot,
    store_file,
    unchanged_since,
)
from personae.settings import Settings

MAX_QUERY_CHARS = 24_000
"""Query text embedded at most (about 6,000 tokens: under text-embedding-3-small's 8,191)."""


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


def collection_name(novel: Novel, embedding: TextEmbedding) -> str:
    """``arcane.<novel>-<text digest>.chunks.<embedding>``, made safe for Chroma.

    The digest of the chapters' text keeps two different imports of one slug apart on a shared
    Chroma server (``CHROMA_HOST``); the embedding part keeps each model's vectors apart.
    """
    digest = str(novel.meta.get("chapters_sha256", ""))[:8]
    scope = f"{novel.slug}-{digest}" if digest else novel.slug
    return safe_collection_name(f"arcane.{scope}.chunks.{embedding.key or 'hashing'}")


class ChunkIndex:
    """The Chroma collection of a novel's chunks; queries are always chapter-masked.

    Vectors come from the injected :class:`~personae.memory.embeddings.TextEmbedding` (the
    project's ``PERSONAE_EMBEDDINGS`` setting), passed to Chroma explicitly, and the collection
    records which embedding made them (a collection of another embedding is refused).
    """

    def __init__(
        self, collection: Collection, embedding: TextEmbedding, client: ClientAPI | None = None
    ) -> None:
        self.collection = collection
        self.client = client
        """The collection's client (its folder tells whether the store changed since)."""
        self._database = store_file(client) if client is not None else None
        self.embedding = embedding
        self._seen: tuple[Any, int] = (None, 0)
        self._rows: tuple[Snapshot | None, list[Chunk], np.ndarray] = (None, [], np.zeros(0))
        """The snapshot last searched, its chunks and their chapters."""
        """What the last search saw: the store's stamp and the chunk count."""

    @classmethod
    def open(
        cls,
        novel: Novel,
        embedding: TextEmbedding | None = None,
        settings: Settings | None = None,
    ) -> ChunkIndex:
        """The index in ``<novel folder>/chroma``, or on the Chroma server of ``settings``.

        Creates the collection if needed (``personae arcane prepare``); readers use
        :meth:`find`, which never creates one.
        """
        chosen = embedding or open_embedding(DEFAULT_EMBEDDINGS)
        client = open_chroma(novel.folder / "chroma", settings)
        collection = open_collection(
            client, collection_name(novel, chosen), chosen, {}, search_configuration()
        )
        ensure_search_ef(collection)  # an index made before SEARCH_EF existed
        return cls(collection, chosen, client)

    @classmethod
    def find(
        cls,
        novel: Novel,
        embedding: TextEmbedding | None = None,
        settings: Settings | None = None,
    ) -> ChunkIndex | None:
        """The built index, or None when ``prepare`` has not made it (nothing is created)."""
        chosen = embedding or open_embedding(DEFAULT_EMBEDDINGS)
        on_server = settings is not None and bool(settings.chroma_host)
        if not on_server and not (novel.folder / "chroma").exists():
            return None
        client = open_chroma(novel.folder / "chroma", settings)
        name = collection_name(novel, chosen)
        if name not in {c.name for c in client.list_collections()}:
            return None
        return cls.open(novel, chosen, settings)

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
                vectors = self.embedding.embed([c.text for _, c in new])
                self.collection.add(
                    ids=[i for i, _ in new],
                    embeddings=vectors,
                    documents=[c.text for _, c in new],
                    metadatas=[
                        {"chapter": c.chapter, "idx": c.idx, "start": c.start} for _, c in new
                    ],
                )
                added += len(new)
        if added:
            note_write()
        return added

    def search(self, query: str, *, max_chapter: int, k: int = 6) -> list[Chunk]:
        """The ``k`` nearest chunks from chapters ``<= max_chapter`` (the no-future mask).

        The query is cut to :data:`MAX_QUERY_CHARS` (spec default 27: embedding input truncated
        to the embedder's limit; LifeChoice queries with five chapter summaries).
        """
        if k <= 0:
            return []
        stamp, unchanged = unchanged_since(self._database, self._seen[0])
        if not unchanged:
            self._seen = (stamp, len(self))
        total = self._seen[1]
        if total == 0:
            return []
        vector = self.embedding.embed([query[:MAX_QUERY_CHARS]])
        if total <= EXACT_MAX:
            try:
                return self._exact(vector[0], max_chapter, k, total)
            except ChromaError:  # this client cannot read what another process wrote
                pass
        found = self.collection.query(
            query_embeddings=vector,
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

    def _exact(self, vector: np.ndarray, max_chapter: int, k: int, total: int) -> list[Chunk]:
        """:meth:`search` by one product over the chunks of chapters ``<= max_chapter``.

        Chunks are only ever added (stable ids, never rewritten), so the count is the
        snapshot's version (:mod:`personae.memory.exact`); its chunks and chapter column are
        made once per snapshot.
        """
        rows = snapshot(self.collection, str(total))
        if self._rows[0] is not rows:
            chunks = [
                Chunk(
                    int(cast(int, m["chapter"])),
                    int(cast(int, m["idx"])),
                    int(cast(int, m["start"])),
                    d,
                )
                for m, d in zip(rows.metadatas, rows.documents, strict=True)
            ]
            chapters = np.array([c.chapter for c in chunks], dtype=np.int64)
            self._rows = (rows, chunks, chapters)
        _, chunks, chapters = self._rows
        return [chunks[row] for row, _ in nearest(rows, vector, k, chapters <= max_chapter)]
