"""What the RICL and ETA baselines open once per (memory dir, storyline) and reuse every step.

The benchmark invokes a baseline graph once per test instance, hundreds of times per
character: reparsing the storyline, fingerprinting it or reopening Chroma on every step would
dominate the run. Stores are cached under the
:class:`~personae.graphs.bookmarks.resource_cache.StorylineKey` the BOOKMARKS graph uses too (memory
directory, storyline file and version, Chroma server), the pairs also per character and scene
size.

Each store is scoped by :attr:`Storyline.scope` (name and content fingerprint), not only the
name: Chroma's in-memory client is one per process, and a corrected re-download of a storyline
must not reuse pairs or profiles built from the old text.
"""

from __future__ import annotations

from personae.graphs.bookmarks.resource_cache import ResourceCache, storyline_key
from personae.memory.bookmarks.eta_profile_store import ETAProfileStore
from personae.memory.bookmarks.scene_pairs import ScenePairStore
from personae.memory.embeddings import TextEmbedding, open_embedding
from personae.process_caches import clears_on_reset
from personae.settings import DEFAULT_EMBEDDINGS

_PAIRS: ResourceCache[ScenePairStore] = ResourceCache()
_PROFILES: ResourceCache[ETAProfileStore] = ResourceCache()
clears_on_reset("graphs.bookmarks.baseline_resources.scene_pairs", _PAIRS.clear)
clears_on_reset("graphs.bookmarks.baseline_resources.eta_profiles", _PROFILES.clear)


def scene_pairs_for(
    storyline_path: str,
    memory_dir: str | None,
    character: str,
    scene_size: int,
    chroma: str = "",
    embedding: TextEmbedding | None = None,
) -> ScenePairStore:
    """The cached RICL pair store of ``character`` (Chroma under ``memory_dir`` or in memory).

    ``chroma`` (``host:port``) puts it on that Chroma server. ``embedding`` (default
    ``hashing``) embeds the scenes; each embedding has its own collection. Raises
    :class:`~personae.errors.InputError` for a missing or malformed storyline file.
    """
    key = storyline_key(storyline_path, memory_dir, chroma)

    def open_pairs() -> ScenePairStore:
        storyline = key.storyline()
        return ScenePairStore.open(
            storyline,
            character,
            key.memory_dir,
            key.chroma_settings(),
            scope=storyline.scope,
            scene_size=scene_size,
            embedding=chosen,
        )

    chosen = embedding or open_embedding(DEFAULT_EMBEDDINGS)
    return _PAIRS.get((key, character, scene_size, chosen), open_pairs)


def eta_profiles_for(storyline_path: str, memory_dir: str | None) -> ETAProfileStore:
    """The cached ETA profile store of a storyline (JSON under ``memory_dir`` or in process)."""
    key = storyline_key(storyline_path, memory_dir)
    return _PROFILES.get(key, lambda: ETAProfileStore.open(key.memory_dir, key.storyline().scope))


def forget_baseline_resources() -> None:
    """Drop every cached store (tests that simulate a restart; long-lived servers)."""
    _PAIRS.clear()
    _PROFILES.clear()
