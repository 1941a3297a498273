"""The bank index on disk, beside the Chroma collection: a process opens a 100k bank in seconds.

Why: filling the in-process index from Chroma reads every vector back (32-42 s at 100,000
bookmarks, 14 s of CPU, and 55 s of CPU at 300,000) and every CLI step is a fresh process. The
index is small and flat (:class:`~personae.memory.bookmarks.bank_index.ScopeArrays`), so it is
kept in two files in ``<memory dir>/bank-index/``, named by the collection's name and id:

- ``<name>.<id>.npz``: a snapshot (numpy arrays: per scope the sorted vectors, positions,
  creation numbers, ids and questions; a JSON header with the format version, collection id,
  embedding, dimensions, row count, next id number and the collection's write stamp). Stored
  uncompressed, each matrix aligned to 64 bytes in the file, so a process maps the vectors
  (copy-on-write) instead of reading them: a search makes resident only the pages it reads;
- ``<name>.<id>.log.jsonl``: the rows each write stored since, one line per write, with the
  write stamp it gave the collection;
- ``<name>.<id>.<token>.records``: every whole record (its stored JSON) one after another,
  appended by each write, so a search reads its winners here (one ``pread`` each) instead of
  asking Chroma (2-8 ms a search at 100,000 bookmarks, and Chroma's caches resident after).

Checked against the collection before use: the format version, the collection id, the
embedding and the stamp of the last complete write (the bank changes the collection's stamp
before every write, so a write the files missed or a crash between Chroma and the log leaves
them stale). Not the row count: counting makes Chroma load the collection's segments (50 MB at
100,000 bookmarks) into a process that otherwise never touches them; a program writing the
collection without changing the stamp (an older Personae) is not detected. Anything that does
not match, or a
missing or unreadable file, means the index is rebuilt from Chroma and written again. A
snapshot replaces the log when the log passes an eighth of the snapshot (and after a bulk
import), so loading stays one file read plus a short log.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import os
import secrets
import struct
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from personae.files import append_jsonl, read_jsonl
from personae.memory.bookmarks.bank_index import (
    TAIL_MIN,
    BankIndex,
    IndexedBookmark,
    RecordFile,
    ScopeArrays,
    Texts,
)

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
"""Bumped whenever the files' layout or meaning changes: older files are rebuilt."""
REWRITE_SLACK = 1 << 20
"""A snapshot rewrites the records file when old versions pass half of it plus this."""
LOG_MIN_BYTES = 8 << 20
"""The log is folded into a new snapshot when it passes max(this, snapshot size / 8)."""


@dataclass(frozen=True)
class Expected:
    """What the files must match to stand for the collection as it is now."""

    collection: str
    """The collection's id."""
    embedding: str
    stamp: str


