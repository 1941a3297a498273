"""Atomic file writes, so an interrupted or failed run never leaves half-written output.

And the readers every user-supplied text and JSON file goes through, so a file that is not
UTF-8, starts with a byte-order mark, nests JSON 100,000 deep or holds ``1e309`` gives one
line naming the file and the fix (exit 2), never a traceback or an infinite score.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import math
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from personae.errors import InputError

_APPEND_LOCK = threading.Lock()
"""Where ``fcntl`` is missing, :func:`append_jsonl`'s turns within this process."""

logger = logging.getLogger(__name__)

UTF8_FIX = "save the file as UTF-8 (most editors: Save As / Encoding: UTF-8)"


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and an atomic rename.

    The temporary file is opened with mode ``"x"`` (exclusive create) rather than made by
    ``tempfile.mkstemp``, whose files are 0600: the output gets the mode a plain ``open()``
    gives, with the umask in force at the time of the write.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    handle = tmp.open("x", encoding="utf-8")
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


STALE_TEMP_SECONDS = 60.0
"""Age after which a write's temporary file is left over from a killed process: a write takes
milliseconds, so a minute-old one has no writer any more."""
_TEMPORARY = re.compile(r"^\..+\.[0-9a-f]{16}\.tmp$")
"""The names :func:`write_text_atomic` gives its temporary files."""


