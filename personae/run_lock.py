"""One run per key, whoever asks: an OS file lock that dies with the process holding it.

A run that pays for model calls (a character's profile, a BOOKMARKS step on one memory, an
AMADEUS index of one folder) holds ``<folder>/.locks/<key>.lock`` for as long as it runs. The
lock is ``flock`` on an open file: it holds across processes (the CLI, a batch row, a web job,
an MCP call, ``--server`` clients on one folder) and across tasks of one process (each
acquisition opens its own file, and ``flock`` locks the open file, not the process), and the
kernel drops it when the holder's file is closed, which ``kill -9`` does too: no stale lock
is ever left for a person to delete. The holder writes who it is (pid, since when, its
command) into the file, which a second run reads without the lock to say who it waits for.

Where ``fcntl`` is missing (Windows) the lock is this process's only (an in-memory set), as
:func:`personae.files.append_jsonl`'s is: the CLI runs there, the servers do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from personae.errors import RunLockedError
from personae.progress import Progress, quiet

LOCKS_DIR = ".locks"
"""The folder of a run folder's lock files (kept: removing one would race a waiter)."""
POLL_SECONDS = 0.05
"""How often a waiting run tries the lock again (a free lock is taken at once)."""
_HELD_HERE: set[Path] = set()
"""Without ``fcntl``: the lock files this process holds."""


@dataclass(frozen=True)
class Holder:
    """Who holds a key: what a waiting run says."""

    pid: int
    since: str
    """UTC time the holder took the lock (ISO 8601, to the second)."""
    command: str

    def describe(self) -> str:
        """``pid 4242 since 2026-12-08T00:55:03+00:00 (personae profile Kenshiro)``."""
        return f"pid {self.pid} since {self.since}" + (f" ({self.command})" if self.command else "")


@dataclass(frozen=True)
class HeldLock:
    """A lock this run holds."""

    key: str
    path: Path
    waited_for: Holder | None
    """Who held the key when this run asked (``None``: it was free)."""
    waited_seconds: float = 0.0

    @property
    def waited(self) -> bool:
        """Another run held the key first: its work may now be done (check before paying)."""
        return self.waited_for is not None


def lock_path(folder: Path, key: str) -> Path:
    """The lock file of ``key`` under ``folder`` (``key`` is a folder-safe name)."""
    return folder / LOCKS_DIR / f"{key}.lock"


def read_holder(path: Path) -> Holder | None:
    """Who holds (or last held) the lock at ``path``, read without taking it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "null")
        return Holder(int(data["pid"]), str(data["since"]), str(data.get("command", "")))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # no file, or the holder is writing it this instant


def _try_lock(handle: IO[str], path: Path) -> bool:
    """Take the lock on ``handle`` if it is free; never blocks."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: this process's runs only
        if path in _HELD_HERE:
            return False
        _HELD_HERE.add(path)
        return True
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(handle: IO[str], path: Path) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        _HELD_HERE.discard(path)
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _command() -> str:
    """This process's command line, shortened (what a waiting run shows of its holder)."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return " ".join([program, *sys.argv[1:]])[:200]


def _write_holder(handle: IO[str]) -> None:
    holder = {
        "pid": os.getpid(),
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": _command(),
    }
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(holder))
    handle.flush()


@asynccontextmanager
async def run_lock(
    folder: Path,
    key: str,
    *,
    what: str,
    wait: bool = True,
    progress: Progress = quiet,
    poll: float = POLL_SECONDS,
) -> AsyncIterator[HeldLock]:
    """Hold ``key``'s lock under ``folder`` for the ``async with`` block.

    ``what`` names the run in the lines (``the profile of kenshiro``). When another run holds
    the key, ``progress`` gets one line naming it, and this run waits for it (polling, so the
    event loop and Ctrl-C stay live); with ``wait=False`` it raises instead. A run that waited
    should look whether the holder finished its work before paying for it again
    (:attr:`HeldLock.waited`).

    Raises:
        RunLockedError: ``wait=False`` and another run holds the key (exit 3).
    """
    path = lock_path(folder, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+", encoding="utf-8")
    try:
        holder = None
        started = time.monotonic()
        if not _try_lock(handle, path):
            holder = read_holder(path) or Holder(0, "an unknown time", "")
            who = holder.describe() if holder.pid else "another process"
            if not wait:
                raise RunLockedError(
                    f"{what} is running in {who}",
                    "wait for it to end, or leave out --no-wait to wait for it",
                )
            progress(f"waiting: {what} is running in {who}; this run starts when it ends")
            while not _try_lock(handle, path):
                await asyncio.sleep(poll)
        _write_holder(handle)
        try:
            yield HeldLock(key, path, holder, time.monotonic() - started)
        finally:
            with contextlib.suppress(OSError):
                handle.seek(0)
                handle.truncate()
            _unlock(handle, path)
    finally:
        handle.close()
