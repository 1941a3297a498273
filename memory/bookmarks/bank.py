"""The bookmark bank: one Chroma collection per storyline version (its scope).

Why Chroma and why this layout: candidate search is "same type, already synced, same character
for behavioral ones, close in meaning", which is a ``where`` filter plus a vector query, and the
bank must survive restarts (embedded Chroma on disk) or live on a shared server (``CHROMA_HOST``).
Each record keeps its scope and position as flat metadata and the whole bookmark as JSON in one
metadata string, so a single ``upsert`` writes answer, position and memory together: a crash
leaves either the old or the new bookmark, never a mix. Each question's vector is stored once,
in the index files (the ``index`` layout, :data:`_IN_INDEX`); banks without files keep it in
the record's metadata (:data:`_IN_METADATA`), older ones as Chroma's embedding. Searches run in the in-process index (:mod:`.bank_index`), which a
process loads from files beside the collection (:mod:`.bank_index_file`), checked against the
write stamp the bank puts in the collection's metadata before every write.

Ids are ``bm-<n>`` from a counter in the collection's in-process index (shared by every bank
object on the collection, so threads never collide), started past both the largest stored id
and the counter older versions kept in the collection's metadata: a stored id is never reused; an
id handed out by a step that crashed before writing may be. Two processes writing the same
storyline's bank at once are not supported.

Writes are one stamp and one upsert each and read nothing from Chroma: the index holds every
record it can (recent ones in memory, the rest in its records file when the bank has files;
otherwise one Chroma read), which is what ``save`` merges with. Records stay bounded: a bookmark
keeps its latest :data:`HISTORY_KEPT` answer versions inline; older ones move, in chunks, to an
archive collection beside the bank, and :meth:`BookmarkBank.get` with ``at=`` brings back those
a reader at an old position needs. Nothing is dropped.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import logging
import re
import secrets
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import ChromaError

from personae.errors import InputError
from personae.files import write_json_atomic
from personae.memory.bookmarks.bank_index import (
    RECORDS_KEPT,
    BankIndex,
    IndexedBookmark,
    RecordFile,
    ScopeArrays,
    id_number,
    index_for,
    mark_stale,
    sorted_arrays,
)
from personae.memory.bookmarks.bank_index_file import Expected, IndexFile
from personae.memory.bookmarks.bookmark import AnswerVersion, Bookmark, BookmarkType
from personae.memory.bookmarks.lexical import lexical_filter
from personae.memory.chroma import embedded_name, open_chroma, open_collection, safe_collection_name
from personae.memory.embeddings import TextEmbedding, open_embedding
from personae.settings import DEFAULT_EMBEDDINGS, Settings

COLLECTION_PREFIX = "bookmarks-"
ARCHIVE_PREFIX = "bookmark-history-"
CANDIDATE_POOL = 50
"""Minimum vector-search pool before the lexical filter (``max(50, 10 * k)``)."""
HISTORY_KEPT = 32
"""Answer versions kept in a bookmark's record; older ones go to the archive in chunks."""
logger = logging.getLogger(__name__)

_COUNTER = "personae_next_id"
_VECTORS = "personae_vectors"
_IN_METADATA = "metadata"
"""Collections made from issue 19 to issue 30 keep each question's vector in the record's
metadata (``vector``, base64 float32) and give Chroma a 2-number placeholder as the embedding:
the bank never asks Chroma for a vector search (see :mod:`.bank_index`), and a real HNSW index
of 384 dimensions cost 220 MB of memory at 100,000 bookmarks as soon as a process read or wrote
one record, slowed every write and made reading the vectors back (a rebuild) 40 s. Banks without
index files (in memory, or on a Chroma server) are still made this way: Chroma is where a
process finds the vectors. Older collections keep their real embeddings and are read and
written as before."""
_IN_INDEX = "index"
"""Embedded banks made since issue 30 keep each vector once, in the index files beside the
collection (:mod:`.bank_index_file`); a record's metadata is its scope, position and whole JSON,
with no document. Why: Chroma indexes every metadata string in SQLite, so the base64 vector
(2 KB), stored in the table and again in the string index on mostly-empty overflow pages, and
the question kept three more times (document, its full-text index, a metadata key) made a
100,000-bookmark bank 1,178 MiB on disk. A vector is a function of its question: index files
lost or stale are rebuilt from the records, reusing the vectors of every question the stale
files still hold and embedding only the others. A bank made in the ``metadata`` layout is
rewritten into this one the first time a process opens it (:meth:`BookmarkBank._upgrade`)."""
PLACEHOLDER_GRAPH = {"hnsw": {"ef_construction": 8, "max_neighbors": 4}}
"""Chroma's HNSW graph of a bank's placeholders (set when a collection is made): as small as
Chroma allows, since the bank never searches it. With Chroma's defaults (a beam of 100, 16
links) inserting the placeholders was the part of an import that grew with the bank: a bare
collection of 60,000 records in writes of 5,000 took 0.82 s per 10,000 at the start and 1.38 s
at 50,000; with this graph 0.71-0.85 s throughout."""
_DROPPED = ("vector", "type", "character", "parent_id", "question")
"""Metadata keys the ``metadata`` layout kept and the ``index`` one does not (all in the record)."""
_STAMP = "personae_write_stamp"
"""Collection metadata changed before every write: the index files name the one they hold."""
INDEX_FOLDER = "bank-index"
"""Where, in the bank's memory folder, the index files live (:mod:`.bank_index_file`)."""
_ID = re.compile(r"^bm-(\d+)$")
_PAGE = 2000
_IMPORT_BATCH = 5000
"""Records per Chroma write in a bulk import. Each write also costs Chroma work that grows
with the collection (its vector segment and id maps are saved after every write: a bare
collection of 50,000 records took 1.9 s per 10,000 in writes of 1,000, 1.1 s in writes of
5,000), so fewer, larger writes keep the import near linear. Chroma's memory grows with the
batch; with the slim records of the ``index`` layout a 100,000-bookmark import stays under
500 MiB (a 5,000 batch cost 145 MB more when records carried their vectors)."""
_SEARCHES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bank-search")
"""Searches a step's questions side by side (the matrix products release the GIL)."""
_WRITE_LOCK = threading.RLock()
"""Serialises id reservation and read-check-write saves of every bank in this process."""


