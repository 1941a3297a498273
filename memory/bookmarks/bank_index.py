"""The bookmark bank's in-process index: candidate search without Chroma's metadata layer.

Why: at 100,000 bookmarks a filtered Chroma query (``where`` on scope and position) evaluates
the filter in SQLite over every id (117-753 ms); an unfiltered one returns mostly rows that
fail the filter, and reading their metadata means parsing whole records; restricting the HNSW
search to a few allowed ids is slower still (150-500 ms for 100 ids), and reading vectors back
by id costs ~0.2 ms each. Candidate search needs four small facts per bookmark (scope, synced
position, question, vector), so they live here: per scope, a contiguous matrix of vectors and an
array of positions, searched exactly with one matrix product over the rows that pass (a few ms
at 100,000 bookmarks). Chroma stays the store of record; only the winners are read back whole.

The product runs on one BLAS thread (:func:`one_blas_thread`). A matrix-vector product is
memory-bound, so more threads gain nothing, and OpenBLAS's worker threads spin while they wait:
on a busy 2-core machine five concurrent searches (one per proposed question) took 287 ms
instead of 23 ms, and one search 20 ms instead of 2.4 ms (``/tmp``-style micro benchmark over a
33,000 x 384 scope at load average 10; the match node p50 went from 186 ms to the figures in
the README).

One index per Chroma collection (by its id) and process, shared by every bank object on that
collection, so several banks (or threads) see each other's writes at once. It is filled by one
scan when first used and kept current by the bank's writes; another process writing the same
collection at the same time is not supported (as for the bank's id counter). Memory: the
vectors (4 bytes x dimensions per bookmark: 150 MB at 100,000 bookmarks of 384 dimensions).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from personae.memory.blas import one_blas_thread
from personae.process_caches import clears_on_reset

if TYPE_CHECKING:
    from personae.memory.bookmarks.bookmark import Bookmark

PRODUCTS_KEPT = 128
"""Queries whose products with a scope are kept (each: 4 bytes per row of the scope)."""
RECORDS_KEPT = 4096
"""Whole records kept for ``get`` and ``save`` (those a step reads back: recent ones)."""
_NUMBER = re.compile(r"^bm-(\d+)$")


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


@dataclass(frozen=True)
class _Products:
    """A query's products with the first rows of a scope (one per row) at ``generation``."""

    generation: int
    products: np.ndarray


