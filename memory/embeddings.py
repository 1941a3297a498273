"""Offline text embeddings for Chroma: feature hashing of words and character trigrams.

Chroma's default embedding function downloads an ONNX model at first use, which fails offline
and makes results depend on a download. This function needs nothing but numpy, is
deterministic across processes (blake2b, not Python's salted ``hash``), and is registered
with Chroma under a stable name so a persisted collection reopens with the same function.
Users with a real model can pass any Chroma embedding function instead.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

_TOKEN = re.compile(r"[\w']+", re.UNICODE)
DEFAULT_DIMENSIONS = 384


def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimensions, (1.0 if (value >> 63) & 1 else -1.0)


def embed_text(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> np.ndarray:
    """L2-normalised hashed bag of lowercase words (weight 1) and char trigrams (weight 0.5)."""
    vector = np.zeros(dimensions, dtype=np.float32)
    words = _TOKEN.findall(text.lower())
    for word in words:
        index, sign = _bucket("w:" + word, dimensions)
        vector[index] += sign
        padded = f"#{word}#"
        for start in range(len(padded) - 2):
            index, sign = _bucket("c:" + padded[start : start + 3], dimensions)
            vector[index] += 0.5 * sign
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


@register_embedding_function
class HashingEmbedding(EmbeddingFunction[Documents]):
    """Chroma embedding function backed by :func:`embed_text` (cosine space)."""

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        self.dimensions = dimensions

    def __call__(self, input: Documents) -> Embeddings:
        """Embed each document."""
        return [embed_text(text, self.dimensions) for text in input]

    @staticmethod
    def name() -> str:
        """Name Chroma stores with the collection."""
        return "personae-hashing"

    def default_space(self) -> Any:
        """Vectors are normalised: cosine."""
        return "cosine"

    def supported_spaces(self) -> Any:
        """Spaces the vectors work in."""
        return ["cosine", "l2", "ip"]

    def get_config(self) -> dict[str, Any]:
        """Config Chroma persists."""
        return {"dimensions": self.dimensions}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbedding:
        """Rebuild from persisted config."""
        return HashingEmbedding(int(config.get("dimensions", DEFAULT_DIMENSIONS)))