def remove_stale_temporaries(folder: Path, older_than: float = STALE_TEMP_SECONDS) -> int:
    """Delete the temporary files a killed :func:`write_text_atomic` left under ``folder``.

    ``kill -9`` mid-write leaves ``.NAME.<hex>.tmp`` beside the entry it was writing, and the
    rerun, writing other temporaries, never removes it. Only files older than ``older_than``
    seconds go (a running writer's file is younger). Returns how many were removed.
    """
    removed = 0
    cutoff = time.time() - older_than
    for path in folder.rglob(".*.tmp"):
        with contextlib.suppress(OSError):  # gone already, or not ours to remove
            if _TEMPORARY.match(path.name) and path.lstat().st_mtime < cutoff:
                path.unlink()
                removed += 1
    return removed


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as pretty UTF-8 JSON, atomically."""
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def append_jsonl(path: Path, record: Any) -> None:
    """Append one JSON line and flush it, so a crash loses at most the line being written.

    After a kill mid-line the file ends without a newline: the record then starts a line of
    its own, so it is not glued to the torn one (which :func:`read_jsonl` skips).

    Appenders take turns (an exclusive ``flock`` on the file, threads and processes alike):
    the check for a torn end reads the last byte, and a check made while another appender's
    line was half-copied saw a torn end that was not, and started a blank line (an ARCANE
    evaluation's concurrent units left dozens in ``results.jsonl``).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False) + "\n"
    with path.open("a+b") as handle, _exclusive(handle):
        torn = handle.tell() > 0 and not _ends_with_newline(handle)
        handle.write((("\n" if torn else "") + line).encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())


@contextlib.contextmanager
def _exclusive(handle: BinaryIO) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``handle``'s file (a process-wide lock without ``fcntl``)."""
    try:
        import fcntl
    except ImportError:  # Windows: appenders in one process are the case that matters there
        with _APPEND_LOCK:
            yield
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _ends_with_newline(handle: BinaryIO) -> bool:
    handle.seek(-1, os.SEEK_END)
    return bool(handle.read(1) == b"\n")


def read_jsonl(
    path: Path, *, strict: bool = False, fix: str = "fix or delete that line"
) -> list[dict[str, Any]]:
    """The JSON objects of ``path``, one per line; none if it is missing.

    By default for a file :func:`append_jsonl` wrote: a line that is not a JSON object (torn by
    a kill mid-write) is skipped, since the run that wrote it redoes that record, so reading on
    is right. ``strict`` for a file written whole (atomically) or given by the user, where a
    bad line is damage to report: :class:`InputError` naming the file and line, with ``fix``.
    Every JSONL file Personae reads goes through here or :func:`parse_jsonl`, so the rule for
    torn and bad lines is written once.
    """
    if not path.is_file():
        return []
    if strict:
        rows = parse_jsonl(read_text(path), str(path), fix)
        for number, row in rows:
            if not isinstance(row, dict):
                raise InputError(f"{path}:{number} is not a JSON object", fix)
        return [row for _, row in rows]
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        elif line.strip():
            logger.info("skipped %s:%d, not a JSON object (torn by a kill?)", path, number)
    return records


def parse_jsonl(
    text: str, where: str, fix: str = "fix or delete that line"
) -> list[tuple[int, Any]]:
    """Each non-blank line of ``text`` with its number, parsed with :func:`parse_json`.

    For JSONL a user gives (a storyline, a dataset): a bad line is an :class:`InputError`
    naming ``where:number``. Values are returned as they are; the caller checks their shape.
    """
    return [
        (number, parse_json(line, f"{where}:{number}", fix))
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


def require_file(path: Path, label: str, fix: str, *, pipe_ok: bool = False) -> None:
    """``InputError`` unless ``path`` is a file: a folder is named as one, not "missing".

    ``pipe_ok``: a pipe is accepted too (``--references <(printf ...)``), for a caller that
    reads the file exactly once (a second read of a pipe would wait forever).
    """
    if path.is_dir():
        raise InputError(f"{label} {path} is a folder, not a file", fix)
    if not path.exists():
        raise InputError(f"{label} {path} does not exist", fix)
    if pipe_ok and stat.S_ISFIFO(path.stat().st_mode):
        return
    if not path.is_file():
        raise InputError(f"{label} {path} is not a regular file", fix)


def read_text(path: Path, fix: str = UTF8_FIX) -> str:
    """The UTF-8 text of ``path``, a leading byte-order mark dropped; ``InputError`` otherwise."""
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file", "pass the file's path")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"cannot read {path} ({error.strerror or error})", fix) from None
    return decode_text(data, str(path))


def decode_text(data: bytes, where: str) -> str:
    """``data`` decoded as UTF-8 (BOM dropped); the error names the first bad byte's offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{where} is not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})",
            UTF8_FIX,
        ) from None


class _NotFinite(ValueError):
    """A JSON number Python would read as infinity or NaN."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"the number {text[:40]} is out of range")
    return value


def _no_constant(text: str) -> float:
    raise _NotFinite(f"{text} is not a JSON number")


def parse_json(text: str | bytes, where: str, fix: str = "fix or re-create the file") -> Any:
    """``text`` parsed as strict JSON: finite numbers only, bounded nesting.

    ``where`` names the file (and line) in the one-line error. Python's parser reads ``1e309``
    as infinity and ``NaN``/``Infinity`` as floats, and recurses once per nesting level.
    """
    if isinstance(text, bytes):
        text = decode_text(text, where)
    text = text.removeprefix("\ufeff")
    try:
        return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        problem = f"{error.msg} at line {error.lineno} column {error.colno}"
    except RecursionError:
        problem = "nested too deeply"
    except _NotFinite as error:
        problem = str(error)
    except ValueError:  # Python refuses integers of over 4300 digits
        problem = "a number has too many digits"
    raise InputError(f"{where} is not valid JSON ({problem})", fix)


def read_json(path: Path, fix: str = "fix or re-create the file") -> Any:
    """The JSON document in ``path`` (UTF-8, BOM allowed), read with :func:`parse_json`."""
    return parse_json(read_text(path), str(path), fix)


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a UTF-8 CSV file (BOM allowed); ``InputError`` if unreadable.

    Rows are read eagerly so a malformed line fails here, with the file named, rather than
    half-way through a caller's loop. Missing cells are empty strings.
    """
    text = read_text(path)
    try:
        # strict: an unbalanced quote is an error, not one name running to the end of the file
        reader = csv.DictReader(io.StringIO(text, newline=""), restval="", strict=True)
        rows = [{k: v or "" for k, v in row.items() if isinstance(k, str)} for row in reader]
    except csv.Error as error:
        raise InputError(f"{path} is not a readable CSV file ({error})", "fix the file") from None
    return list(reader.fieldnames or []), rows


CACHE_FIX = "set PERSONAE_CACHE_DIR to a folder you can write to"
"""The fix named when the cache folder is unusable."""


def check_writable_dir(path: Path, label: str, fix: str | None = None) -> None:
    """Make sure ``path`` is (or can become) a folder we can write to; else one-line ``InputError``.

    Called by the commands before any model call or fetch, so an unusable ``--out``,
    ``--memory`` or ``PERSONAE_CACHE_DIR`` (read-only, a file, under a file) fails at once
    instead of as a traceback after paid work. Nothing is created: a probe file is written and
    removed in the folder, or in its nearest existing ancestor when it does not exist yet
    (permission bits alone do not tell: root ignores them, read-only mounts do not show).
    """
    fix = fix or f"pass a folder you can write to as {label}"
    ancestor = next((p for p in (path, *path.parents) if p.exists() or p.is_symlink()), Path("."))
    if not ancestor.is_dir():
        where = "" if ancestor == path else f" ({ancestor} is a file)"
        raise InputError(f"{label} {path} is not a folder{where}", fix)
    probe = ancestor / f".personae-probe-{secrets.token_hex(4)}"
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InputError(f"{label} {path} is not writable ({reason})", fix) from None


def check_writable_file(path: Path, label: str) -> None:
    """Make sure the file ``path`` can be written (its folder writable, not itself a folder)."""
    if path.is_dir():
        raise InputError(f"{label} {path} is a folder", f"pass a file path as {label}")
    check_writable_dir(path.parent, label)