class _Scope:
    """The rows of one scope: growable vector matrix and position array."""

    def __init__(self, dimensions: int) -> None:
        self.vectors = np.zeros((16, dimensions), dtype=np.float32)
        self.positions = np.zeros(16, dtype=np.int64)
        self.rows: list[IndexedBookmark] = []
        self.generation = 0
        """Bumped when a stored row's vector changes: cached products of the scope are void."""

    @classmethod
    def of(cls, rows: list[IndexedBookmark]) -> _Scope:
        """A scope holding ``rows`` (one copy of their vectors, not one growth per row)."""
        scope = cls(len(rows[0].vector))
        capacity = max(16, 1 << (len(rows) - 1).bit_length())
        scope.vectors = np.zeros((capacity, scope.vectors.shape[1]), dtype=np.float32)
        scope.vectors[: len(rows)] = np.stack([row.vector for row in rows])
        scope.positions = np.zeros(capacity, dtype=np.int64)
        scope.positions[: len(rows)] = [row.position for row in rows]
        scope.rows = list(rows)
        return scope

    def add(self, row: IndexedBookmark) -> int:
        size = len(self.rows)
        if size == len(self.positions):
            self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
            self.positions = np.concatenate([self.positions, np.zeros_like(self.positions)])
        self.rows.append(row)
        self.set(size, row)
        return size

    def set(self, slot: int, row: IndexedBookmark) -> None:
        if slot < len(self.rows) - 1 or self.rows[slot] is not row:
            if not np.array_equal(self.vectors[slot], row.vector):
                self.generation += 1
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
        self._records: OrderedDict[str, Bookmark] = OrderedDict()
        self._products: OrderedDict[tuple[str, bytes], _Products] = OrderedDict()
        """Recent queries' products with a scope's rows (see :meth:`nearest_many`)."""
        self.next_number = 0
        """The next id number the bank hands out (past every stored id)."""
        self.stale = False
        """Set when a bank is opened on the collection: the next use re-reads Chroma."""
        self._lock = threading.Lock()

    def refill(self, rows: Iterable[IndexedBookmark], next_number: int) -> None:
        """Forget everything, then index ``rows`` (what Chroma holds now), scope by scope."""
        latest = {row.id: row for row in rows}
        by_scope: dict[str, list[IndexedBookmark]] = {}
        for row in latest.values():
            by_scope.setdefault(row.scope, []).append(row)
        numbers = (int(m.group(1)) + 1 for i in latest if (m := _NUMBER.match(i)))
        with self._lock:
            self._rows.clear()
            self._by_position.clear()
            self._records.clear()
            self._products.clear()
            self._scopes = {name: _Scope.of(members) for name, members in by_scope.items()}
            for name, members in by_scope.items():
                for slot, row in enumerate(members):
                    self._rows[row.id] = (name, slot)
                    self._by_position.setdefault(row.position, set()).add(row.id)
            self.next_number = max(next_number, max(numbers, default=0))
        self.stale = False

    def __len__(self) -> int:
        return len(self._rows)

    def put(self, rows: Iterable[IndexedBookmark]) -> None:
        """Add or replace rows (a bookmark's position moves forward as it syncs)."""
        with self._lock:
            for row in rows:
                self._put(row)

    def reserve(self) -> int:
        """A fresh id number, never handed out before in this process nor stored."""
        with self._lock:
            number = self.next_number
            self.next_number += 1
            return number

    def remember(self, records: Iterable[Bookmark]) -> None:
        """Keep these whole records (as stored) for ``record``; the oldest are forgotten."""
        with self._lock:
            for record in records:
                self._records[record.id] = record.model_copy(deep=True)
                self._records.move_to_end(record.id)
            while len(self._records) > RECORDS_KEPT:
                self._records.popitem(last=False)

    def record(self, bookmark_id: str) -> Bookmark | None:
        """The stored record of ``bookmark_id`` if kept (callers copy before changing it)."""
        with self._lock:
            return self._records.get(bookmark_id)

    def _put(self, row: IndexedBookmark) -> None:
        match = _NUMBER.match(row.id)
        if match:
            self.next_number = max(self.next_number, int(match.group(1)) + 1)
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
        return self.nearest_many([vector], scope, synced_by, size)[0]

    def nearest_many(
        self, vectors: Sequence[np.ndarray], scope: str, synced_by: int, size: int
    ) -> list[list[tuple[IndexedBookmark, float]]]:
        """:meth:`nearest` for several query vectors of one scope (the filter computed once).

        One matrix-vector product per query: on one BLAS thread three of them (6 ms over a
        33,000-row scope) beat one matrix-matrix product with three columns (9 ms). A step
        mostly asks the questions earlier steps asked (the agent reuses their bookmarks), and a
        row's vector never changes while its position moves on, so the products of the last
        :data:`PRODUCTS_KEPT` queries are kept per scope: a repeated query computes only the
        rows added since (the position filter is applied afresh every time). The lock is held
        only to take the scope's arrays: the products (numpy releases the GIL) run while other
        threads search or write.
        """
        with self._lock:
            found = self._scopes.get(scope)
            if found is None or size <= 0 or not len(vectors):
                return [[] for _ in vectors]
            count, generation = len(found.rows), found.generation
            matrix, positions, rows = found.vectors, found.positions, found.rows
        passing = np.flatnonzero(positions[:count] <= synced_by)
        ranked = []
        for vector in vectors:
            query = np.asarray(vector, dtype=np.float32)
            key = (scope, query.tobytes())
            with self._lock:
                cached = self._products.get(key)
            kept = cached.products if cached and cached.generation == generation else None
            done = 0 if kept is None else min(len(kept), count)
            with one_blas_thread():
                # Products over the scope's contiguous matrix (no copy), then the filter.
                fresh = matrix[done:count] @ query
            products = fresh if kept is None else np.concatenate([kept[:done], fresh])
            with self._lock:
                self._products[key] = _Products(generation, products)
                self._products.move_to_end(key)
                while len(self._products) > PRODUCTS_KEPT:
                    self._products.popitem(last=False)
            ranked.append(_ranked(1.0 - products[passing], passing, rows, size))
        return ranked

    def between(self, low: int, high: int) -> list[str]:
        """Ids of the bookmarks synced to a position in ``[low, high]``."""
        with self._lock:
            return [i for p in range(max(0, low), high + 1) for i in self._by_position.get(p, ())]


def _ranked(
    distances: np.ndarray, slots: np.ndarray, rows: list[IndexedBookmark], size: int
) -> list[tuple[IndexedBookmark, float]]:
    """The ``size`` nearest of ``slots`` (``distances`` beside them), ties in creation order."""
    if not len(slots):
        return []
    if len(slots) > size:
        keep = np.argpartition(distances, size - 1)[:size]
        slots, distances = slots[keep], distances[keep]
    order = np.lexsort((slots, distances))
    return [(rows[int(slots[i])], float(distances[i])) for i in order]


_INDEXES: dict[str, BankIndex] = {}
_REGISTRY_LOCK = threading.Lock()


def index_for(
    collection_id: str,
    scan: Callable[[], Iterable[IndexedBookmark]],
    stored_counter: Callable[[], int] = lambda: 0,
) -> BankIndex:
    """The process's index of a collection; ``scan()`` fills it the first time.

    Its id counter starts past every scanned id and past ``stored_counter()`` (the counter
    banks written before this index kept in the collection's metadata).
    """
    with _REGISTRY_LOCK:
        found = _INDEXES.get(collection_id)
        if found is None:
            found = _INDEXES[collection_id] = BankIndex()
            found.stale = True
        if found.stale:
            found.refill(scan(), stored_counter())
        return found


def mark_stale(collection_id: str) -> None:
    """The collection was (re)opened: another process may have written it since it was read.

    The index is refilled at its next use, in place, so every bank object sharing it sees the
    same, current rows. Opening is rare (the graphs open a bank once per process).
    """
    with _REGISTRY_LOCK:
        found = _INDEXES.get(collection_id)
        if found is not None:
            found.stale = True


def forget_bank_indexes() -> None:
    """Drop every index (benchmarks measuring a fresh process; tests simulating a restart)."""
    with _REGISTRY_LOCK:
        _INDEXES.clear()


clears_on_reset("memory.bookmarks.bank_index.indexes", forget_bank_indexes)
