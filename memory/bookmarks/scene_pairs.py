"""RICL's memory: a character's past scene→action pairs in Chroma, found by scene similarity.

Why this shape: RICL grounds the actor in the character's own past behaviour in situations
like the current one, so each pair is embedded by its scene (the actions before the character's
action) and retrieved by similarity to the current scene. Fairness needs two guards, both here:
pairs are only indexed up to the latest target asked for (never ahead of it), and every query
filters on ``position < target`` in Chroma itself, so a run that visits a later target first
cannot leak the pairs it indexed into an earlier target.

One collection per (storyline version, scene size, character): the in-memory client is one per
process, so names must not collide across storylines that share a name. The collection's
metadata records ``indexed_until`` (every pair with position below it is stored); pairs are
upserted before the mark moves, so a crash re-indexes a few pairs instead of missing any.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection

from personae.memory.bookmarks.storyline import SCENE_SIZE, StoryAction, Storyline
from personae.memory.chroma import embedded_name, open_chroma, open_collection, safe_collection_name
from personae.memory.embeddings import TextEmbedding, open_embedding
from personae.settings import DEFAULT_EMBEDDINGS, Settings

COLLECTION_PREFIX = "ricl-"
_MARK = "indexed_until"
_BATCH = 1000


def scene_document(scene: tuple[StoryAction, ...]) -> str:
    """What a scene is embedded as: its lines without position markers (numbers are noise)."""
    return "\n".join(f"({', '.join(a.characters)}) {a.text}" for a in scene)


@dataclass(frozen=True)
class ScenePair:
    """A past action of the character and the scene that preceded it."""

    position: int
    """Position of the character's action (always below the target it was retrieved for)."""
    scene: tuple[StoryAction, ...]
    """The actions before it (up to the scene size)."""
    action: StoryAction
    """The character's action."""
    distance: float
    """Cosine distance between its scene and the query scene."""

    def line(self) -> str:
        """The grounding line shown to the actor: ``Scene: ... → Action: ...``."""
        scene = " / ".join(a.render() for a in self.scene)
        return f"Scene: {scene} → Action: {self.action.render()}"


