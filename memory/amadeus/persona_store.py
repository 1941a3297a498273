"""AMADEUS persona index: one Chroma collection per (character, splitter, embedding).

The collection holds every chunk of one persona (document = ĉ_i, the text that is embedded)
and its manifest in the collection metadata: where the persona came from, its hash, l_max and
l_o, the embedding and its vector size. Re-indexing is incremental: chunk ids are content
hashes (:mod:`personae.memory.amadeus.persona_chunks`), so unchanged sections keep their ids and are
neither re-embedded nor rewritten; only chunks of edited, added or deleted sections move.

The embedding is the project's one setting, ``PERSONAE_EMBEDDINGS`` (``hashing``, ``local``,
``openai:<model>``; :mod:`personae.memory.embeddings`), resolved by the run's context (the
edge: CLI flags, a run's context dict) and injected here as a ``TextEmbedding``. It is
part of the collection name, so each embedding has its own index of a character and switching
the setting never mixes vectors; asking for a character indexed only with another embedding is
a one-line "embedding mismatch" error naming both. Vectors are computed here with the injected
:class:`~personae.memory.embeddings.TextEmbedding` and passed to Chroma, and their size is
checked against the stored one. Similarity is cosine (1 - cosine distance), searched exactly in
numpy up to :data:`~personae.memory.exact.EXACT_MAX` chunks (one product: faster than HNSW at
those sizes) and above that with HNSW at :data:`~personae.memory.chroma.SEARCH_EF` (top-30
recall 0.99 against exact search at 10,000 chunks). Chroma calls block: async callers run them
in a thread.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, cast

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import ChromaError

from personae.errors import InputError
from personae.memory.amadeus.persona_chunks import PersonaChunk, Splitter
from personae.memory.amadeus.persona_doc import PersonaDoc
from personae.memory.chroma import (
    ensure_search_ef,
    open_chroma,
    safe_collection_name,
    search_configuration,
)
from personae.memory.embeddings import HashingTextEmbedding, TextEmbedding, open_embedding
from personae.memory.exact import (
    EXACT_MAX,
    Snapshot,
    nearest,
    note_write,
    snapshot,
    store_file,
    unchanged_since,
)
from personae.process_caches import clears_on_reset

logger = logging.getLogger(__name__)

COLLECTION_PREFIX = "amadeus."
_BATCH = 256
_WRITE_BATCH = 4096
_CLIENTS: dict[str, ClientAPI] = {}
clears_on_reset("memory.amadeus.persona_store.clients", _CLIENTS.clear)
_CLIENTS_LOCK = threading.Lock()
_WRITE_LOCK = threading.RLock()


class ScoredChunk(NamedTuple):
    """A retrieved chunk with its rank and cosine similarity to the query.

    A named tuple, not a frozen dataclass: a query builds 30 of them, and a frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field) took 0.15 ms for 30 on the loaded
    machine, half an exact search of a 100-chunk persona; a named tuple takes a third of that.
    """

    id: str
    rank: int
    """0-based position in similarity order (Algorithm 1's C_sorted)."""
    similarity: float
    text: str
    """ĉ_i as stored (with H_i for ACTS)."""
    path: str
    """Section path joined with `` > ``."""
    ordinal: int


@dataclass(frozen=True)
class IndexStats:
    """What one (re-)index did."""

    collection: str
    l_max: int
    l_o: int
    chunks: int
    added: int
    deleted: int
    kept: int
    sections: int
    sections_new: int
    """Sections whose content hash was not stored (added or edited)."""
    sections_gone: int
    """Stored section hashes no longer in the document (deleted or edited)."""


def embedding_key(embedding: TextEmbedding) -> str:
    """The collection-name part of ``embedding`` (two embeddings never share one).

    ``hashing-384``, ``local-all-minilm-l6-v2``, ``openai-<model>``. Hashing keeps the ``hashing-<dimensions>`` name indexes had before the setting existed.
    """
    if isinstance(embedding, HashingTextEmbedding):
        return f"hashing-{embedding.dimensions}"
    return embedding.key


def open_client(memory_dir: str | None, chroma_host: str | None = None, port: int = 8000) -> Any:
    """One Chroma client per memory folder (or server) per process; ``None``: in memory."""
    folder = Path(memory_dir).resolve() if memory_dir else None  # one client per folder, any cwd
    key = f"http://{chroma_host}:{port}" if chroma_host else str(folder or ":memory:")
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            if chroma_host:
                from personae.settings import load_settings

                settings = load_settings({"CHROMA_HOST": chroma_host, "CHROMA_PORT": str(port)})
                client = open_chroma(None, settings)
            else:
                client = open_chroma(folder)
            _CLIENTS[key] = client
        return client


def collection_name(character: str, splitter: str, embedding: str) -> str:
    """``amadeus.<character>.<splitter>.<embedding>``, made Chroma-safe."""
    return safe_collection_name(f"{character}.{splitter}.{embedding}", prefix=COLLECTION_PREFIX)


def indexed_personas(client: ClientAPI) -> list[dict[str, Any]]:
    """The manifest of every persona collection in ``client``."""
    found = []
    for collection in client.list_collections():
        name = collection.name if hasattr(collection, "name") else str(collection)
        if not name.startswith(COLLECTION_PREFIX):
            continue
        metadata = dict(client.get_collection(name).metadata or {})
        if "character" in metadata:
            found.append({"collection": name, **metadata})
    return found


def find_persona(
    client: ClientAPI, character: str, splitter: Splitter, embedding: TextEmbedding
) -> dict[str, Any]:
    """The manifest of ``character``'s index (name matched case-insensitively).

    Raises:
        InputError: No such index; the message lists what is indexed and how to index.
    """
    personas = indexed_personas(client)
    wanted = character.strip().casefold()
    same = [p for p in personas if str(p["character"]).casefold() == wanted]
    key = embedding_key(embedding)
    exact = [p for p in same if p.get("splitter") == splitter and p.get("embedding") == key]
    if exact:
        return exact[0]
    same_splitter = [p for p in same if p.get("splitter") == splitter]
    if same_splitter:
        have = ", ".join(sorted(_spec_of(p) for p in same_splitter))
        raise InputError(
            f"embedding mismatch: {character} is indexed with {have}, not {embedding.spec} "
            f"({splitter} splitter)",
            f"set PERSONAE_EMBEDDINGS (or --embedding) to {_spec_of(same_splitter[0])}, or "
            f"re-index: personae amadeus index SOURCE --character {character!r} "
            f"--embedding {embedding.spec}",
        )
    if same:
        have = ", ".join(sorted(f"{p.get('splitter')}" for p in same))
        raise InputError(
            f"splitter mismatch: {character} is indexed with the {have} splitter, not {splitter}",
            f"pass --splitter {same[0].get('splitter')}, or re-index with --splitter {splitter}",
        )
    names = sorted({str(p["character"]) for p in personas})
    listed = f"indexed: {', '.join(names)}" if names else "nothing is indexed there yet"
    raise InputError(
        f"unknown character {character!r} ({listed})",
        "index a persona first: personae amadeus index SOURCE --character NAME --memory DIR",
    )


def _spec_of(manifest: Mapping[str, Any]) -> str:
    """The embedding setting a stored index was built with.

    Indexes written before the setting existed record only the key (``hashing-384``).
    """
    if manifest.get("embedding_spec"):
        return str(manifest["embedding_spec"])
    key = str(manifest.get("embedding"))
    return {"hashing-384": "hashing"}.get(key, key.replace("hashing-", "hashing:"))


class PersonaIndex:
    """The chunks of one persona under one splitter and embedding."""

    def __init__(
        self, client: ClientAPI, character: str, splitter: Splitter, embedding: TextEmbedding
    ) -> None:
        self.client = client
        self.character = character
        self.splitter = splitter
        self.embedding = embedding
        self.embedding_name = embedding_key(embedding)
        self.name = collection_name(character, splitter, self.embedding_name)
        self.collection: Collection = client.get_or_create_collection(
            self.name,
            embedding_function=None,
            configuration=cast(Any, search_configuration()),
            metadata={"character": character, "splitter": splitter},
        )
        ensure_search_ef(self.collection)  # an index made before SEARCH_EF existed
        self._database = store_file(client)
        self._seen: tuple[Any, str, int] = (None, "", 0)
        """What the last query saw: the store's stamp, the snapshot's version, the count."""
        self._rows: tuple[Snapshot | None, list[tuple[str, str, str, int]]] = (None, [])
        """The snapshot last searched and its chunks as ``(id, text, path, ordinal)``."""

    @property
    def manifest(self) -> dict[str, Any]:
        """The collection metadata: source, hash, l_max, l_o, embedding, dimensions."""
        fresh = self.client.get_collection(self.name)
        return dict(fresh.metadata or {})

    def count(self) -> int:
        """Chunks stored."""
        return int(self.collection.count())

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), _BATCH):
            batch = self.embedding.embed(list(texts[start : start + _BATCH]))
            vectors += [[float(x) for x in vector] for vector in batch]
        dims = self.manifest.get("dimensions")
        if vectors and dims and len(vectors[0]) != int(dims):
            raise InputError(
                f"embedding mismatch: {self.name} stores {dims}-dimensional vectors, "
                f"{self.embedding_name} gives {len(vectors[0])}",
                "use the embedding the persona was indexed with, or re-index it",
            )
        return vectors

    def _write_batch(self) -> int:
        """Records per write: Chroma refuses batches above its maximum (5,461 embedded)."""
        try:
            return max(1, min(_WRITE_BATCH, int(self.client.get_max_batch_size())))
        except Exception as error:  # a client without the call (older servers): the safe default
            logger.info("Chroma client gives no batch size, using the default: %s", error)
            return _WRITE_BATCH

    def sync(self, doc: PersonaDoc, chunks: Sequence[PersonaChunk]) -> IndexStats:
        """Make the collection hold exactly ``chunks``: add new ids, delete gone ones.

        Unchanged chunks are not re-embedded; their position metadata is refreshed only when
        it moved. Writing nothing for an unchanged document is the point.
        """
        with _WRITE_LOCK:
            stored = self.collection.get(include=["metadatas"])
            stored_meta = {
                chunk_id: dict(meta or {})
                for chunk_id, meta in zip(stored["ids"], stored["metadatas"] or [], strict=False)
            }
            wanted = {chunk.id: chunk for chunk in chunks}
            gone = [chunk_id for chunk_id in stored_meta if chunk_id not in wanted]
            new = [chunk for chunk in chunks if chunk.id not in stored_meta]
            moved = [
                chunk
                for chunk in chunks
                if chunk.id in stored_meta and stored_meta[chunk.id] != _metadata(chunk)
            ]
            step = self._write_batch()
            for start in range(0, len(gone), step):
                self.collection.delete(ids=gone[start : start + step])
            dimensions = None
            for start in range(0, len(new), step):
                batch = new[start : start + step]
                vectors = self._embed([chunk.text for chunk in batch])
                dimensions = len(vectors[0])
                self.collection.add(
                    ids=[chunk.id for chunk in batch],
                    documents=[chunk.text for chunk in batch],
                    embeddings=cast(Any, vectors),
                    metadatas=[_metadata(chunk) for chunk in batch],
                )
            for start in range(0, len(moved), step):
                batch = moved[start : start + step]
                self.collection.update(
                    ids=[chunk.id for chunk in batch], metadatas=[_metadata(c) for c in batch]
                )
            if gone or new or moved or self.manifest.get("sha256") != doc.sha256:
                self._write_manifest(doc, chunks, dimensions)
                note_write()
        old_sections = {str(meta.get("section_hash")) for meta in stored_meta.values()}
        new_sections = {section.section_hash for section in doc.sections}
        return IndexStats(
            collection=self.name,
            l_max=chunks[0].l_max if chunks else 0,
            l_o=chunks[0].l_o if chunks else 0,
            chunks=len(chunks),
            added=len(new),
            deleted=len(gone),
            kept=len(chunks) - len(new),
            sections=len(doc.sections),
            sections_new=len(new_sections - old_sections),
            sections_gone=len(old_sections - new_sections),
        )

    def _write_manifest(
        self, doc: PersonaDoc, chunks: Sequence[PersonaChunk], dimensions: int | None
    ) -> None:
        metadata = self.manifest
        metadata.update(
            character=doc.character,
            splitter=self.splitter,
            embedding=self.embedding_name,
            embedding_spec=self.embedding.spec,
            source=doc.source,
            source_kind=doc.source_kind,
            sha256=doc.sha256,
            l_max=chunks[0].l_max if chunks else 0,
            l_o=chunks[0].l_o if chunks else 0,
            chunks=len(chunks),
            sections=len(doc.sections),
        )
        if dimensions is not None:
            metadata["dimensions"] = dimensions
        self.collection.modify(metadata=metadata)

    def query(self, text: str, n_results: int) -> list[ScoredChunk]:
        """The ``n_results`` chunks most similar to ``text``, best first.

        Up to :data:`~personae.memory.exact.EXACT_MAX` chunks by one product over all of them
        (exact, and faster than HNSW there), above that with Chroma's HNSW.
        """
        if n_results < 1:
            return []
        rows = self._small_snapshot()
        if rows is not None:
            return self._exact(rows, text, n_results)
        total = self.count()
        if total == 0:
            return []
        vector = self._embed([text])[0]
        found = self.collection.query(
            query_embeddings=cast(Any, [vector]),
            n_results=min(n_results, total),
            include=["documents", "metadatas", "distances"],
        )
        ids = found["ids"][0]
        documents = (found["documents"] or [[]])[0]
        metadatas = (found["metadatas"] or [[]])[0]
        distances = (found["distances"] or [[]])[0]
        return [
            ScoredChunk(
                id=chunk_id,
                rank=rank,
                similarity=1.0 - float(distance),
                text=str(document),
                path=str((meta or {}).get("path", "")),
                ordinal=int(cast(int, (meta or {}).get("ordinal", 0))),
            )
            for rank, (chunk_id, document, meta, distance) in enumerate(
                zip(ids, documents, metadatas, distances, strict=True)
            )
        ]

    def _small_snapshot(self) -> Snapshot | None:
        """Every chunk, when the index holds at most :data:`EXACT_MAX` (else None).

        The snapshot's version is the manifest, which every change of the chunks rewrites
        (hash, l_max, l_o, counts), and the count; both are read again only when the store
        may have changed since (:func:`~personae.memory.exact.unchanged_since`).
        """
        stamp, unchanged = unchanged_since(self._database, self._seen[0])
        if not unchanged:
            total = self.count()
            version = json.dumps([total, self.manifest], sort_keys=True, default=str)
            self._seen = (stamp, version, total)
        _, version, total = self._seen
        if total > EXACT_MAX:
            return None
        try:
            return snapshot(self.collection, version)
        except ChromaError as error:  # this client cannot read what another process wrote
            logger.info("%s: searched with Chroma (%s)", self.name, error)
            return None

    def _exact(self, rows: Snapshot, text: str, n_results: int) -> list[ScoredChunk]:
        """:meth:`query` over ``rows`` (:mod:`personae.memory.exact`)."""
        if not rows.ids:
            return []
        vector = self.embedding.embed([text])[0]
        if len(vector) != rows.vectors.shape[1]:
            raise InputError(
                f"embedding mismatch: {self.name} stores {rows.vectors.shape[1]}-dimensional "
                f"vectors, {self.embedding_name} gives {len(vector)}",
                "use the embedding the persona was indexed with, or re-index it",
            )
        if self._rows[0] is not rows:
            self._rows = (rows, [_chunk_fields(rows, row) for row in range(len(rows.ids))])
        fields = self._rows[1]
        scored = []
        for rank, (row, distance) in enumerate(nearest(rows, vector, n_results)):
            chunk_id, text, path, ordinal = fields[row]
            scored.append(ScoredChunk(chunk_id, rank, 1.0 - distance, text, path, ordinal))
        return scored

    def all_chunks(self) -> list[tuple[str, str]]:
        """Every stored ``(id, text)`` in document order."""
        stored = self.collection.get(include=["documents", "metadatas"])
        rows = zip(
            stored["ids"], stored["documents"] or [], stored["metadatas"] or [], strict=False
        )
        ordered = sorted(rows, key=lambda row: int(cast(int, (row[2] or {}).get("ordinal", 0))))
        return [(chunk_id, str(document)) for chunk_id, document, _ in ordered]


