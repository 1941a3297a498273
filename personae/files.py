"""Atomic file writes, so an interrupted or failed run never leaves half-written output."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from personae.errors import InputError


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
