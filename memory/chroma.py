"""Opening Chroma: embedded on disk by default, a Chroma server when ``CHROMA_HOST`` is set."""

from __future__ import annotations

import hashlib
import re
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import chromadb
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings as ChromaSettings

from personae.errors import ConfigurationError
from personae.settings import Settings

if TYPE_CHECKING:
    from personae.memory.embeddings import TextEmbedding

EMBEDDING_KEY = "personae_embedding"
"""Collection metadata naming the embedding its vectors come from (absent: ``hashing``)."""

_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")

SEARCH_EF = 2000
"""HNSW ``ef_search`` of the collections searched by vector (AMADEUS persona chunks, ARCANE
novel chunks): how many candidates a query keeps while it walks the graph.

Why 2,000: Chroma's default (100) found 0.78-0.81 of the exact top 30 at 10,000 chunks with the
``hashing`` embedding (a high-dimensional, nearly random-looking cloud, hard for HNSW); 1,000
gave 0.985 and 2,000 gave 0.994 on random text, and 1.0 on a 10,000-chunk persona with the
denser graph below, for 10-25 ms instead of 3-5 ms a query on the shared 2-core machine. Below
2,000 chunks (a typical persona or novel) the walk visits every chunk: exact.
The value is fixed, not grown with the collection, because Chroma reads it when it loads the
index into a process: a change made later applies from the next process on.
"""


GRAPH_NEIGHBORS = 32
GRAPH_EF_CONSTRUCTION = 200
"""The HNSW graph of a collection searched by vector: twice Chroma's default links and build
beam. With the defaults (16, 100) some chunks of a 10,000-chunk persona of repeated phrasing
were never reached, whatever ``ef_search`` (recall 0.987 at 2,000, 0.9935 at 4,000); with these,
1.0 at 2,000 (the index builds in 47 s instead of 38 s). Fixed when a collection is created."""


def search_configuration() -> dict[str, Any]:
    """The ``configuration`` a collection searched by cosine similarity is created with."""
    return {
        "hnsw": {
            "space": "cosine",
            "ef_search": SEARCH_EF,
            "ef_construction": GRAPH_EF_CONSTRUCTION,
            "max_neighbors": GRAPH_NEIGHBORS,
        }
    }


def ensure_search_ef(collection: Collection) -> None:
    """Raise a collection's ``ef_search`` to :data:`SEARCH_EF` if it was made with less.

    Collections created before the setting keep Chroma's default until this runs. It takes
    effect when Chroma next loads the collection's index into a process: at once if this
    process has not read the collection yet (callers run it right after opening), else from
    the next process.
    """
    hnsw = (collection.configuration_json or {}).get("hnsw") or {}
    if int(hnsw.get("ef_search") or 100) < SEARCH_EF:
        with warnings.catch_warnings():
            # Chroma re-reads the stored configuration and warns about its own record of
            # "no embedding function" (collections given vectors, as ours are): not actionable.
            warnings.filterwarnings("ignore", "legacy embedding function", DeprecationWarning)
            collection.modify(configuration={"hnsw": {"ef_search": SEARCH_EF}})


def safe_collection_name(name: str, prefix: str = "") -> str:
    """A valid, collision-free Chroma collection name for any storyline name.

    Chroma accepts 3-512 chars of ``[a-zA-Z0-9._-]`` starting and ending alphanumerically;
    names like ``Poppin'Party`` or ``Pastel*Palettes`` are cleaned and suffixed with a short
    hash of the original so two names that clean to the same text stay apart.
    """
    raw = f"{prefix}{name}"
    # Chroma also refuses two periods in a row (``--character ../../x``).
    cleaned = re.sub(r"\.{2,}", ".", _UNSAFE.sub("_", raw)).strip("._-") or "x"
    if cleaned != raw or len(cleaned) < 3:
        digest = hashlib.blake2b(raw.encode("utf-8"), digest_size=4).hexdigest()
        cleaned = f"{cleaned[:480]}_{digest}"
    return cleaned[:512]


_OPENING = threading.Lock()
"""Held while an embedded Chroma store is opened (the first open of a path starts it)."""


def open_chroma(path: Path | None, settings: Settings | None = None) -> ClientAPI:
    """A Chroma client: HTTP to ``CHROMA_HOST`` when configured, else persistent at ``path``.

    ``path=None`` without a server gives an in-memory client (tests, throwaway runs).
    """
    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if settings is not None and settings.chroma_host:
        try:
            return chromadb.HttpClient(
                host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings
            )
        except Exception as error:
            raise ConfigurationError(
                f"cannot reach the Chroma server at {settings.chroma_host}:{settings.chroma_port} "
                f"({type(error).__name__})",
                "start it or unset CHROMA_HOST to use embedded Chroma on disk",
            ) from None
    if path is None:
        return chromadb.EphemeralClient(settings=chroma_settings)
    path.mkdir(parents=True, exist_ok=True)
    # Chroma keeps one system per path, made at the first open; two threads making it at once
    # both start it and one fails ("Could not connect to tenant default_tenant"): every
    # `arcane eval` in a fresh process, whose units open the novel's store in parallel.
    with _OPENING:
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings)


def embedded_name(name: str, embedding: TextEmbedding) -> str:
    """``name`` keyed by the embedding: ``name.<key>`` (plain ``name`` for default hashing)."""
    return f"{name}.{embedding.key}" if embedding.key else name


def open_collection(
    client: ClientAPI,
    name: str,
    embedding: TextEmbedding,
    metadata: dict[str, Any],
    configuration: dict[str, Any] | None = None,
) -> Collection:
    """Get or create collection ``name`` for vectors of ``embedding``; refuse any other.

    The embedding's spec is stored in the metadata at creation, with ``configuration`` (see
    :func:`search_configuration`) when given. A collection holding another
    embedding's vectors (written by an older version, another setting, or a shared Chroma
    server) raises :class:`~personae.errors.ConfigurationError` instead of mixing vectors.
    """
    fix = (
        "set PERSONAE_EMBEDDINGS to the embedding the memory was built with, or use another "
        "memory folder"
    )
    try:
        collection = client.get_or_create_collection(
            name,
            embedding_function=embedding.chroma_function(),
            metadata={**metadata, EMBEDDING_KEY: embedding.spec},
            **({"configuration": cast(Any, configuration)} if configuration else {}),
        )
    except ValueError as error:
        if "embedding function" not in str(error).lower():
            raise
        raise ConfigurationError(
            f"Chroma collection {name} was made with another embedding function than "
            f"{embedding.spec!r}",
            fix,
        ) from None
    stored = str((collection.metadata or {}).get(EMBEDDING_KEY, "hashing"))
    if stored != embedding.spec:
        raise ConfigurationError(
            f"Chroma collection {name} holds {stored!r} vectors, not {embedding.spec!r}", fix
        )
    return collection
