"""The bookmark bank's in-process index: candidate search without Chroma's metadata layer.

Why: at 100,000 bookmarks a filtered Chroma query (``where`` on scope and position) evaluates
the filter in SQLite over every id (117-753 ms); an unfiltered one returns mostly rows that
fail the filter, and reading their metadata means parsing whole records; restricting the HNSW
search to a few allowed ids is slower still (150-500 ms for 100 ids), and reading vectors back
by id costs ~0.2 ms each. Candidate search needs four small facts per bookmark (scope, synced
position, question, vector), so they live here, per scope, in flat arrays: a contiguous matrix
of vectors, the positions, the creation numbers, the ids and questions. Chroma stays the store
of record; only the winners are read back whole.

Rows of a scope are kept **sorted by position** (ties in creation order), so "synced by q" is
a prefix of the matrix and a search multiplies only the rows that can pass (at random targets
about half of them), like the lower bound the benchmark measures. Rows written since the last
sort sit in a short unsorted tail searched whole; a row whose position moves forward stays in
place (its sort key only under-estimates it, and the exact position is checked); one moved
backward (an import overwriting it) leaves a dead slot and joins the tail. The scope is sorted
again when the tail or the dead slots pass an eighth of it (rare at scale: amortised O(1)).

The product runs on one BLAS thread (:func:`one_blas_thread`). A matrix-vector product is
memory-bound, so more threads gain nothing, and OpenBLAS's worker threads spin while they wait:
on a busy 2-core machine five concurrent searches (one per proposed question) took 287 ms
instead of 23 ms, and one search 20 ms instead of 2.4 ms (micro benchmark over a 33,000 x 384
scope at load average 10).

One index per Chroma collection (by its id) and process, shared by every bank object on that
collection, so several banks (or threads) see each other's writes at once. It remembers the
collection's write stamp it reflects (see :mod:`personae.memory.bookmarks.bank_index_file`,
which persists it beside the collection); another process writing the same collection at the
same time is not supported (as for the bank's id counter). Memory: the vectors (4 bytes x
dimensions per bookmark: 150 MB at 100,000 bookmarks of 384 dimensions) and about 100 bytes
per bookmark for its id, question and place; no object per bookmark. A loaded snapshot's sorted
vectors stay memory-mapped from its file (:mod:`~personae.memory.bookmarks.bank_index_file`):
only the pages searches read are resident, and a search at target q reads the rows synced by
q, a prefix of each scope (one ``bookmarks act`` step at mid-story on a 100,000-bookmark bank: 305 MiB
peak instead of 407). Exact float32 as before: the products, distances and ties are the same.
"""

from __future__ import annotations

import operator
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, SupportsIndex, overload

import numpy as np

from personae.memory.blas import one_blas_thread
from personae.process_caches import clears_on_reset

if TYPE_CHECKING:
    from personae.memory.bookmarks.bookmark import Bookmark

PRODUCTS_KEPT = 128
"""Queries whose products with a scope are kept (each: 4 bytes per row of the scope)."""
RECORDS_KEPT = 4096
"""Whole records kept for ``get`` and ``save`` (those a step reads back: recent ones)."""
TAIL_MIN = 1024
"""A scope is re-sorted when its unsorted tail or dead slots pass max(this, an eighth)."""
DEAD = np.iinfo(np.int64).max
"""Position of a slot no longer in use: it passes no filter."""
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


def id_number(bookmark_id: str) -> int:
    """The ``n`` of ``bm-<n>`` (creation order); -1 for any other id."""
    match = _NUMBER.match(bookmark_id)
    return int(match.group(1)) if match else -1


