"""The bookmark bank's in-process index: candidate search without Chroma's metadata layer.

Why: at 100,000 bookmarks a filtered Chroma query (``where`` on scope and position) evaluates
the filter in SQLite over every id (117-753 ms); an unfiltered one returns mostly rows that
fail the filter, and reading their metadata means parsing whole records; restricting the HNSW
search to a few allowed ids is slower still (150-500 ms for 100 ids), and reading vectors back
by id costs ~0.2 ms each. Candidate search needs four small facts per bookmark (scope, synced
position, question, vector), so they live here: per scope, a contiguous matrix of vectors and an
array of positions, searched exactly with one matrix product over the rows that pass (a few ms
at 100,000 bookmarks). Chroma stays the store of record; only the winners are read back whole.

One index per Chroma collection (by its id) and process, shared by every bank object on that
collection, so several banks (or threads) see each other's writes at once. It is filled by one
scan when first used and kept current by the bank's writes; another process writing the same
collection at the same time is not supported (as for the bank's id counter). Memory: the
vectors (4 bytes x dimensions per bookmark: 150 MB at 100,000 bookmarks of 384 dimensions).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class IndexedBookmark:
    """What filtering and ranking read of a bookmark."""

    id: str
    scope: str
    """Which bookmarks may match each other (see ``bookmark_bank._scope``)."""
    position: int
    """Synced through actions [0, position)."""
    question: str
    vector: np.ndarray
    """The question's embedding as stored in Chroma (L2-normalised)."""


class _Scope:
    """The rows of one scope: growable vector matrix and position array."""

    def __init__(self, dimensions: int) -> None:
        self.vectors = np.zeros((16, dimensions), dtype=np.float32)
        self.positions = np.zeros(16, dtype=np.int64)
        self.rows: list[IndexedBookmark] = []

    def add(self, row: IndexedBookmark) -> int:
        size = len(self.rows)
        if size == len(self.positions):
            self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
            self.positions = np.concatenate([self.positions, np.zeros_like(self.positions)])
        self.rows.append(row)
        self.set(size, row)
        return size

    def set(self, slot: int, row: IndexedBookmark) -> None:
        self.rows[slot] = row
        self.vectors[slot] = row.vector
        self.positions[slot] = row.position


class BankIndex:
    """Bookmarks by scope and position, with their vectors, for one collection."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[str, int]] = {}
        """id -> (scope, slot in that scope's arrays)."""
        self._scopes: dict[str, _Scope] = {}
        self._by_position: dict[int, set[str]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def put(self, rows: Iterable[IndexedBookmark]) -> None:
        """Add or replace rows (a bookmark's position moves forward as it syncs)."""
        with self._lock:
            for row in rows:
                self._put(row)

    def _put(self, row: IndexedBookmark) -> None:
        placed = self._rows.get(row.id)
        if placed is not None and placed[0] == row.scope:
            scope = self._scopes[row.scope]
            old = scope.rows[placed[1]]
            self._by_position[old.position].discard(row.id)
            scope.set(placed[1], row)
        else:
            if placed is not None:  # a changed scope: leave the old slot unreachable
                old_scope = self._scopes[placed[0]]
                old = old_scope.rows[placed[1]]
                self._by_position[old.position].discard(row.id)
                old_scope.positions[placed[1]] = np.iinfo(np.int64).max
            scope = self._scopes.setdefault(row.scope, _Scope(len(row.vector)))
            self._rows[row.id] = (row.scope, scope.add(row))
        self._by_position.setdefault(row.position, set()).add(row.id)

    def get(self, bookmark_id: str) -> IndexedBookmark | None:
        """The row of ``bookmark_id`` (None if unknown)."""
        with self._lock:
            placed = self._rows.get(bookmark_id)
            return self._scopes[placed[0]].rows[placed[1]] if placed else None

    def count(self, scope: str, synced_by: int) -> int:
        """How many bookmarks of ``scope`` are synced by ``synced_by``."""
        with self._lock:
            found = self._scopes.get(scope)
            if found is None:
                return 0
            return int(np.count_nonzero(found.positions[: len(found.rows)] <= synced_by))

    def nearest(
        self, vector: np.ndarray, scope: str, synced_by: int, size: int
    ) -> list[tuple[IndexedBookmark, float]]:
        """The ``size`` rows of ``scope`` synced by ``synced_by`` nearest to ``vector``, exactly.

        Cosine distance (vectors are normalised), nearest first, ties in creation order.
        """
        with self._lock:
            found = self._scopes.get(scope)
            if found is None or size <= 0:
                return []
            count = len(found.rows)
            slots = np.flatnonzero(found.positions[:count] <= synced_by)
            if not len(slots):
                return []
            distances = 1.0 - found.vectors[slots] @ np.asarray(vector, dtype=np.float32)
            if len(slots) > size:
                keep = np.argpartition(distances, size - 1)[:size]
                slots, distances = slots[keep], distances[keep]
            order = np.lexsort((slots, distances))
            return [(found.rows[int(slots[i])], float(distances[i])) for i in order]

    def between(self, low: int, high: int) -> list[str]:
        """Ids of the bookmarks synced to a position in ``[low, high]``."""
        with self._lock:
            return [i for p in range(max(0, low), high + 1) for i in self._by_position.get(p, ())]


_INDEXES: dict[str, BankIndex] = {}
_REGISTRY_LOCK = threading.Lock()


def index_for(collection_id: str, scan: Callable[[], Iterable[IndexedBookmark]]) -> BankIndex:
    """The process's index of a collection; ``scan()`` fills it the first time."""
    with _REGISTRY_LOCK:
        found = _INDEXES.get(collection_id)
        if found is None:
            found = BankIndex()
            found.put(scan())
            _INDEXES[collection_id] = found
        return found


def forget_bank_indexes() -> None:
    """Drop every index (benchmarks measuring a fresh process; tests simulating a restart)."""
    with _REGISTRY_LOCK:
        _INDEXES.clear()
