"""What the RICL and ETA baselines open once per (memory dir, storyline) and reuse every step.

The benchmark invokes a baseline graph once per test instance, hundreds of times per
character: reparsing the storyline, fingerprinting it or reopening Chroma on every step would
dominate the run. Stores are keyed by the memory directory, the storyline file and its version,
and the Chroma server setting (``CHROMA_HOST``, read here, once per key).

Each store is scoped by :attr:`Storyline.scope` (name and content fingerprint), not only the
name: Chroma's in-memory client is one per process, and a corrected re-download of a storyline
must not reuse pairs or profiles built from the old text.
"""

from __future__ import annotations

import threading
from pathlib import Path

from personae.memory.eta_profile_store import ETAProfileStore
from personae.memory.scene_pairs import ScenePairStore
from personae.memory.storyline import open_storyline
from personae.settings import load_settings

_PAIRS: dict[tuple[str, ...], ScenePairStore] = {}
_PROFILES: dict[tuple[str, ...], ETAProfileStore] = {}
_LOCK = threading.Lock()


def _file_key(storyline_path: str) -> tuple[str, int]:
    resolved = Path(storyline_path).resolve()
    return str(resolved), resolved.stat().st_mtime_ns


def _memory_key(memory_dir: str | None) -> str:
    return str(Path(memory_dir).resolve()) if memory_dir else ""


def _host() -> str:
    settings = load_settings()
    return f"{settings.chroma_host}:{settings.chroma_port}" if settings.chroma_host else ""


def scene_pairs_for(
    storyline_path: str, memory_dir: str | None, character: str, scene_size: int
) -> ScenePairStore:
    """The cached RICL pair store of ``character`` (Chroma under ``memory_dir`` or in memory).

    Raises :class:`~personae.errors.InputError` for a missing or malformed storyline file.
    """
    storyline = open_storyline(storyline_path)
    memory = _memory_key(memory_dir)
    key = (memory, *map(str, _file_key(storyline_path)), _host(), character, str(scene_size))
    with _LOCK:
        store = _PAIRS.get(key)
        if store is None:
            store = ScenePairStore.open(
                storyline,
                character,
                Path(memory) if memory else None,
                load_settings(),
                scope=storyline.scope,
                scene_size=scene_size,
            )
            _PAIRS[key] = store
        return store


def eta_profiles_for(storyline_path: str, memory_dir: str | None) -> ETAProfileStore:
    """The cached ETA profile store of a storyline (JSON under ``memory_dir`` or in process)."""
    scope = open_storyline(storyline_path).scope
    memory = _memory_key(memory_dir)
    key = (memory, *map(str, _file_key(storyline_path)))
    with _LOCK:
        store = _PROFILES.get(key)
        if store is None:
            store = ETAProfileStore.open(Path(memory) if memory else None, scope)
            _PROFILES[key] = store
        return store


def forget_baseline_resources() -> None:
    """Drop every cached store (tests that simulate a restart; long-lived servers)."""
    with _LOCK:
        _PAIRS.clear()
        _PROFILES.clear()