class IndexFile:
    """The snapshot and log of one collection's index in ``folder``."""

    def __init__(self, folder: Path, name: str, collection_id: str) -> None:
        self.folder = folder
        self._base = f"{name}.{collection_id}"
        self.snapshot_path = folder / f"{self._base}.npz"
        self.log_path = folder / f"{self._base}.log.jsonl"

    def new_records(self) -> RecordFile:
        """An empty records file of a new name (a rebuild or a rewrite fills it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return RecordFile(str(self.folder / f"{self._base}.{secrets.token_hex(4)}.records"))

    def load(self, index: BankIndex, expected: Expected) -> bool:
        """Fill ``index`` from the files if they match ``expected``; False otherwise."""
        try:
            header, scopes = self._read_snapshot()
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as error:
            if self.snapshot_path.exists():
                logger.warning(
                    "bank index %s unreadable, rebuilding: %s", self.snapshot_path, error
                )
            return False
        if (
            header.get("version") != FORMAT_VERSION
            or header.get("collection") != expected.collection
            or header.get("embedding") != expected.embedding
        ):
            return False
        records = self.folder / str(header.get("records", ""))
        if not header.get("records") or not records.is_file():
            return False
        index.refill(
            scopes, int(header["next_number"]), str(header["stamp"]), RecordFile(str(records))
        )
        stamp = str(header["stamp"])
        dimensions = int(header["dimensions"]) or None
        try:
            for entry in read_jsonl(self.log_path):
                if entry.get("after") != stamp:
                    continue  # a line from before the snapshot (or of a lost write): not ours
                rows = [_row(r) for r in entry["rows"]]
                if any(len(r.vector) != (dimensions or len(r.vector)) for r in rows):
                    raise ValueError("a logged vector has other dimensions than the snapshot")
                dimensions = dimensions or (len(rows[0].vector) if rows else None)
                index.put(rows, [(int(r[5]), int(r[6])) for r in entry["rows"]])
                stamp = str(entry["stamp"])
        except (ValueError, KeyError, TypeError, binascii.Error) as error:
            logger.warning("bank index log %s unreadable, rebuilding: %s", self.log_path, error)
            return False
        index.stamp = stamp
        if stamp != expected.stamp:
            logger.info(
                "bank index %s is stale (stamp %s, the collection's %s), rebuilding",
                self.snapshot_path.name,
                stamp,
                expected.stamp,
            )
            return False
        return True

    def _read_snapshot(self) -> tuple[dict[str, Any], list[ScopeArrays]]:
        with zipfile.ZipFile(self.snapshot_path) as archive:
            header = json.loads(_read(archive, "header").tobytes().decode("utf-8"))
            if header.get("version") != FORMAT_VERSION:
                return header, []
            # Joined, not split into 200,000 strings: see Texts.
            id_text, id_ends = _joined(_read(archive, "ids"), _read(archive, "id_ends"))
            text, ends = _joined(_read(archive, "questions"), _read(archive, "question_ends"))
            scopes, start = [], 0
            for number, (name, size) in enumerate(header["scopes"]):
                end = start + int(size)
                vectors = _mapped(archive, f"vectors_{number}", self.snapshot_path)
                if vectors.shape[1:] != (int(header["dimensions"]),):
                    raise ValueError("the snapshot's vectors disagree with its header")
                scopes.append(
                    ScopeArrays(
                        str(name),
                        Texts.joined(id_text, id_ends, start, end),
                        Texts.joined(text, ends, start, end),
                        _read(archive, f"positions_{number}", headroom=True),
                        _read(archive, f"numbers_{number}", headroom=True),
                        vectors,
                        _read(archive, f"offsets_{number}", headroom=True),
                        _read(archive, f"lengths_{number}", headroom=True),
                    )
                )
                start = end
        if start != len(id_ends) or len(ends) != len(id_ends):
            raise ValueError("the snapshot's rows disagree with its header")
        return header, scopes

    def save(self, index: BankIndex, embedding: str, collection_id: str) -> None:
        """Write a snapshot of ``index`` atomically, then drop the log it replaces.

        The records file is rewritten first when old versions fill more than half of it. The
        vectors are gathered into the file a few thousand rows at a time, in sorted order, so
        writing adds no copy of a matrix to the process's memory.
        """
        scopes = index.snapshot()
        records = index.reader() or self.new_records()
        live = sum(int(s.lengths.sum()) for s in scopes if s.lengths is not None)
        if records.size > 2 * live + REWRITE_SLACK:
            records, scopes = self._rewrite_records(index, records, scopes)
        dimensions = next((s.vectors.shape[1] for s in scopes if len(s.ids)), 0)
        header = {
            "version": FORMAT_VERSION,
            "collection": collection_id,
            "embedding": embedding,
            "stamp": index.stamp,
            "rows": sum(len(s.ids) for s in scopes),
            "dimensions": dimensions,
            "next_number": index.next_number,
            "scopes": [[s.name, len(s.ids)] for s in scopes],
            "records": Path(records.path).name,
        }
        id_blob, id_ends = _blob([i for s in scopes for i in s.ids])
        question_blob, question_ends = _blob([q for s in scopes for q in s.questions])
        small: dict[str, np.ndarray] = {
            "header": np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8),
            "ids": id_blob,
            "id_ends": id_ends,
            "questions": question_blob,
            "question_ends": question_ends,
        }
        for number, scope in enumerate(scopes):
            small[f"positions_{number}"] = scope.positions.astype(np.int64, copy=False)
            small[f"numbers_{number}"] = scope.numbers.astype(np.int64, copy=False)
            offsets, lengths = _places(scope)
            small[f"offsets_{number}"] = offsets
            small[f"lengths_{number}"] = lengths
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{self.snapshot_path.name}.{secrets.token_hex(6)}.tmp"
        try:
            with tmp.open("xb") as handle:
                with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                    for name, array in small.items():
                        with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                            np.lib.format.write_array(member, np.ascontiguousarray(array))
                    for number, scope in enumerate(scopes):
                        aligned = _aligned_entry(f"vectors_{number}.npy", archive.start_dir)
                        with archive.open(aligned, "w", force_zip64=True) as member:
                            _write_rows(member, scope, dimensions)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.snapshot_path)
        finally:
            tmp.unlink(missing_ok=True)
        self.log_path.unlink(missing_ok=True)
        if index.reader() is not records:
            index.use_reader(records)
        for old in self.folder.glob(f"{self._base}.*.records"):
            if old.name != Path(records.path).name:
                old.unlink(missing_ok=True)

    def _rewrite_records(
        self, index: BankIndex, records: RecordFile, scopes: list[ScopeArrays]
    ) -> tuple[RecordFile, list[ScopeArrays]]:
        """A records file with only the versions the rows point at; the rows moved to it."""
        fresh = self.new_records()
        places: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for scope in scopes:
            offsets, lengths = _places(scope)
            kept = [
                records.read(int(o), int(n)).decode("utf-8") if o >= 0 else ""
                for o, n in zip(offsets, lengths, strict=True)
            ]
            moved = fresh.append(kept)
            new_offsets = np.array([o for o, _ in moved], dtype=np.int64)
            new_offsets[offsets < 0] = -1
            new_lengths = np.array([n for _, n in moved], dtype=np.int64)
            order = scope.order if scope.order is not None else np.arange(len(scope.ids))
            places[scope.name] = (order, new_offsets, new_lengths)
        index.attach(fresh, places)
        return fresh, index.snapshot()

    def append(
        self,
        after: str | None,
        stamp: str,
        rows: Iterable[IndexedBookmark],
        places: Iterable[tuple[int, int]],
    ) -> bool:
        """Log one write (the stamp before and after it); True when a snapshot is due.

        ``places``: where each row's record was appended in the records file.
        """
        records = [
            [
                r.id,
                r.scope,
                r.position,
                r.question,
                base64.b64encode(np.asarray(r.vector, np.float32).tobytes()).decode(),
                offset,
                length,
            ]
            for r, (offset, length) in zip(rows, places, strict=True)
        ]
        append_jsonl(self.log_path, {"after": after, "stamp": stamp, "rows": records})
        try:
            log, snapshot = self.log_path.stat().st_size, self.snapshot_path.stat().st_size
        except OSError:
            return True
        return log > max(LOG_MIN_BYTES, snapshot // 8)


_GATHER = 4096
"""Rows gathered per write when a snapshot's vectors are written in sorted order."""


