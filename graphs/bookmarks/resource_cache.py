"""One cache for what graphs open once per storyline version and memory folder, then reuse.

The benchmark invokes a graph once per test instance, thousands of times on one storyline:
reopening Chroma, reparsing the storyline or rebuilding an index on every step would dominate
the run. The BOOKMARKS resources and the baselines' stores are all keyed by the same
:class:`StorylineKey`: the resolved memory folder, the resolved storyline file and its version
(its mtime, so an edited file is opened afresh) and the Chroma server the run's context names
(``chroma_host``/``chroma_port``, from ``CHROMA_HOST``/``CHROMA_PORT`` at the edge), so
switching servers never reuses a client of the old one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from personae.memory.bookmarks.storyline import Storyline, open_storyline, storyline_version
from personae.settings import Settings, load_settings

V = TypeVar("V")


@dataclass(frozen=True)
class StorylineKey:
    """Which memory folder, storyline file version and Chroma server a resource belongs to."""

    memory: str
    """The resolved memory folder, ``""`` for in-process memory."""
    storyline_path: str
    mtime_ns: int
    chroma: str
    """``host:port`` of the Chroma server, ``""`` for embedded Chroma."""

    @property
    def memory_dir(self) -> Path | None:
        """The memory folder to open stores in (None: in process)."""
        return Path(self.memory) if self.memory else None

    def chroma_settings(self) -> Settings | None:
        """Settings naming the Chroma server to open stores on (None: embedded Chroma)."""
        if not self.chroma:
            return None
        host, _, port = self.chroma.rpartition(":")
        return load_settings({"CHROMA_HOST": host, "CHROMA_PORT": port})

    def storyline(self) -> Storyline:
        """The parsed storyline (cached per file version by :func:`open_storyline`)."""
        return open_storyline(self.storyline_path)


def storyline_key(storyline_path: str, memory_dir: str | None, chroma: str = "") -> StorylineKey:
    """The key of ``storyline_path``'s resources under ``memory_dir`` (or on ``chroma``).

    ``chroma`` is ``host:port`` of a Chroma server, ``""`` for embedded Chroma; the caller
    passes what its run context says (the environment is read at the edge, not here). Blocks
    (``Path.resolve()`` reads the working directory, the file is stat'ed): async callers go
    through a thread. Raises :class:`~personae.errors.InputError` for a missing storyline file.
    """
    path, mtime_ns = storyline_version(storyline_path)
    memory = str(Path(memory_dir).resolve()) if memory_dir else ""
    return StorylineKey(memory, path, mtime_ns, chroma)


class ResourceCache(Generic[V]):
    """Resources by key, each built once (under a lock, so concurrent steps share one)."""

    def __init__(self) -> None:
        self._items: dict[Hashable, V] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        """The resource cached under ``key``, built by ``build()`` the first time."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                found = self._items[key] = build()
            return found

    def clear(self) -> None:
        """Drop every resource (tests that simulate a restart; long-lived servers)."""
        with self._lock:
            self._items.clear()