class Texts(Sequence[str]):
    """A column of strings kept as one joined ``str`` and end offsets, decoded on access.

    Why: a loaded snapshot's ids and questions as 200,000 Python strings held 17 MiB of a
    100,000-bookmark bank's open (RSS 276 of the 300 MiB goal); joined they take the text's
    own bytes (an ASCII question: one byte a character) plus 8 bytes an end. A search reads the
    few dozen strings of its pool. Rows appended since (a scope's tail) and rows whose question
    changed live in a plain list and a dict beside.
    """

    def __init__(self, text: str = "", ends: np.ndarray | None = None, start: int = 0) -> None:
        self._text = text
        self._ends = np.zeros(0, dtype=np.int64) if ends is None else ends
        """Where each joined string ends in ``_text`` (the first starts at ``start``)."""
        self._start = start
        self._added: list[str] = []
        self._changed: dict[int, str] = {}

    @classmethod
    def joined(cls, text: str, ends: np.ndarray, lo: int, hi: int) -> Texts:
        """Strings ``[lo, hi)`` of a joined ``text`` whose strings end at ``ends``."""
        return cls(text, ends[lo:hi], int(ends[lo - 1]) if lo else 0)

    def __len__(self) -> int:
        return len(self._ends) + len(self._added)

    @overload
    def __getitem__(self, at: SupportsIndex) -> str: ...
    @overload
    def __getitem__(self, at: slice) -> list[str]: ...
    def __getitem__(self, at: SupportsIndex | slice) -> str | list[str]:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(len(self)))]
        slot = operator.index(at)  # numpy integers too
        if slot < 0:
            slot += len(self)
        joined = len(self._ends)
        if slot >= joined:
            return self._added[slot - joined]
        if slot in self._changed:
            return self._changed[slot]
        start = int(self._ends[slot - 1]) if slot else self._start
        return self._text[start : int(self._ends[slot])]

    def __iter__(self) -> Iterator[str]:
        for slot in range(len(self)):
            yield self[slot]

    def __setitem__(self, at: SupportsIndex, text: str) -> None:
        slot, joined = operator.index(at), len(self._ends)
        if slot >= joined:
            self._added[slot - joined] = text
        else:
            self._changed[slot] = text

    def append(self, text: str) -> None:
        """Add a string at the end."""
        self._added.append(text)


@dataclass(frozen=True)
class ScopeArrays:
    """One scope's rows as flat arrays, sorted by (position, number): what a snapshot holds."""

    name: str
    ids: Sequence[str]
    questions: Sequence[str]
    positions: np.ndarray
    numbers: np.ndarray
    vectors: np.ndarray
    """The rows' vectors, one row each (a snapshot's: memory-mapped from its file)."""
    offsets: np.ndarray | None = None
    """Where each row's whole record starts in the records file (-1: not there)."""
    lengths: np.ndarray | None = None
    """Its length in bytes."""
    order: np.ndarray | None = None
    """When set, the rows are slots ``order`` of ``vectors`` followed by ``tail`` (a
    :meth:`BankIndex.snapshot`, not copied)."""
    tail: np.ndarray | None = None
    """With ``order``: the scope's unsorted rows, slots from ``len(vectors)`` on."""

    def matrix(self, start: int, stop: int) -> np.ndarray:
        """The vectors of sorted rows ``[start, stop)`` as one new matrix."""
        if self.order is None:
            return np.array(self.vectors[start:stop], dtype=np.float32)
        return _gathered(self.vectors, self.tail, self.order[start:stop])


def _gathered(head: np.ndarray, tail: np.ndarray | None, slots: np.ndarray) -> np.ndarray:
    """Rows ``slots`` of ``head`` followed by ``tail``, without joining the two."""
    inside = slots < len(head)
    if inside.all():
        return np.take(head, slots, axis=0)
    assert tail is not None
    out = np.empty((len(slots), head.shape[1]), dtype=np.float32)
    out[inside] = head[slots[inside]]
    out[~inside] = tail[slots[~inside] - len(head)]
    return out


@dataclass
class _Products:
    """A query's products with a scope's rows at ``generation``.

    ``head`` covers slots ``[0, len(head))`` of the sorted part, ``tail`` the slots
    ``[base, base + len(tail))``.
    """

    generation: int
    head: np.ndarray
    tail: np.ndarray