class BookmarkBank:
    """All bookmarks of one storyline, persisted in Chroma."""

    def __init__(
        self,
        client: ClientAPI,
        storyline: str,
        scope: str | None = None,
        *,
        embedding: TextEmbedding | None = None,
        index_dir: Path | None = None,
    ) -> None:
        """Open (or create) the collection of ``scope`` (default: the storyline's name).

        The graphs pass :attr:`Storyline.scope <personae.memory.bookmarks.storyline.Storyline.scope>`, so
        a changed storyline text gets a fresh bank. A bank created before scopes existed (named
        by the storyline alone) is simply not found: a new, empty one is created beside it.
        ``embedding`` (default ``hashing``) embeds the questions; each embedding has its own
        collection, and one holding another embedding's vectors is refused.
        ``index_dir`` keeps the in-process index on disk (:mod:`.bank_index_file`), so a new
        process loads it instead of reading every vector back from Chroma.
        """
        self.storyline = storyline
        self.client = client
        self.embedding = embedding or open_embedding(DEFAULT_EMBEDDINGS)
        name = safe_collection_name(
            embedded_name(scope or storyline, self.embedding), prefix=COLLECTION_PREFIX
        )
        made = name in {c.name for c in client.list_collections()}
        self.collection: Collection = open_collection(
            client,
            name,
            self.embedding,
            {
                "storyline": storyline,
                _COUNTER: 0,
                _VECTORS: _IN_INDEX if index_dir is not None else _IN_METADATA,
            },
            # Fixed at creation: only a new one gets it; a copy, since Chroma writes into it.
            None if made else {"hnsw": dict(PLACEHOLDER_GRAPH["hnsw"])},
        )
        self._layout = _layout(self.collection)
        self._bank_index: BankIndex | None = None
        self._file = (
            IndexFile(index_dir, self.collection.name, str(self.collection.id))
            if index_dir is not None
            else None
        )
        mark_stale(str(self.collection.id))
        if self._layout == _IN_METADATA and self._file is not None:
            logger.info("bookmark bank %s: storing each vector once", self.collection.name)
            self.upgrade()

    @classmethod
    def open(
        cls,
        storyline: str,
        path: Path | None,
        settings: Settings | None = None,
        *,
        scope: str | None = None,
        embedding: TextEmbedding | None = None,
    ) -> BookmarkBank:
        """Open the bank under ``path`` (embedded), on ``CHROMA_HOST``, or in memory (None).

        With ``settings.chroma_host`` set the bank lives on that Chroma server and ``path`` is
        ignored (the in-process index is then filled from the server once per process);
        otherwise it is an embedded Chroma database in ``path``, its index files beside it in
        ``path/bank-index``. ``path=None`` is Chroma's in-memory client, which is one per
        process: every ``open(name, None)`` in the process sees the same bank, so tests wanting
        isolation pass a temporary directory.
        """
        on_server = settings is not None and bool(settings.chroma_host)
        index_dir = path / INDEX_FOLDER if path is not None and not on_server else None
        client = open_chroma(path, settings)
        return cls(client, storyline, scope, embedding=embedding, index_dir=index_dir)

    def create(
        self,
        *,
        question: str,
        type: BookmarkType,
        character: str,
        answer: str = "",
        position: int = 0,
        parent_id: str | None = None,
        keyword: str | None = None,
    ) -> Bookmark:
        """Create and store a bookmark; the bank assigns its id (:meth:`new`, then a write)."""
        bookmark = self.new(
            question=question,
            type=type,
            character=character,
            answer=answer,
            position=position,
            parent_id=parent_id,
            keyword=keyword,
        )
        self._write([bookmark])
        return bookmark

    def new(
        self,
        *,
        question: str,
        type: BookmarkType,
        character: str,
        answer: str = "",
        position: int = 0,
        parent_id: str | None = None,
        keyword: str | None = None,
    ) -> Bookmark:
        """A new bookmark with a fresh id, not yet stored (:meth:`save_step` stores it).

        The first history entry is ``(position, answer)``: a derived bookmark starts from its
        parent's answer at the parent's position, a new one from ``""`` at the storyline start.
        A step creates its bookmarks this way and writes them once, synced, with the rest of
        the step's bookmarks.
        """
        if not question.strip():
            raise InputError("a bookmark needs a non-empty question", "ask something")
        if position < 0:
            raise InputError(f"bookmark position {position} is negative", "use a position >= 0")
        if parent_id is not None and self._index().get(parent_id) is None:
            raise KeyError(parent_id)
        return Bookmark(
            id=self._reserve_id(),
            question=question.strip(),
            type=BookmarkType(type),
            character=character,
            answer=answer,
            position=position,
            parent_id=parent_id,
            keyword=keyword,
            history=[AnswerVersion(position=position, answer=answer)],
        )

    def _reserve_id(self) -> str:
        return f"bm-{self._index().reserve()}"

    def _stored_counter(self) -> int:
        """The counter older versions of the bank kept in the collection's metadata."""
        stored = (self.collection.metadata or {}).get(_COUNTER, 0)
        return int(stored) if isinstance(stored, int | float | str) else 0

    def get(self, bookmark_id: str, *, at: int | None = None) -> Bookmark:
        """The stored bookmark; ``KeyError`` if unknown.

        With ``at``, archived answer versions a reader at position ``at`` needs are brought back
        into ``history``, so ``answer_at(at)`` is exact however far the bookmark has synced.
        """
        bookmark = self._index().record(bookmark_id)
        if bookmark is None:
            found = self.collection.get(ids=[bookmark_id], include=["metadatas"])
            if not found["ids"]:
                raise KeyError(bookmark_id)
            metadata = found["metadatas"][0] if found["metadatas"] else {}
            bookmark = _from_metadata(metadata)
            self._index().remember([(bookmark_id, str(metadata["record"]))])
        if (
            at is not None
            and bookmark.archived
            and (not bookmark.history or at < bookmark.history[0].position)
        ):
            bookmark.history = [*self._archived(bookmark.id), *bookmark.history]
        return bookmark

    def save(self, bookmark: Bookmark) -> None:
        """Write answer, position and memory in one upsert (never half-updated).

        A changed answer adds a history version valid from ``bookmark.position``; an answer
        changed twice at the same position replaces that position's version. A state bookmark
        synced over several chunks also records each chunk's answer (its transitions past the
        stored position), so "what was true at q" is exact between two saves too, not only
        at the saved positions. Positions only move forward: saving a bookmark behind its
        stored position raises ``ValueError``.
        On success ``bookmark.history`` is updated in place; on failure nothing is stored.
        """
        with _WRITE_LOCK:
            stored = self.get(bookmark.id)  # the index's copy: no Chroma read
            if bookmark.position < stored.position:
                raise ValueError(
                    f"{bookmark.id}: position {bookmark.position} is behind the stored "
                    f"{stored.position}; bookmarks only sync forward (reload it with get())"
                )
            updated = _merged(stored, bookmark)
            self._write([updated])
        bookmark.history, bookmark.archived = updated.history, updated.archived

    def save_step(
        self, bookmarks: list[Bookmark], *, created: Iterable[str] = (), at: int | None = None
    ) -> list[Bookmark]:
        """Store one step's synced bookmarks in a single upsert; the stored copies, in order.

        ``created`` names those made with :meth:`new` and never stored: their history starts
        from their own first version. A created id another bookmark took meanwhile (a step
        resumed from a checkpoint after a restart hands out ids again) gets a fresh id; one
        already stored as this very bookmark (the step was killed after its write) is updated.
        A bookmark another step synced further than this one is kept as stored and read back
        with the versions a reader at ``at`` needs (positions only move forward). Nothing is
        written for an empty list.
        """
        fresh = set(created)
        results: list[Bookmark | str] = []
        with _WRITE_LOCK:
            index = self._index()
            writes: dict[str, Bookmark] = {}
            for bookmark in bookmarks:
                row = index.get(bookmark.id)
                if bookmark.id in fresh and (row is None or not _same_creation(self, bookmark)):
                    if row is not None:
                        bookmark = bookmark.model_copy(update={"id": self._reserve_id()})
                    start = bookmark.model_copy(
                        update={"position": bookmark.history[0].position if bookmark.history else 0}
                    )
                    start.history = start.history[:1]
                    stored = start
                else:
                    stored = writes.get(bookmark.id) or self.get(bookmark.id)
                if bookmark.position < stored.position:
                    results.append(bookmark.id)  # kept as stored: read back below
                    continue
                writes[bookmark.id] = _merged(stored, bookmark)
                results.append(writes[bookmark.id])
            if writes:
                self._write(list(writes.values()))
        return [
            self.get(r, at=at) if isinstance(r, str) else writes[r.id].model_copy(deep=True)
            for r in results
        ]

    def _write(self, bookmarks: list[Bookmark], *, log: bool = True) -> None:
        """Store ``bookmarks``: a new write stamp, then Chroma, then the index and its log.

        The stamp changes first, so a crash anywhere after it leaves the index files behind
        the collection's stamp: the next process rebuilds them instead of trusting them.
        """
        vectors = self.embedding.embed([b.question for b in bookmarks])
        with _WRITE_LOCK:  # the index and Chroma change together
            index = self._index()
            before, stamp = index.stamp, self._new_stamp()
            self._archive_old_versions(bookmarks, vectors)
            layout = self._layout
            metadatas = [_metadata(b, v, layout) for b, v in zip(bookmarks, vectors, strict=True)]
            self.collection.upsert(
                ids=[b.id for b in bookmarks],
                documents=None if layout == _IN_INDEX else [b.question for b in bookmarks],
                embeddings=_placeholders([b.id for b in bookmarks]) if layout else vectors,
                metadatas=cast(Any, metadatas),
            )
            rows = [_indexed(b, v) for b, v in zip(bookmarks, vectors, strict=True)]
            records = index.reader() if self._file is not None else None
            places = records.append(str(m["record"]) for m in metadatas) if records else None
            index.put(rows, places, tidy=log)  # a bulk import sorts once, at its snapshot
            index.stamp = stamp
            kept = zip(bookmarks[-RECORDS_KEPT:], metadatas[-RECORDS_KEPT:], strict=True)
            index.remember((b.id, str(m["record"])) for b, m in kept)  # a bulk import: its last
            if self._file is not None and places is not None and log:
                if self._file.append(before, stamp, rows, places):
                    self._save_index(index)

    def _new_stamp(self) -> str:
        """Give the collection a new write stamp (its metadata, read back by every opener)."""
        stamp = secrets.token_hex(8)
        metadata = dict(self.collection.metadata or {})
        metadata[_STAMP] = stamp
        self.collection.modify(metadata=metadata)
        return stamp

    def _save_index(self, index: BankIndex) -> None:
        if self._file is not None:
            self._file.save(index, self.embedding.spec, str(self.collection.id))

    def _archive_old_versions(self, bookmarks: list[Bookmark], vectors: Any) -> None:
        """Move all but the latest :data:`HISTORY_KEPT` versions of long histories to the archive.

        Written before the records that drop them, so a crash leaves versions in both places,
        never in neither. Chunks are keyed by their first position: rewriting one is harmless.
        """
        rows: list[tuple[str, Bookmark, Any]] = []
        for bookmark, vector in zip(bookmarks, vectors, strict=True):
            if len(bookmark.history) > 2 * HISTORY_KEPT:
                old, bookmark.history = (
                    bookmark.history[:-HISTORY_KEPT],
                    bookmark.history[-HISTORY_KEPT:],
                )
                chunk = bookmark.model_copy(update={"history": old})
                rows.append((f"{bookmark.id}@{old[0].position}", chunk, vector))
                bookmark.archived = True
        if not rows:
            return
        archive = self._archive()
        ids = [row_id for row_id, _, _ in rows]
        archive.upsert(
            ids=ids,
            embeddings=(
                _placeholders(ids)
                if _holds_vectors_in_metadata(archive)
                else np.stack([vector for _, _, vector in rows])
            ),
            metadatas=[
                {
                    "bookmark": chunk.id,
                    "versions": json.dumps([v.model_dump() for v in chunk.history]),
                }
                for _, chunk, _ in rows
            ],
        )

    def _archive(self) -> Collection:
        return open_collection(
            self.client,
            safe_collection_name(self.collection.name, prefix=ARCHIVE_PREFIX),
            self.embedding,
            {"storyline": self.storyline, "bank": self.collection.name, _VECTORS: _IN_METADATA},
        )

    def _archived(self, bookmark_id: str) -> list[AnswerVersion]:
        """Every archived version of ``bookmark_id``, oldest first."""
        found = self._archive().get(where={"bookmark": bookmark_id}, include=["metadatas"])
        versions = [
            AnswerVersion.model_validate(v)
            for m in found["metadatas"] or []
            for v in json.loads(str(m["versions"]))
        ]
        return sorted(versions, key=lambda v: v.position)

    def _index(self) -> BankIndex:
        """This collection's in-process index (loaded or rebuilt on first use).

        Kept on the bank object once found, so searches never wait for a write's lock.
        """
        if self._bank_index is None or self._bank_index.stale:
            with _WRITE_LOCK:
                self._bank_index = index_for(str(self.collection.id), self._bring_up_to_date)
        return self._bank_index

    def _bring_up_to_date(self, index: BankIndex) -> None:
        """Make ``index`` hold what the collection holds now, the cheapest way that is exact.

        Unchanged since this process read it (same write stamp): nothing to do. Index files
        matching the collection: load them (seconds at 100,000 bookmarks). Otherwise rebuild
        from Chroma (every vector read back: a minute at 100,000) and write the files again.
        """
        fresh = self.client.get_collection(
            self.collection.name, embedding_function=self.embedding.chroma_function()
        )
        stored = (fresh.metadata or {}).get(_STAMP)
        stamp = str(stored) if stored is not None else None
        if stamp is not None and index.stamp == stamp:
            return
        if stamp is not None and self._file is not None:
            expected = Expected(str(self.collection.id), self.embedding.spec, stamp)
            if self._file.load(index, expected):
                index.next_number = max(index.next_number, self._stored_counter())
                return
        records = self._file.new_records() if self._file is not None else None
        scopes = self._scan_scopes(records, index)
        index.refill(scopes, self._stored_counter(), stamp, records)
        if stamp is None:  # a bank written before stamps, or a new one: give it one
            index.stamp = self._new_stamp()
        self._save_index(index)

    def upgrade(self) -> int:
        """Rewrite a bank of the ``metadata`` layout into the ``index`` one; records rewritten.

        The index (files included) first holds every vector, then each record's metadata drops
        its vector and the keys its JSON repeats, page by page, and the collection is marked
        ``index`` last. A crash part-way leaves a ``metadata`` bank some of whose records lack
        their vector: they are embedded again, and the next open finishes the upgrade. Chroma's
        SQLite file is then compacted (``VACUUM``) when nothing else holds it, so the space comes
        back at once. Nothing to do (0) for a bank already upgraded, one without index files, or
        one of real Chroma embeddings (made before issue 19).
        """
        if self._layout != _IN_METADATA or self._file is None:
            return 0
        with _WRITE_LOCK:
            self._index()  # every vector in the index, its files written
            done, offset = 0, 0
            while True:
                ids = self.collection.get(include=[], limit=_PAGE, offset=offset)["ids"]
                if ids:
                    dropped = cast(Any, [dict.fromkeys(_DROPPED) for _ in ids])
                    self.collection.update(ids=list(ids), metadatas=dropped)
                done += len(ids)
                if len(ids) < _PAGE:
                    break
                offset += _PAGE
            metadata = dict(self.collection.metadata or {})
            metadata[_VECTORS] = _IN_INDEX
            self.collection.modify(metadata=metadata)  # the same stamp: the files stay valid
            self._layout = _IN_INDEX
        _vacuum(self._file.folder.parent / "chroma.sqlite3")
        return done

    def _scan_scopes(
        self, records: RecordFile | None, known: BankIndex | None = None
    ) -> list[ScopeArrays]:
        """Every stored row, read page by page from Chroma, as sorted arrays per scope.

        Rows are gathered per scope as small page slices and copied once into each scope's
        final matrix, so the peak is about the vectors' size, not twice it. Their whole
        records go to ``records`` as they are read (when the index has files).
        """
        pieces: dict[str, _Pieces] = {}
        offset = 0
        while True:
            ids, metadatas, vectors = self._index_page(offset, known)
            by_scope: dict[str, list[int]] = {}
            for row, metadata in enumerate(metadatas):
                by_scope.setdefault(str(metadata["scope"]), []).append(row)
            places = (
                records.append(str(m["record"]) for m in metadatas)
                if records is not None
                else [(-1, 0)] * len(ids)
            )
            for scope, rows in by_scope.items():
                piece = pieces.setdefault(scope, _Pieces())
                piece.places += [places[r] for r in rows]
                piece.ids += [ids[r] for r in rows]
                piece.questions += [_question_of(metadatas[r]) for r in rows]
                piece.positions += [int(cast(int, metadatas[r]["position"])) for r in rows]
                piece.vectors.append(np.asarray(vectors, dtype=np.float32)[rows])
            if len(ids) < _PAGE:
                break
            offset += _PAGE
        scopes = []
        for scope in list(pieces):
            piece = pieces.pop(scope)
            positions = np.array(piece.positions, dtype=np.int64)
            numbers = np.array([id_number(i) for i in piece.ids], dtype=np.int64)
            order = np.lexsort((numbers, positions))
            matrix = np.concatenate(piece.vectors)
            piece.vectors.clear()
            arrays = sorted_arrays(
                scope,
                [piece.ids[i] for i in order],
                [piece.questions[i] for i in order],
                positions[order],
                numbers[order],
                matrix,
                order,
            )
            located = np.array(piece.places, dtype=np.int64).reshape(-1, 2)[order]
            scopes.append(
                dataclasses.replace(
                    arrays, offsets=located[:, 0].copy(), lengths=located[:, 1].copy()
                )
            )
            del matrix
        return scopes

    def _index_page(
        self, offset: int, known: BankIndex | None = None
    ) -> tuple[list[str], list[Mapping[str, Any]], Any]:
        """One page of ids, metadata and stored vectors.

        A collection of the ``index`` layout holds no vectors: each is taken from ``known`` (the
        stale index being rebuilt) when it holds the same question, else embedded again. One
        that keeps its vectors in the records' metadata is read in one call. One
        with real Chroma embeddings (made before) reads them too; a client that has been open
        while another process wrote the collection cannot read the embeddings it does not know
        ("Error finding id"): that page's questions are then embedded again (exactly the stored
        vectors: the embedding is the collection's).
        """
        if self._layout:
            page = self.collection.get(include=["metadatas"], limit=_PAGE, offset=offset)
            ids, metadatas = list(page["ids"]), list(page["metadatas"] or [])
            if self._layout == _IN_INDEX:
                return ids, metadatas, self._known_vectors(ids, metadatas, known)
            return ids, metadatas, self._vectors_of(metadatas)
        try:
            page = self.collection.get(
                include=["metadatas", "embeddings"], limit=_PAGE, offset=offset
            )
            vectors = page["embeddings"]
        except ChromaError:
            page = self.collection.get(include=["metadatas"], limit=_PAGE, offset=offset)
            vectors = None
        metadatas = list(page["metadatas"] or [])
        if vectors is None:
            questions = [_question_of(m) for m in metadatas]
            vectors = self.embedding.embed(questions) if questions else []
        return list(page["ids"]), metadatas, vectors

    def _known_vectors(
        self, ids: list[str], metadatas: list[Mapping[str, Any]], known: BankIndex | None
    ) -> np.ndarray:
        """The vectors of these records, taken from ``known`` or embedded again.

        ``known``'s row serves when it holds the same question: a vector is a function of its
        question and the collection's embedding.
        """
        questions = [_question_of(m) for m in metadatas]
        vectors: list[np.ndarray | None] = []
        for bookmark_id, question in zip(ids, questions, strict=True):
            row = known.get(bookmark_id) if known is not None else None
            vectors.append(row.vector if row is not None and row.question == question else None)
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        if missing:
            again = self.embedding.embed([questions[i] for i in missing])
            for i, vector in zip(missing, again, strict=True):
                vectors[i] = vector
        return np.stack(cast(list[np.ndarray], vectors)) if vectors else np.zeros((0, 0))

    def _vectors_of(self, metadatas: list[Mapping[str, Any]]) -> np.ndarray:
        """The vectors kept in these records' metadata (a record without one: embedded again)."""
        decoded = [_decoded(m.get("vector")) for m in metadatas]
        missing = [i for i, vector in enumerate(decoded) if vector is None]
        if missing:
            again = self.embedding.embed([_question_of(metadatas[i]) for i in missing])
            for i, vector in zip(missing, again, strict=True):
                decoded[i] = vector
        return np.stack(cast(list[np.ndarray], decoded)) if decoded else np.zeros((0, 0))

    def stored_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``ids`` (in order), however this collection keeps them.

        The ``index`` layout's are the index's (Chroma holds none).
        """
        if self._layout == _IN_INDEX:
            index = self._index()
            vectors = []
            for bookmark_id in ids:
                row = index.get(bookmark_id)
                if row is None:
                    raise KeyError(bookmark_id)
                vectors.append(row.vector)
            return np.stack(vectors)
        if self._layout:
            found = self.collection.get(ids=list(ids), include=["metadatas"])
            by_id = dict(
                zip(found["ids"], self._vectors_of(list(found["metadatas"] or [])), strict=True)
            )
        else:
            found = self.collection.get(ids=list(ids), include=["embeddings"])
            by_id = dict(zip(found["ids"], np.asarray(found["embeddings"]), strict=True))
        return np.stack([by_id[i] for i in ids])

    def candidates(
        self, question: str, *, type: BookmarkType, character: str, synced_by: int, k: int = 5
    ) -> list[Bookmark]:
        """Same type, position <= synced_by, same character for behavioral; lexical top-k.

        The pool is the ``max(50, 10k)`` nearest questions (by vector) that pass the filter;
        the paper's lexical filter then keeps those sharing a content word with ``question``,
        ranked by shared words then vector distance. Only the ``k`` kept are read from Chroma.
        """
        return self.candidates_many([(question, type, character)], synced_by=synced_by, k=k)[0]

    def candidates_many(
        self, questions: Sequence[tuple[str, BookmarkType, str]], *, synced_by: int, k: int = 5
    ) -> list[list[Bookmark]]:
        """:meth:`candidates` of each ``(question, type, character)``, for one step's questions.

        One embedding call for all of them (one request with ``openai:``), the searches side by
        side on the two cores, one read of the winners; the candidates are exactly those
        :meth:`candidates` finds one by one.
        """
        if k <= 0 or not questions:
            return [[] for _ in questions]
        size = max(CANDIDATE_POOL, 10 * k)
        vectors = self.embedding.embed([question for question, _, _ in questions])
        index = self._index()

        def search(number: int) -> list[tuple[str, str, float]]:
            _, kind, character = questions[number]
            scope = _scope(BookmarkType(kind), character)
            return index.nearest_questions([vectors[number]], scope, synced_by, size)[0]

        # Questions side by side (each product on one BLAS thread, see bank_index): the two
        # cores each read a scope's matrix at once.
        rest = [_SEARCHES.submit(search, n) for n in range(1, len(questions))]
        pools = [search(0), *(future.result() for future in rest)]
        kept = [
            [
                row[0]
                for row in lexical_filter(
                    question, pools[number], lambda row: row[1], k=k, distance_of=lambda row: row[2]
                )
            ]
            for number, (question, _, _) in enumerate(questions)
        ]
        whole = {
            b.id: b for b in self._hydrate(list(dict.fromkeys(i for ids in kept for i in ids)))
        }
        handed: set[str] = set()  # each caller gets its own copy: copy again only for repeats
        return [[_once(whole[i], handed) for i in ids if i in whole] for ids in kept]

    def ranked_candidates_many(
        self,
        questions: Sequence[tuple[str, BookmarkType, str]],
        *,
        synced_by: int,
        k: int,
        score: Callable[[str, str], float],
    ) -> list[list[Bookmark]]:
        """Each question's top ``k`` of its whole scope by ``score``, not by nearest vector.

        The released runner's ``find_supporting_bookmark`` ranks every same-type bookmark
        (same character for behavioral ones) synced past position 0 by
        ``score(question, candidate_question)`` and sorts ``(score, creation order)``
        descending: ties go to the newest, and a zero score still counts. Here the rows are
        those synced to ``[1, synced_by]`` (none from after the target). Blocks (Chroma reads):
        async callers use a thread.
        """
        if k <= 0 or not questions:
            return [[] for _ in questions]
        index = self._index()
        kept: list[list[str]] = []
        for question, kind, character in questions:
            rows = index.synced_questions(_scope(BookmarkType(kind), character), synced_by)
            scored = sorted(((score(question, q), n, i) for i, q, n in rows), reverse=True)
            kept.append([i for _, _, i in scored[:k]])
        whole = {
            b.id: b for b in self._hydrate(list(dict.fromkeys(i for ids in kept for i in ids)))
        }
        handed: set[str] = set()
        return [[_once(whole[i], handed) for i in ids if i in whole] for ids in kept]

    def _hydrate(self, ids: list[str]) -> list[Bookmark]:
        """The whole bookmarks of ``ids``, in that order (one Chroma read for those not kept)."""
        index = self._index()
        by_id = {i: r for i in ids if (r := index.record(i)) is not None}
        missing = [i for i in ids if i not in by_id]
        if missing:
            found = self.collection.get(ids=missing, include=["metadatas"])
            read = list(zip(found["ids"], found["metadatas"] or [], strict=True))
            index.remember((i, str(m["record"])) for i, m in read)
            by_id.update((i, _from_metadata(m)) for i, m in read)
        return [by_id[i] for i in ids if i in by_id]  # each parsed afresh: the caller's own

    def _nearest_passing(
        self, vector: Any, scope: str, synced_by: int, size: int
    ) -> list[tuple[IndexedBookmark, float]]:
        """The ``size`` nearest bookmarks in ``scope`` synced by ``synced_by``, nearest first.

        Exact (one matrix product over the rows that pass, in the in-process index); see
        :mod:`personae.memory.bookmarks.bank_index` for why Chroma's own filtered search is not used.
        """
        return self._index().nearest(vector, scope, synced_by, size)

    def near(self, target: int, *, character: str, window: int = 5) -> list[Bookmark]:
        """Bookmarks synced within ``window`` actions before ``target`` (not others' behavioral).

        Returns those with ``target - window <= position <= target``, nearest first; nothing
        synced past ``target`` ever comes back.
        """
        if target < 0 or window < 0:
            return []
        found = [
            b
            for b in self._hydrate(self._index().between(target - window, target))
            if b.position <= target
            and not (b.type is BookmarkType.BEHAVIORAL and b.character != character)
        ]
        return sorted(found, key=lambda b: (-b.position, _number(b.id)))

    def all(self) -> list[Bookmark]:
        """Every bookmark, in creation order."""
        return sorted(self._scan(None), key=lambda b: _number(b.id))

    def _scan(self, where: Mapping[str, Any] | None) -> Iterator[Bookmark]:
        offset = 0
        while True:
            page = self.collection.get(
                where=cast(Any, where), include=["metadatas"], limit=_PAGE, offset=offset
            )
            for metadata in page["metadatas"] or []:
                yield _from_metadata(metadata)
            if len(page["ids"]) < _PAGE:
                return
            offset += _PAGE

    def __len__(self) -> int:
        return int(self.collection.count())

    def import_bookmarks(
        self,
        bookmarks: Iterable[Bookmark],
        batch_size: int = 0,
        *,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Store whole records as given (restore an export, bulk load); returns the count.

        Ids must look like ``bm-<n>``; the id counter moves past the largest one.
        ``progress(stored)`` is called after each batch is written (a long import reports).
        """
        size = batch_size or max(1, min(_IMPORT_BATCH, self.client.get_max_batch_size()))
        batch: list[Bookmark] = []
        count = 0
        try:
            for bookmark in bookmarks:
                if not _ID.match(bookmark.id):
                    raise InputError(f"bookmark id {bookmark.id!r} is not bm-<n>", "keep bank ids")
                batch.append(bookmark)
                if len(batch) >= size:
                    count += self._flush(batch)
                    if progress is not None:
                        progress(count)
            count += self._flush(batch)
            if progress is not None:
                progress(count)
        finally:
            if count:  # one snapshot for the whole import, not a log line per batch
                with _WRITE_LOCK:
                    self._save_index(self._index())
        return count

    def _flush(self, batch: list[Bookmark]) -> int:
        if not batch:
            return 0
        self._write(batch, log=False)
        written = len(batch)
        batch.clear()
        return written

    def export(self) -> dict[str, Any]:
        """The whole bank as JSON-ready data (for ``personae bookmarks act --json`` and debugging)."""
        return {
            "storyline": self.storyline,
            "bookmarks": [b.model_dump(mode="json") for b in self.all()],
        }

    def export_json(self, path: Path) -> None:
        """Write :meth:`export` to ``path`` atomically."""
        write_json_atomic(path, self.export())


def _once(bookmark: Bookmark, handed: set[str]) -> Bookmark:
    """``bookmark`` the first time its id is handed out, a deep copy after."""
    if bookmark.id in handed:
        return bookmark.model_copy(deep=True)
    handed.add(bookmark.id)
    return bookmark


def _merged(stored: Bookmark, bookmark: Bookmark) -> Bookmark:
    """``bookmark`` as it is written over ``stored``: history extended, archive flag kept.

    The history is the stored one plus each chunk answer past the stored position (state
    transitions) and the new answer; versions a reader brought back from the archive are not
    written inline again.
    """
    chunks = [
        (t.position, t.answer)
        for t in bookmark.transitions
        if stored.position < t.position < bookmark.position
    ]
    updated = bookmark.model_copy(deep=True)
    updated.history = _with_versions(
        stored.history, [*chunks, (bookmark.position, bookmark.answer)]
    )
    updated.archived = stored.archived or bookmark.archived
    return updated


def _same_creation(bank: BookmarkBank, bookmark: Bookmark) -> bool:
    """Whether the stored bookmark of this id is this one (same question, kind and parent)."""
    stored = bank.get(bookmark.id)
    return (stored.question, stored.type, stored.character, stored.parent_id) == (
        bookmark.question,
        bookmark.type,
        bookmark.character,
        bookmark.parent_id,
    )


def _with_versions(
    history: list[AnswerVersion], answers: Iterable[tuple[int, str]]
) -> list[AnswerVersion]:
    """``history`` plus each ``(position, answer)`` in order, as a new list.

    An unchanged answer adds nothing; a second answer at the same position replaces the first.
    """
    versions = list(history)
    for position, answer in answers:
        if versions and versions[-1].answer == answer:
            continue
        if versions and versions[-1].position == position:
            versions.pop()
        versions.append(AnswerVersion(position=position, answer=answer))
    return versions


def _metadata(bookmark: Bookmark, vector: np.ndarray, layout: str | None) -> dict[str, str | int]:
    """The record's flat metadata in the collection's ``layout`` (see :data:`_IN_INDEX`)."""
    if layout == _IN_INDEX:
        return {
            "scope": _scope(bookmark.type, bookmark.character),
            "position": bookmark.position,
            "record": bookmark.model_dump_json(),
        }
    extra: dict[str, str | int] = {"vector": _encoded(vector)} if layout else {}
    return extra | {
        "type": str(bookmark.type),
        "character": bookmark.character,
        "position": bookmark.position,
        "parent_id": bookmark.parent_id or "",
        "scope": _scope(bookmark.type, bookmark.character),
        "question": bookmark.question,
        "record": bookmark.model_dump_json(),
    }


def _scope(kind: BookmarkType, character: str) -> str:
    """Which bookmarks may match each other: same type, and same character for behavioral."""
    return f"{kind}|{character}" if kind is BookmarkType.BEHAVIORAL else str(kind)


def _indexed(bookmark: Bookmark, vector: np.ndarray) -> IndexedBookmark:
    scope = _scope(bookmark.type, bookmark.character)
    return IndexedBookmark(bookmark.id, scope, bookmark.position, bookmark.question, vector)


def _holds_vectors_in_metadata(collection: Collection) -> bool:
    return (collection.metadata or {}).get(_VECTORS) == _IN_METADATA


def _layout(collection: Collection) -> str | None:
    """Where the collection keeps its vectors: ``index``, ``metadata`` or None (Chroma's own)."""
    found = (collection.metadata or {}).get(_VECTORS)
    return str(found) if found in (_IN_INDEX, _IN_METADATA) else None


def _vacuum(database: Path) -> None:
    """Compact Chroma's SQLite file after an upgrade; skipped when it is busy or absent."""
    if not database.is_file():
        return
    try:
        with closing(sqlite3.connect(database, timeout=1.0)) as connection:
            connection.execute("VACUUM")
    except sqlite3.Error as error:
        logger.info(
            "bank upgrade: %s not compacted (%s); its free pages are reused", database, error
        )


def _placeholders(ids: Sequence[str]) -> np.ndarray:
    """Chroma's embedding of records whose vector is in their metadata: a point on a circle.

    Distinct per id (a cloud of identical points is the worst case for an HNSW graph) and two
    numbers wide, so Chroma's own index of them is tiny.
    """
    angles = np.array([zlib.crc32(i.encode("utf-8")) for i in ids], dtype=np.float64)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)


def _encoded(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _decoded(text: Any) -> np.ndarray | None:
    if not isinstance(text, str):
        return None
    try:
        return np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(np.float32)
    except (ValueError, binascii.Error):
        return None


def _question_of(metadata: Mapping[str, Any]) -> str:
    return str(metadata.get("question") or json.loads(str(metadata["record"]))["question"])


def _from_metadata(metadata: Mapping[str, Any]) -> Bookmark:
    return Bookmark.model_validate_json(str(metadata["record"]))


def _number(bookmark_id: str) -> int:
    return id_number(bookmark_id)


class _Pieces:
    """One scope's rows as a rebuild reads them, page by page."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.questions: list[str] = []
        self.positions: list[int] = []
        self.vectors: list[np.ndarray] = []
        self.places: list[tuple[int, int]] = []