def _chunk_fields(rows: Snapshot, row: int) -> tuple[str, str, str, int]:
    metadata = rows.metadatas[row]
    ordinal = int(cast(int, metadata.get("ordinal", 0)))
    return rows.ids[row], rows.documents[row], str(metadata.get("path", "")), ordinal


def _metadata(chunk: PersonaChunk) -> dict[str, str | int]:
    return {
        "path": " > ".join(chunk.path),
        "section_hash": chunk.section_hash,
        "ordinal": chunk.ordinal,
        "start": chunk.start,
        "l_max": chunk.l_max,
        "l_o": chunk.l_o,
    }


def open_persona_index(
    character: str,
    *,
    splitter: Splitter,
    embedding: str | TextEmbedding,
    memory_dir: str | None,
    chroma_host: str | None = None,
    chroma_port: int = 8000,
) -> PersonaIndex:
    """The existing index of ``character``; never creates one.

    Raises:
        InputError: The character is not indexed with this splitter and embedding ("unknown
            character", "embedding mismatch", "splitter mismatch").
    """
    function = open_embedding(embedding) if isinstance(embedding, str) else embedding
    client = open_client(memory_dir, chroma_host, chroma_port)
    manifest = find_persona(client, character, splitter, function)
    return PersonaIndex(client, str(manifest["character"]), splitter, function)