class _Scope:
    """The rows of one scope: sorted part ``[0, base)``, unsorted tail ``[base, size)``.

    Their vectors are two matrices: ``head`` holds exactly the sorted rows (a loaded snapshot's
    is memory-mapped from the file, so only the pages a search reads become resident), ``tail``
    the rows written since (in memory, grown as they come). Appending never copies the head.
    """

    def __init__(self, name: str, dimensions: int, capacity: int = 16) -> None:
        self.name = name
        self.head = np.zeros((0, dimensions), dtype=np.float32)
        self.tail = np.zeros((capacity, dimensions), dtype=np.float32)
        self.positions = np.zeros(capacity, dtype=np.int64)
        self.numbers = np.zeros(capacity, dtype=np.int64)
        self.offsets = np.full(capacity, -1, dtype=np.int64)
        self.lengths = np.zeros(capacity, dtype=np.int64)
        """Each row's whole record in the records file (offset -1: not there, changed since)."""
        self.keys = np.zeros(0, dtype=np.int64)
        """Sort keys of ``[0, base)`` (positions when last sorted): ascending."""
        self.ids = Texts()
        self.questions = Texts()
        self.base = 0
        self.dead = 0
        self.generation = 0
        """Bumped when slots are re-sorted or a stored vector changes: cached products void."""

    @classmethod
    def of(cls, arrays: ScopeArrays) -> _Scope:
        """A scope holding ``arrays`` (already sorted), without copying the matrix."""
        size = len(arrays.ids)
        scope = cls(arrays.name, arrays.vectors.shape[1], 0)
        scope.head = arrays.vectors[:size]
        scope.positions, scope.numbers = arrays.positions, arrays.numbers
        scope.ids, scope.questions = _texts(arrays.ids), _texts(arrays.questions)
        if arrays.offsets is not None and arrays.lengths is not None:
            scope.offsets, scope.lengths = arrays.offsets, arrays.lengths
        else:
            scope.offsets = np.full(size, -1, dtype=np.int64)
            scope.lengths = np.zeros(size, dtype=np.int64)
        scope.keys = arrays.positions[:size].copy()
        scope.base = size
        return scope

    @property
    def size(self) -> int:
        return len(self.ids)

    def vector(self, slot: int) -> np.ndarray:
        """Row ``slot``'s vector (a view: writing it writes the row)."""
        matrix, row = (self.head, slot) if slot < self.base else (self.tail, slot - self.base)
        vector: np.ndarray = matrix[row]
        return vector

    def row(self, slot: int) -> IndexedBookmark:
        return IndexedBookmark(
            self.ids[slot],
            self.name,
            int(self.positions[slot]),
            self.questions[slot],
            self.vector(slot).copy(),
        )

    def append(self, row: IndexedBookmark) -> int:
        """Add ``row`` to the tail; its slot."""
        slot = self.size
        capacity = max(16, slot + slot // 2)
        if slot - self.base >= len(self.tail):
            self.tail = _grown(self.tail, max(16, len(self.tail) + len(self.tail) // 2 + 1))
        if slot >= len(self.positions):
            self.positions = _grown(self.positions, capacity)
        if slot >= len(self.numbers):
            self.numbers = _grown(self.numbers, capacity)
        if slot >= len(self.offsets):
            self.offsets = _grown(self.offsets, capacity)
            self.lengths = _grown(self.lengths, capacity)
        self.offsets[slot] = -1
        self.tail[slot - self.base] = row.vector
        self.positions[slot] = row.position
        self.numbers[slot] = id_number(row.id)
        self.ids.append(row.id)
        self.questions.append(row.question)
        return slot

    def replace(self, slot: int, row: IndexedBookmark) -> int:
        """Store ``row`` over the one in ``slot``; its slot (another one if it had to move)."""
        if slot < self.base and row.position < self.keys[slot]:
            self.kill(slot)  # moved back before its sort key: it would be missed in place
            return self.append(row)
        if not np.array_equal(self.vector(slot), row.vector):
            self.vector(slot)[:] = row.vector  # a mapped head: copy-on-write, the file unchanged
            self.generation += 1
        self.positions[slot] = row.position
        self.questions[slot] = row.question
        self.offsets[slot] = -1  # the record changed: the file's copy is old
        return slot

    def kill(self, slot: int) -> None:
        self.positions[slot] = DEAD
        self.dead += 1

    def untidy(self) -> bool:
        limit = max(TAIL_MIN, self.base // 8)
        return self.size - self.base > limit or self.dead > limit

    def sorted_slots(self) -> np.ndarray:
        """The live slots in (position, number) order."""
        live = np.flatnonzero(self.positions[: self.size] != DEAD)
        return live[np.lexsort((self.numbers[live], self.positions[live]))]

    def arrays(self) -> ScopeArrays:
        """The live rows sorted by (position, number), as new arrays (one copy of the matrix)."""
        order = self.sorted_slots()
        return ScopeArrays(
            self.name,
            [self.ids[i] for i in order],
            [self.questions[i] for i in order],
            self.positions[order],
            self.numbers[order],
            _gathered(self.head, self.tail, order),
            self.offsets[order],
            self.lengths[order],
        )


def _texts(strings: Sequence[str]) -> Texts:
    """``strings`` as a :class:`Texts` a scope can append to (a snapshot's own: not copied)."""
    if isinstance(strings, Texts) and not strings._added and not strings._changed:
        return Texts(strings._text, strings._ends, strings._start)
    return Texts("".join(strings), np.cumsum([len(t) for t in strings], dtype=np.int64))


def sorted_arrays(
    name: str,
    ids: list[str],
    questions: list[str],
    positions: np.ndarray,
    numbers: np.ndarray,
    vectors: np.ndarray,
    order: np.ndarray,
) -> ScopeArrays:
    """A scope's :class:`ScopeArrays` whose matrix is ``vectors[order]`` (copied once).

    No spare rows: the next writes go to the scope's tail, never into this matrix.
    """
    sorted_vectors = np.take(np.asarray(vectors, dtype=np.float32), order, axis=0)
    return ScopeArrays(name, ids, questions, positions, numbers, sorted_vectors)


class _Places:
    """Where each id's row is, ``(scope, slot)``: flat arrays for ``bm-<n>`` ids, by ``n``.

    A dict of 100,000 ``(scope, slot)`` tuples costs 14 MB; the arrays 1.2 MB. Ids of any other
    form (none the bank makes) go to a dict.
    """

    def __init__(self) -> None:
        self.scopes: list[_Scope] = []
        self.numbers: dict[str, int] = {}
        """Scope name -> its number in ``scopes`` (kept when a scope is re-sorted)."""
        self.scope_of = np.full(0, -1, dtype=np.int32)
        self.slot_of = np.zeros(0, dtype=np.int64)
        self.other: dict[str, tuple[int, int]] = {}

    def clear(self) -> None:
        self.scopes.clear()
        self.numbers.clear()
        self.scope_of = np.full(0, -1, dtype=np.int32)
        self.slot_of = np.zeros(0, dtype=np.int64)
        self.other.clear()

    def __len__(self) -> int:
        return int(np.count_nonzero(self.scope_of >= 0)) + len(self.other)

    def _number(self, scope: _Scope) -> int:
        number = self.numbers.get(scope.name)
        if number is None:
            number = self.numbers[scope.name] = len(self.scopes)
            self.scopes.append(scope)
        self.scopes[number] = scope
        return number

    def _room(self, top: int) -> None:
        if top >= len(self.scope_of):
            size = max(1024, top + 1 + top // 2)
            self.scope_of = np.concatenate(
                [self.scope_of, np.full(size - len(self.scope_of), -1, dtype=np.int32)]
            )
            self.slot_of = np.concatenate(
                [self.slot_of, np.zeros(size - len(self.slot_of), dtype=np.int64)]
            )

    def set(self, bookmark_id: str, scope: _Scope, slot: int) -> None:
        number, n = self._number(scope), id_number(bookmark_id)
        if n < 0:
            self.other[bookmark_id] = (number, slot)
            return
        self._room(n)
        self.scope_of[n], self.slot_of[n] = number, slot

    def locate(self, scope: _Scope) -> None:
        """Point every live row of ``scope`` at its slot (after a fill or a re-sort)."""
        number = self._number(scope)
        size = scope.size
        live = np.flatnonzero(scope.positions[:size] != DEAD)
        ids = scope.numbers[live]
        bm = ids >= 0
        if np.any(bm):
            self._room(int(ids[bm].max()))
            self.scope_of[ids[bm]] = number
            self.slot_of[ids[bm]] = live[bm]
        for slot in live[~bm]:
            self.other[scope.ids[int(slot)]] = (number, int(slot))

    def get(self, bookmark_id: str) -> tuple[_Scope, int] | None:
        n = id_number(bookmark_id)
        if n < 0:
            found = self.other.get(bookmark_id)
            return (self.scopes[found[0]], found[1]) if found else None
        if n >= len(self.scope_of) or self.scope_of[n] < 0:
            return None
        scope = self.scopes[int(self.scope_of[n])]
        slot = int(self.slot_of[n])
        return (scope, slot) if scope.ids[slot] == bookmark_id else None

    def slot(self, bookmark_id: str) -> int:
        placed = self.get(bookmark_id)
        assert placed is not None
        return placed[1]

    def items(self) -> list[tuple[str, _Scope, int]]:
        placed = [
            (self.scopes[int(self.scope_of[n])], int(self.slot_of[n]))
            for n in np.flatnonzero(self.scope_of >= 0)
        ]
        found = [(scope.ids[slot], scope, slot) for scope, slot in placed]
        found += [(i, self.scopes[number], slot) for i, (number, slot) in self.other.items()]
        return found


def _unplaced() -> Iterator[tuple[int, int]]:
    while True:
        yield -1, 0


def _grown(array: np.ndarray, capacity: int) -> np.ndarray:
    bigger = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger


class BankIndex:
    """Bookmarks by scope and position, with their vectors, for one collection."""

    def __init__(self) -> None:
        self._scopes: dict[str, _Scope] = {}
        self._where = _Places()
        """id -> (its scope, its slot there)."""
        self._records: OrderedDict[str, str] = OrderedDict()
        """Recent whole records as their stored JSON (parsing one is 5x cheaper than a copy)."""
        self._reader: RecordFile | None = None
        """The records file rows' offsets point into (None: records are read from Chroma)."""
        self._products: OrderedDict[tuple[str, bytes], _Products] = OrderedDict()
        """Recent queries' products with a scope's rows (see :meth:`nearest_many`)."""
        self.next_number = 0
        """The next id number the bank hands out (past every stored id)."""
        self.stamp: str | None = None
        """The collection's write stamp these rows reflect (None: not filled yet)."""
        self.stale = False
        """Set when a bank is opened on the collection: the next use checks the stamp."""
        self._lock = threading.Lock()

    def refill(
        self,
        scopes: Iterable[ScopeArrays],
        next_number: int,
        stamp: str | None,
        reader: RecordFile | None = None,
    ) -> None:
        """Forget everything, then hold ``scopes`` (what Chroma holds now, sorted per scope).

        ``reader`` is the records file the scopes' offsets point into.
        """
        with self._lock:
            self._scopes.clear()
            self._where.clear()
            self._records.clear()
            self._products.clear()
            if self._reader is not None and self._reader is not reader:
                self._reader.close()
            self._reader = reader
            self.next_number = next_number
            for arrays in scopes:
                if not arrays.ids:
                    continue
                scope = self._scopes[arrays.name] = _Scope.of(arrays)
                self._locate(scope)
                top = int(arrays.numbers[: len(arrays.ids)].max(initial=-1)) + 1
                self.next_number = max(self.next_number, top)
            self.stamp = stamp
        self.stale = False

    def _locate(self, scope: _Scope) -> None:
        self._where.locate(scope)

    def snapshot(self) -> list[ScopeArrays]:
        """Every scope's live rows in sorted order, without copying a matrix.

        Each :class:`ScopeArrays` holds the scope's small arrays already sorted and its whole
        matrix with ``order``, the slots to read in that order: the writer gathers the rows a
        few thousand at a time. Sorting a large scope in memory would copy its matrix (50 MB
        at 100,000 bookmarks) at the moment a bulk import's memory is highest. Valid while the
        caller holds the bank's write lock (no row moves meanwhile).
        """
        with self._lock:
            views = []
            for scope in self._scopes.values():
                order = scope.sorted_slots()
                views.append(
                    ScopeArrays(
                        scope.name,
                        [scope.ids[i] for i in order],
                        [scope.questions[i] for i in order],
                        scope.positions[order],
                        scope.numbers[order],
                        scope.head,
                        scope.offsets[order],
                        scope.lengths[order],
                        order,
                        scope.tail,
                    )
                )
            return views

    def attach(
        self, reader: RecordFile, places: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    ) -> None:
        """Point the rows of the last :meth:`snapshot` at a rewritten records file.

        ``places``: per scope, the snapshot's ``order`` (slots) and the new offsets and lengths
        of those rows. The caller holds the bank's write lock from the snapshot to here, so no
        row moved meanwhile.
        """
        with self._lock:
            for name, (order, offsets, lengths) in places.items():
                scope = self._scopes.get(name)
                if scope is not None:
                    scope.offsets[order] = offsets
                    scope.lengths[order] = lengths
            old, self._reader = self._reader, reader
        if old is not None and old is not reader:
            old.close()

    def close(self) -> None:
        """Close the records file (the index is being dropped)."""
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def reader(self) -> RecordFile | None:
        """The records file the rows point into (None: the index has no files)."""
        with self._lock:
            return self._reader

    def use_reader(self, reader: RecordFile) -> None:
        """Rows written from now on point into ``reader``'s file (a rebuild's new file)."""
        with self._lock:
            if self._reader is not None and self._reader is not reader:
                self._reader.close()
            self._reader = reader

    def _tidy(self, scope: _Scope) -> None:
        """Sort ``scope`` again (live rows only); its cached products are void."""
        tidy = _Scope.of(scope.arrays())
        tidy.generation = scope.generation + 1
        self._scopes[scope.name] = tidy
        self._locate(tidy)

    def __len__(self) -> int:
        return len(self._where)

    def put(
        self,
        rows: Iterable[IndexedBookmark],
        places: Iterable[tuple[int, int]] | None = None,
        *,
        tidy: bool = True,
    ) -> None:
        """Add or replace rows (a bookmark's position moves forward as it syncs).

        ``places``: where each row's record now is in the records file (offset, length).
        ``tidy=False`` (a bulk import) leaves re-sorting to the snapshot that follows: every
        re-sort copies a scope, and a bulk import would re-sort each scope a dozen times.
        """
        with self._lock:
            touched = set()
            for row, place in zip(rows, places or _unplaced(), strict=False):
                scope = self._put(row)
                slot = self._where.slot(row.id)
                scope.offsets[slot], scope.lengths[slot] = place
                touched.add(scope)
            for scope in touched if tidy else ():
                if self._scopes.get(scope.name) is scope and scope.untidy():
                    self._tidy(scope)

    def _put(self, row: IndexedBookmark) -> _Scope:
        self.next_number = max(self.next_number, id_number(row.id) + 1)
        placed = self._where.get(row.id)
        if placed is not None and placed[0].name == row.scope:
            scope, slot = placed
            self._where.set(row.id, scope, scope.replace(slot, row))
            return scope
        if placed is not None:  # a changed scope: leave the old slot dead
            placed[0].kill(placed[1])
        scope = self._scopes.get(row.scope) or self._scopes.setdefault(
            row.scope, _Scope(row.scope, len(row.vector))
        )
        self._where.set(row.id, scope, scope.append(row))
        return scope

    def reserve(self) -> int:
        """A fresh id number, never handed out before in this process nor stored."""
        with self._lock:
            number = self.next_number
            self.next_number += 1
            return number

    def remember(self, records: Iterable[tuple[str, str]]) -> None:
        """Keep these whole records (``(id, stored JSON)``); the oldest are forgotten."""
        with self._lock:
            for bookmark_id, record in records:
                self._records[bookmark_id] = record
                self._records.move_to_end(bookmark_id)
            while len(self._records) > RECORDS_KEPT:
                self._records.popitem(last=False)

    def record(self, bookmark_id: str) -> Bookmark | None:
        """A fresh copy of the stored record of ``bookmark_id``, if the index can tell it.

        From the recent records or the records file (one ``pread``: no Chroma call, nothing
        kept in memory); None when neither has it (an index without files): the caller reads
        Chroma.
        """
        from personae.memory.bookmarks.bookmark import Bookmark

        with self._lock:
            record: str | bytes | None = self._records.get(bookmark_id)
            placed = self._where.get(bookmark_id)
            reader = self._reader
            offset = int(placed[0].offsets[placed[1]]) if placed else -1
            length = int(placed[0].lengths[placed[1]]) if placed else 0
        if record is None and reader is not None and offset >= 0:
            record = reader.read(offset, length)
        return None if record is None else Bookmark.model_validate_json(record)

    def get(self, bookmark_id: str) -> IndexedBookmark | None:
        """The row of ``bookmark_id`` (None if unknown)."""
        with self._lock:
            placed = self._where.get(bookmark_id)
            return placed[0].row(placed[1]) if placed else None

    def rows(self) -> Iterator[IndexedBookmark]:
        """Every live row (tests compare a rebuilt index with a loaded one)."""
        with self._lock:
            placed = sorted(self._where.items(), key=lambda item: item[0])
        for _, scope, slot in placed:
            yield scope.row(slot)

    def count(self, scope: str, synced_by: int) -> int:
        """How many bookmarks of ``scope`` are synced by ``synced_by``."""
        with self._lock:
            found = self._scopes.get(scope)
            if found is None:
                return 0
            return int(np.count_nonzero(found.positions[: found.size] <= synced_by))

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

        Only the sorted rows whose sort key is at most ``synced_by`` (a prefix) and the tail
        are multiplied; the exact position filter then drops rows that moved past it. One
        matrix-vector product per query: on one BLAS thread three of them (6 ms over a
        33,000-row scope) beat one matrix-matrix product with three columns (9 ms). A step
        mostly asks the questions earlier steps asked (the agent reuses their bookmarks), and a
        row's vector never changes while its position moves on, so the products of the last
        :data:`PRODUCTS_KEPT` queries are kept per scope: a repeated query computes only the
        rows it has not met yet. The lock is held only to take the scope's arrays: the
        products (numpy releases the GIL) run while other threads search or write.
        """
        return [
            [(view.row(slot), distance) for slot, distance in ranked]
            for view, ranked in self._search(vectors, scope, synced_by, size)
        ]

    def nearest_questions(
        self, vectors: Sequence[np.ndarray], scope: str, synced_by: int, size: int
    ) -> list[list[tuple[str, str, float]]]:
        """:meth:`nearest_many` as ``(id, question, distance)``: what candidate search reads."""
        return [
            [(view.ids[slot], view.questions[slot], distance) for slot, distance in ranked]
            for view, ranked in self._search(vectors, scope, synced_by, size)
        ]

    def _search(
        self, vectors: Sequence[np.ndarray], scope: str, synced_by: int, size: int
    ) -> list[tuple[_View, list[tuple[int, float]]]]:
        with self._lock:
            found = self._scopes.get(scope)
            if found is None or size <= 0 or not len(vectors):
                return [(_View.empty(), []) for _ in vectors]
            view = _View.of(found)
        prefix = int(np.searchsorted(view.keys, synced_by, side="right"))
        head_ok = np.flatnonzero(view.positions[:prefix] <= synced_by)
        tail_ok = np.flatnonzero(view.positions[view.base : view.count] <= synced_by)
        slots = np.concatenate([head_ok, view.base + tail_ok])
        ranked = []
        for vector in vectors:
            head, tail = self._products_for(view, np.asarray(vector, dtype=np.float32), prefix)
            distances = 1.0 - np.concatenate([head[head_ok], tail[tail_ok]])
            ranked.append((view, _ranked(distances, slots, view, size)))
        return ranked

    def _products_for(
        self, view: _View, query: np.ndarray, prefix: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The query's products with (at least) the rows ``[0, prefix)`` and the whole tail."""
        key = (view.name, query.tobytes())
        with self._lock:
            cached = self._products.get(key)
        if cached is None or cached.generation != view.generation:
            cached = _Products(view.generation, np.zeros(0, np.float32), np.zeros(0, np.float32))
        head, tail = cached.head, cached.tail
        with one_blas_thread():
            # Products over the scope's contiguous matrices (no copy), only rows not met yet.
            if prefix > len(head):
                head = np.concatenate([head, view.head[len(head) : prefix] @ query])
            if view.count - view.base > len(tail):
                fresh = view.tail[len(tail) : view.count - view.base] @ query
                tail = np.concatenate([tail, fresh])
        with self._lock:
            self._products[key] = _Products(view.generation, head, tail)
            self._products.move_to_end(key)
            while len(self._products) > PRODUCTS_KEPT:
                self._products.popitem(last=False)
        return head, tail

    def synced_questions(self, scope: str, synced_by: int) -> list[tuple[str, str, int]]:
        """``(id, question, number)`` of the rows of ``scope`` synced to ``[1, synced_by]``.

        In creation order: what a ranking of the whole scope (not nearest first) reads.
        """
        with self._lock:
            found = self._scopes.get(scope)
            if found is None:
                return []
            positions = found.positions[: found.size]
            slots = np.flatnonzero((positions >= 1) & (positions <= synced_by))
            rows = [(found.ids[s], found.questions[s], int(found.numbers[s])) for s in slots]
        return sorted(rows, key=lambda row: row[2])

    def between(self, low: int, high: int) -> list[str]:
        """Ids of the bookmarks synced to a position in ``[low, high]``."""
        with self._lock:
            scopes = list(self._scopes.values())
            return [
                scope.ids[int(slot)]
                for scope in scopes
                for slot in np.flatnonzero(
                    (scope.positions[: scope.size] >= max(0, low))
                    & (scope.positions[: scope.size] <= high)
                )
            ]


@dataclass(frozen=True)
class _View:
    """A scope's arrays as one search reads them (taken under the lock, read outside it)."""

    name: str
    head: np.ndarray
    tail: np.ndarray
    positions: np.ndarray
    numbers: np.ndarray
    keys: np.ndarray
    ids: Sequence[str]
    questions: Sequence[str]
    base: int
    count: int
    generation: int

    @classmethod
    def of(cls, scope: _Scope) -> _View:
        return cls(
            scope.name,
            scope.head,
            scope.tail,
            scope.positions,
            scope.numbers,
            scope.keys,
            scope.ids,
            scope.questions,
            scope.base,
            scope.size,
            scope.generation,
        )

    @classmethod
    def empty(cls) -> _View:
        nothing, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, 0), np.float32)
        return cls("", matrix, matrix, nothing, nothing, nothing, [], [], 0, 0, 0)

    def row(self, slot: int) -> IndexedBookmark:
        return IndexedBookmark(
            self.ids[slot],
            self.name,
            int(self.positions[slot]),
            self.questions[slot],
            (self.head[slot] if slot < self.base else self.tail[slot - self.base]).copy(),
        )


def _ranked(
    distances: np.ndarray, slots: np.ndarray, view: _View, size: int
) -> list[tuple[int, float]]:
    """The ``size`` nearest of ``slots`` (``distances`` beside them), ties in creation order.

    Exact at the boundary too: of rows tied with the ``size``-th distance, the earliest made
    are kept, so the result never depends on how the rows happen to be laid out.
    """
    if not len(slots):
        return []
    if len(slots) > size:
        kth = np.partition(distances, size - 1)[size - 1]
        inside = np.flatnonzero(distances < kth)
        tied = np.flatnonzero(distances == kth)
        tied = tied[np.argsort(view.numbers[slots[tied]], kind="stable")[: size - len(inside)]]
        keep = np.concatenate([inside, tied])
        slots, distances = slots[keep], distances[keep]
    order = np.lexsort((view.numbers[slots], distances))
    return [(int(slots[i]), float(distances[i])) for i in order]


_INDEXES: dict[str, BankIndex] = {}
_REGISTRY_LOCK = threading.Lock()


def index_for(collection_id: str, bring_up_to_date: Callable[[BankIndex], None]) -> BankIndex:
    """The process's index of a collection, brought up to date when new or marked stale.

    ``bring_up_to_date(index)`` is the bank's: it checks the collection's write stamp, then
    keeps, loads or rebuilds the index.
    """
    with _REGISTRY_LOCK:
        found = _INDEXES.get(collection_id)
        if found is None:
            found = _INDEXES[collection_id] = BankIndex()
            found.stale = True
        if found.stale:
            bring_up_to_date(found)
            found.stale = False
        return found


def mark_stale(collection_id: str) -> None:
    """The collection was (re)opened: another process may have written it since it was read.

    The index is checked at its next use, in place, so every bank object sharing it sees the
    same, current rows. Opening is rare (the graphs open a bank once per process).
    """
    with _REGISTRY_LOCK:
        found = _INDEXES.get(collection_id)
        if found is not None:
            found.stale = True


def forget_bank_indexes() -> None:
    """Drop every index (benchmarks measuring a fresh process; tests simulating a restart)."""
    with _REGISTRY_LOCK:
        for index in _INDEXES.values():
            index.close()
        _INDEXES.clear()


class RecordFile:
    """The bank's whole records, one after another, read back by offset with ``pread``.

    Append-only: a write adds the new versions at the end (the rows point at them) and a
    snapshot rewrites the file without the old ones when they are more than half of it.
    ``pread`` rather than a memory map: a read leaves nothing resident in the process.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``."""
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise OSError(f"{self.path}: short read at {offset}")
        return data

    def append(self, records: Iterable[str]) -> list[tuple[int, int]]:
        """Write ``records`` at the end (flushed to disk); their (offset, length)."""
        places, chunks = [], []
        offset = self.size
        for record in records:
            data = record.encode("utf-8")
            places.append((offset, len(data)))
            chunks.append(data)
            offset += len(data)
        os.pwrite(self._fd, b"".join(chunks), self.size)
        os.fsync(self._fd)
        self.size = offset
        return places

    def close(self) -> None:
        """Close the file (reads already made stay valid)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


clears_on_reset("memory.bookmarks.bank_index.indexes", forget_bank_indexes)