class ScenePairStore:
    """One character's past scene→action pairs of one storyline."""

    def __init__(
        self,
        client: ClientAPI,
        storyline: Storyline,
        character: str,
        *,
        scope: str | None = None,
        scene_size: int = SCENE_SIZE,
        embedding: TextEmbedding | None = None,
    ) -> None:
        """Open (or create) the pair collection; ``scope`` names the storyline version.

        ``embedding`` (default ``hashing``) embeds the scenes; each embedding has its own
        collection, and one holding another embedding's vectors is refused.
        """
        self.storyline = storyline
        self.client = client
        self.character = character
        self.scene_size = scene_size
        self.embedding = embedding or open_embedding(DEFAULT_EMBEDDINGS)
        name = embedded_name(f"{scope or storyline.name}.s{scene_size}.{character}", self.embedding)
        self.collection: Collection = open_collection(
            client,
            safe_collection_name(name, prefix=COLLECTION_PREFIX),
            self.embedding,
            {"storyline": storyline.name, "character": character, _MARK: 0},
        )
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        storyline: Storyline,
        character: str,
        path: Path | None,
        settings: Settings | None = None,
        *,
        scope: str | None = None,
        scene_size: int = SCENE_SIZE,
        embedding: TextEmbedding | None = None,
    ) -> ScenePairStore:
        """Open the store under ``path`` (embedded Chroma), on ``CHROMA_HOST``, or in memory."""
        client = open_chroma(path, settings)
        return cls(
            client,
            storyline,
            character,
            scope=scope,
            scene_size=scene_size,
            embedding=embedding,
        )

    @property
    def indexed_until(self) -> int:
        """Every pair with a position below this is indexed (read afresh from Chroma).

        Re-read on every use so two store objects on one collection never trust a stale mark.
        """
        fresh = self.client.get_collection(
            self.collection.name,
            embedding_function=self.embedding.chroma_function(),
        )
        stored = (fresh.metadata or {}).get(_MARK, 0)
        return int(stored) if isinstance(stored, int | float) else 0

    def __len__(self) -> int:
        return self.collection.count()

    def extend(self, target: int) -> int:
        """Index the character's pairs with position in ``[indexed_until, target)``; count them.

        Only actions before ``target`` are read. A pair at position 0 has no scene and is
        skipped. Calling it with a target at or below the mark does nothing.
        """
        with self._lock:
            start = self.indexed_until
            if target <= start:
                return 0
            positions = self._own_positions(start, target)
            for first in range(0, len(positions), _BATCH):
                self._upsert(positions[first : first + _BATCH], target)
            metadata = dict(self.collection.metadata or {})
            metadata[_MARK] = target
            self.collection.modify(metadata=metadata)
            return len(positions)

    def _own_positions(self, start: int, stop: int) -> list[int]:
        positions = self.storyline.positions_of(self.character)
        low, high = bisect.bisect_left(positions, start), bisect.bisect_left(positions, stop)
        return [p for p in positions[low:high] if p > 0]

    def _upsert(self, positions: list[int], target: int) -> None:
        scenes = [self.storyline.before(p, p - self.scene_size) for p in positions]
        assert all(p < target for p in positions)
        documents = [scene_document(scene) for scene in scenes]
        self.collection.upsert(
            ids=[f"p{p}" for p in positions],
            documents=documents,
            embeddings=self.embedding.embed(documents),
            metadatas=[{"character": self.character, "position": p} for p in positions],
        )

    def eligible(self, target: int) -> int:
        """How many indexed pairs lie before ``target``."""
        return len(self._own_positions(0, min(target, self.indexed_until)))

    def similar(self, scene: tuple[StoryAction, ...], target: int, k: int = 8) -> list[ScenePair]:
        """The ``k`` pairs before ``target`` whose scenes are closest to ``scene``, story order.

        The query is filtered in Chroma on character and ``position < target``; if the
        approximate index returns fewer than the eligible pairs allow, an exact scan of the
        filtered pairs replaces it.
        """
        wanted = min(k, self.eligible(target))
        if wanted <= 0 or not scene:
            return []
        where: Any = {"$and": [{"character": self.character}, {"position": {"$lt": target}}]}
        vector = self.embedding.embed_one(scene_document(scene))
        found = self.collection.query(
            query_embeddings=[vector],
            n_results=wanted,
            where=where,
            include=["distances", "metadatas"],
        )
        metadatas, distances = (found["metadatas"] or [[]])[0], (found["distances"] or [[]])[0]
        ranked = [
            (float(d), int(str(m["position"]))) for m, d in zip(metadatas, distances, strict=True)
        ]
        if len(ranked) < wanted:
            ranked = self._exact(vector, where, wanted)
        return self._pairs(ranked, target)

    def _exact(self, vector: np.ndarray, where: Any, wanted: int) -> list[tuple[float, int]]:
        stored = self.collection.get(where=where, include=["embeddings", "metadatas"])
        vectors = np.asarray(stored["embeddings"], dtype=np.float32)
        distances = 1.0 - vectors @ vector
        order = np.argsort(distances, kind="stable")[:wanted]
        metadatas = stored["metadatas"] or []
        return [(float(distances[i]), int(str(metadatas[i]["position"]))) for i in order]

    def _pairs(self, ranked: list[tuple[float, int]], target: int) -> list[ScenePair]:
        pairs = []
        for distance, position in sorted(ranked, key=lambda item: item[1]):
            if position >= target:
                raise AssertionError(f"pair {position} retrieved for target {target}")
            scene = self.storyline.before(position, position - self.scene_size)
            action = self.storyline.before(position + 1, position)[0]
            pairs.append(ScenePair(position, scene, action, distance))
        return pairs
