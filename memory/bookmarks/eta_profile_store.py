"""ETA's memory: per-chunk extractions and the running profiles built from them, as JSON files.

Why files and not Chroma: ETA never searches; it looks things up by exact key, the character
and an update point (or a chunk's ``[start, stop)``), or asks for the latest profile at or
before a point (the recurrent update continues from it). One small JSON file per key, written
atomically, means a story-order run extracts each chunk once, a second process continues from
what the first stored, and a crash loses at most the file being written. With no directory the
store is a dictionary in the process (throwaway runs, tests).

Layout under the root: ``eta/<storyline scope>/<character>/chunk-<start>-<stop>.json`` and
``profile-<rebuild point>.json``, names made filesystem-safe.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from personae.files import write_json_atomic
from personae.memory.chroma import safe_collection_name

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkFacts:
    """Facts about a character extracted from the actions in ``[start, stop)``."""

    start: int
    stop: int
    facts: tuple[str, ...]


@dataclass(frozen=True)
class ETAProfile:
    """A character's running profile at ``rebuild_point``."""

    character: str
    rebuild_point: int
    """Actions ``[0, rebuild_point)`` were the only ones read to build it."""
    statements: tuple[str, ...]
    """The profile text (ETA keeps one narrative paragraph: one element)."""
    chunks: tuple[tuple[int, int], ...]
    """The ``[start, stop)`` chunks read since the previous profile."""
    previous: int = 0
    """The update point of the profile this one was updated from (0: the empty profile)."""


class ETAProfileStore:
    """Chunk facts and rebuilt profiles of one storyline version, for every character."""

    def __init__(self, directory: Path | None) -> None:
        """Store under ``directory`` (created on first write), or in process when ``None``."""
        self.directory = directory
        self._memory: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, root: Path | None, scope: str) -> ETAProfileStore:
        """The store of storyline ``scope`` under ``root/eta`` (in process when ``root`` is None)."""
        if root is None:
            return cls(None)
        return cls(root / "eta" / safe_collection_name(scope))

    def _key(self, character: str, name: str) -> str:
        return f"{safe_collection_name(character)}/{name}.json"

    def _read(self, key: str) -> dict[str, Any] | None:
        if self.directory is None:
            with self._lock:
                return self._memory.get(key)
        path = self.directory / key
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError) as error:
            logger.info("no readable ETA record: %s", error)
            return None
        return data if isinstance(data, dict) else None

    def _write(self, key: str, data: dict[str, Any]) -> None:
        if self.directory is None:
            with self._lock:
                self._memory[key] = data
            return
        write_json_atomic(self.directory / key, data)

    def chunk_facts(self, character: str, start: int, stop: int) -> ChunkFacts | None:
        """The stored extraction of ``[start, stop)`` for ``character``, if any."""
        data = self._read(self._key(character, f"chunk-{start}-{stop}"))
        if data is None or (data.get("start"), data.get("stop")) != (start, stop):
            return None
        return ChunkFacts(start, stop, tuple(str(f) for f in data.get("facts", [])))

    def save_chunk_facts(self, character: str, chunk: ChunkFacts) -> None:
        """Store an extraction (atomically)."""
        data = {"start": chunk.start, "stop": chunk.stop, "facts": list(chunk.facts)}
        self._write(self._key(character, f"chunk-{chunk.start}-{chunk.stop}"), data)

    def profile(self, character: str, rebuild_point: int) -> ETAProfile | None:
        """The profile rebuilt at ``rebuild_point`` for ``character``, if stored."""
        data = self._read(self._key(character, f"profile-{rebuild_point}"))
        if data is None or data.get("rebuild_point") != rebuild_point:
            return None
        chunks = tuple((int(s), int(e)) for s, e in data.get("chunks", []))
        if any(stop > rebuild_point for _, stop in chunks):
            return None
        return ETAProfile(
            character,
            rebuild_point,
            tuple(str(s) for s in data.get("statements", [])),
            chunks,
            int(data.get("previous", 0)),
        )

    def save_profile(self, profile: ETAProfile) -> None:
        """Store a rebuilt profile (atomically)."""
        data = {
            "character": profile.character,
            "rebuild_point": profile.rebuild_point,
            "statements": list(profile.statements),
            "chunks": [list(chunk) for chunk in profile.chunks],
            "previous": profile.previous,
        }
        self._write(self._key(profile.character, f"profile-{profile.rebuild_point}"), data)

    def profile_points(self, character: str) -> list[int]:
        """Update points with a stored profile for ``character``, ascending (blocking I/O)."""
        prefix = f"{safe_collection_name(character)}/profile-"
        if self.directory is None:
            with self._lock:
                names = [k[len(prefix) : -5] for k in self._memory if k.startswith(prefix)]
        else:
            folder = self.directory / safe_collection_name(character)
            names = [p.name[8:-5] for p in folder.glob("profile-*.json")] if folder.is_dir() else []
        return sorted(int(n) for n in names if n.isdecimal())

    def latest_profile(self, character: str, at_most: int) -> ETAProfile | None:
        """The stored profile with the largest update point ``<= at_most``, if any."""
        for point in reversed(self.profile_points(character)):
            if point <= at_most:
                found = self.profile(character, point)
                if found is not None:
                    return found
        return None
