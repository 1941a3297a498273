"""Exact vector search over a small Chroma collection, in numpy (AMADEUS personas, ARCANE novels).

Why: a persona holds about a hundred chunks and a novel a few thousand, and at those sizes one
matrix-vector product over every stored vector is both exact and faster than Chroma's HNSW walk
at the ``ef_search`` our recall needs (:data:`~personae.memory.chroma.SEARCH_EF`: at 10,000
chunks 7.4 ms p50 against 1.2 ms for the product, ``benchmarks/bench_amadeus.py``). A
collection of at most :data:`EXACT_MAX` vectors is read once per process into a
:class:`Snapshot` (ids, documents, metadata, one contiguous float32 matrix) and searched here;
a larger one stays with HNSW. The snapshot is keyed by the collection's id and a version the
store gives (what changes whenever its contents do), so a write by this or another process is
seen at the next query.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from chromadb.api.models.Collection import Collection

from personae.memory.blas import one_blas_thread
from personae.process_caches import clears_on_reset

EXACT_MAX = 20_000
"""Collections of at most this many vectors are searched exactly (see ``bench_amadeus.py``:
at 10,000 chunks the product takes a sixth of the HNSW query; it grows linearly, 1.5 KB of
memory per 384-dimensional chunk held while the process runs)."""
KEPT = 4
"""Snapshots kept per process (the personas or novels a process reads at once)."""
_PAGE = 5000
THREADED_ROWS = 2048
"""From this many rows the product runs under :func:`~personae.memory.blas.one_blas_thread`
(OpenBLAS may start its spinning threads for it); below, limiting the threads costs more (two
library calls) than the product of a 100-chunk persona."""


@dataclass(frozen=True)
class Snapshot:
    """Every row of a collection at one version, as a search reads them."""

    ids: list[str]
    documents: list[str]
    metadatas: list[Mapping[str, Any]]
    vectors: np.ndarray
    """One float32 row per id (the stored, L2-normalised embeddings)."""

    def column(self, key: str) -> np.ndarray:
        """The integer metadata ``key`` of every row (0 where absent), for masks."""
        return np.array([int(cast(int, m.get(key, 0))) for m in self.metadatas], dtype=np.int64)


_WRITES = [0]
"""Writes this process made to a searched collection (:func:`note_write`)."""


def note_write() -> None:
    """A store of this process changed a collection it searches: the next query checks."""
    with _LOCK:
        _WRITES[0] += 1


def store_file(client: Any) -> str | None:
    """The SQLite file of an embedded Chroma client (None for a server or in memory)."""
    try:
        settings = client.get_settings()
        folder = settings.persist_directory if settings.is_persistent else None
    except Exception:  # a client without settings (a test double): ask Chroma each time
        folder = None
    return os.path.join(folder, "chroma.sqlite3") if folder else None


def unchanged_since(
    database: str | None, seen: tuple[int, int, int] | None
) -> tuple[tuple[int, int, int] | None, bool]:
    """A cheap stamp of what a Chroma store holds, and whether it equals ``seen``.

    Why: asking Chroma for a collection's count and manifest costs about a millisecond, ten
    times the exact search of a 100-chunk persona. An embedded store's SQLite file (``database``,
    from :func:`store_file`; Chroma keeps it in rollback-journal mode) changes modification time
    and often size whenever any process commits to it, and this process's own writes are
    counted (:func:`note_write`), so an equal stamp means nothing was written since. Without a
    file (a server's store) the stamp is None and the caller asks Chroma each time. Chroma's own
    embedded client does not see every write another process makes to the same folder while it
    is open (it answers from what it loaded), so a stamp change is what this process can know.
    """
    if database is None:
        return None, False
    try:
        status = os.stat(database)
    except OSError:
        return None, False
    stamp = (_WRITES[0], status.st_mtime_ns, status.st_size)
    return stamp, stamp == seen


_SNAPSHOTS: OrderedDict[tuple[str, str], Snapshot] = OrderedDict()
_LOCK = threading.Lock()
clears_on_reset("memory.exact.snapshots", _SNAPSHOTS.clear)


def snapshot(collection: Collection, version: str) -> Snapshot:
    """The rows of ``collection`` at ``version`` (read from Chroma once per version)."""
    key = (str(collection.id), version)
    with _LOCK:
        found = _SNAPSHOTS.get(key)
        if found is not None:
            _SNAPSHOTS.move_to_end(key)
            return found
    ids: list[str] = []
    documents: list[str] = []
    metadatas: list[Mapping[str, Any]] = []
    pages: list[np.ndarray] = []
    offset = 0
    while True:
        page = collection.get(
            include=cast(Any, ["embeddings", "documents", "metadatas"]),
            limit=_PAGE,
            offset=offset,
        )
        ids += page["ids"]
        documents += [str(d) for d in page["documents"] or []]
        metadatas += [dict(m or {}) for m in page["metadatas"] or []]
        if len(page["ids"]):
            pages.append(np.asarray(page["embeddings"], dtype=np.float32))
        if len(page["ids"]) < _PAGE:
            break
        offset += _PAGE
    vectors = np.concatenate(pages) if pages else np.zeros((0, 0), dtype=np.float32)
    found = Snapshot(ids, documents, metadatas, np.ascontiguousarray(vectors))
    with _LOCK:
        stale = [k for k in _SNAPSHOTS if k[0] == key[0]]
        for old in stale:  # an older version of the same collection is never read again
            del _SNAPSHOTS[old]
        _SNAPSHOTS[key] = found
        while len(_SNAPSHOTS) > KEPT:
            _SNAPSHOTS.popitem(last=False)
    return found


def nearest(
    rows: Snapshot, query: Sequence[float] | np.ndarray, k: int, mask: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """The ``k`` rows nearest to ``query`` (cosine distance), nearest first, ties in row order.

    ``mask`` (booleans, one per row) keeps only the rows it marks. Returns ``(row, distance)``.
    """
    if k <= 0 or not rows.ids:
        return []
    vector = np.asarray(query, dtype=np.float32)
    if len(rows.ids) < THREADED_ROWS:
        distances = 1.0 - rows.vectors @ vector
    else:
        with one_blas_thread():
            distances = 1.0 - rows.vectors @ vector
    candidates = np.flatnonzero(mask) if mask is not None else np.arange(len(rows.ids))
    if not len(candidates):
        return []
    picked = distances[candidates]
    if len(candidates) > k:  # the k nearest; of rows tied with the k-th, the first ones
        kth = np.partition(picked, k - 1)[k - 1]
        inside, tied = np.flatnonzero(picked < kth), np.flatnonzero(picked == kth)
        keep = np.concatenate([inside, tied[: k - len(inside)]])
        candidates, picked = candidates[keep], picked[keep]
    order = np.lexsort((candidates, picked))
    return list(zip(candidates[order].tolist(), picked[order].tolist(), strict=True))
