"""Atomic file writes, so an interrupted or failed run never leaves half-written output."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _read_umask() -> int:
    """The process umask (read once at import: setting it is the only way to read it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp creates 0600 files; outputs get the mode a plain open() would have given them.
_FILE_MODE = 0o666 & ~_read_umask()


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as pretty UTF-8 JSON, atomically."""
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def append_jsonl(path: Path, record: Any) -> None:
    """Append one JSON line and flush it, so a crash loses at most the line being written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