def _write_rows(member: Any, scope: ScopeArrays, dimensions: int) -> None:
    """Write ``scope``'s matrix in sorted order as one ``.npy`` (a few thousand rows at a time)."""
    rows = len(scope.ids)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False}
    np.lib.format.write_array_header_2_0(member, {**header, "shape": (rows, dimensions)})
    for start in range(0, rows, _GATHER):
        member.write(scope.matrix(start, min(rows, start + _GATHER)).tobytes())


ALIGNMENT = 64
"""Where a snapshot's matrices start in the file (a multiple of this): mapped, they are aligned
as numpy and BLAS want them. The ``.npy`` header is itself padded to 64 bytes."""
_ALIGN_EXTRA = 0xD935
"""The zip "extra field" id Android's ``zipalign`` uses for the same padding."""


def _aligned_entry(name: str, offset: int) -> zipfile.ZipInfo:
    """A stored, zip64 member written at ``offset`` whose data starts at a multiple of 64.

    A zip member's data follows its local header (30 bytes, the name, the extra field and, in
    zip64, 20 more bytes); the extra field gets the padding that aligns what follows.
    """
    entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    entry.compress_type = zipfile.ZIP_STORED
    header = 30 + len(name.encode("utf-8")) + 20 + 6
    pad = -(offset + header) % ALIGNMENT
    entry.extra = struct.pack("<HHH", _ALIGN_EXTRA, 2 + pad, ALIGNMENT) + bytes(pad)
    return entry


def _places(scope: ScopeArrays) -> tuple[np.ndarray, np.ndarray]:
    count = len(scope.ids)
    if scope.offsets is None or scope.lengths is None:
        return np.full(count, -1, dtype=np.int64), np.zeros(count, dtype=np.int64)
    return (
        scope.offsets[:count].astype(np.int64, copy=False),
        scope.lengths[:count].astype(np.int64, copy=False),
    )


def _row(record: list[Any]) -> IndexedBookmark:
    bookmark_id, scope, position, question, vector = record[:5]
    array = np.frombuffer(base64.b64decode(vector, validate=True), dtype=np.float32)
    return IndexedBookmark(str(bookmark_id), str(scope), int(position), str(question), array)


def _data_start(archive: zipfile.ZipFile, name: str) -> tuple[int, tuple[int, ...], np.dtype]:
    """Where array ``name``'s bytes start in the snapshot file, its shape and dtype.

    The snapshot's members are stored uncompressed, so each array's bytes lie in the file as
    they are, after the member's local header and the ``.npy`` header.
    """
    info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED or archive.fp is None:
        raise ValueError(f"{name}: not a stored array")
    handle = archive.fp
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ValueError(f"{name}: bad local header")
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    handle.seek(info.header_offset + 30 + name_length + extra_length)
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
    if fortran or dtype.hasobject:
        raise ValueError(f"{name}: unexpected array layout")
    return handle.tell(), tuple(shape), dtype


def _read(archive: zipfile.ZipFile, name: str, headroom: bool = False) -> np.ndarray:
    """Array ``name`` of the snapshot, read from the file straight into its final buffer.

    Read into the array's own buffer (``zipfile``'s reader would hand the bytes over as one
    ``bytes`` object first, a second copy). With ``headroom`` the buffer has room for an eighth
    more rows (at least :data:`~personae.memory.bookmarks.bank_index.TAIL_MIN`) so the next
    writes append without copying it; the spare rows are zero pages the system maps only when
    written.
    """
    start, shape, dtype = _data_start(archive, name)
    handle = cast(io.BufferedIOBase, archive.fp)
    rows = shape[0] if shape else 1
    capacity = rows + max(TAIL_MIN, rows // 8) if headroom else rows
    buffer = np.zeros((capacity, *shape[1:]), dtype=dtype)
    view = memoryview(cast(Any, buffer[:rows])).cast("B")
    done = 0
    while done < len(view):
        got = handle.readinto(view[done:])
        if not got:
            raise EOFError(f"{name}: the snapshot is truncated")
        done += got
    return buffer


def _mapped(archive: zipfile.ZipFile, name: str, path: Path) -> np.ndarray:
    """Matrix ``name`` of the snapshot mapped from the file, copy-on-write.

    Why: a process then holds only the pages its searches read (a search at target q reads the
    rows synced by q: a prefix of each scope), not every vector of the bank (150 MB at 100,000
    bookmarks); an index write into a row changes the process's copy of that page, never the
    file. A matrix not aligned in the file (written before :data:`ALIGNMENT`) is read instead.
    """
    start, shape, dtype = _data_start(archive, name)
    if len(shape) != 2 or dtype != np.float32:
        raise ValueError(f"{name}: not a float32 matrix")
    size = shape[0] * shape[1] * dtype.itemsize
    if start + size > path.stat().st_size:
        raise EOFError(f"{name}: the snapshot is truncated")
    if start % ALIGNMENT or not size:
        return _read(archive, name)
    mapped = np.memmap(path, dtype=dtype, mode="c", offset=start, shape=shape)
    return np.asarray(mapped)  # a plain array over the map (which it keeps alive)


def _blob(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``texts`` as one UTF-8 byte array and the character offset where each one ends."""
    joined = "".join(texts)
    ends = np.cumsum([len(t) for t in texts], dtype=np.int64)
    return np.frombuffer(joined.encode("utf-8"), dtype=np.uint8), ends


def _joined(blob: np.ndarray, ends: np.ndarray) -> tuple[str, np.ndarray]:
    """The text of a :func:`_blob` and its ends, checked to agree."""
    text = blob.tobytes().decode("utf-8")
    if len(ends) and (int(ends[-1]) != len(text) or np.any(np.diff(ends) < 0)):
        raise ValueError("the snapshot's strings disagree with their ends")
    return text, ends
