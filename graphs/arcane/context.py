"""Run settings every ARCANE graph shares: the models (LLMContext), the data and cache folders.

Filled at the edge like every Personae context: what a run leaves empty is read from the
environment when the context is built (``PERSONAE_DATA_DIR``, ``PERSONAE_CACHE_DIR``), never
inside nodes.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from personae.answer_store import AnswerStore
from personae.run_context import LLMContext, described
from personae.settings import (
    DEFAULT_EMBEDDINGS,
    Settings,
    check_embeddings_spec,
    load_settings,
)

if TYPE_CHECKING:
    from personae.memory.embeddings import TextEmbedding


@described
@dataclass(frozen=True, kw_only=True)
class ArcaneContext(LLMContext):
    """Models, the folder holding ``novels/`` and the LLM answer cache."""

    data_dir: str = ""
    """Folder holding novels/. Empty: PERSONAE_DATA_DIR, else ./data."""
    cache_dir: str = ""
    """LLM answer cache folder (answers under arcane/). Empty: PERSONAE_CACHE_DIR, else
    ~/.cache/personae; "none": no cache (every call is made)."""

    def __post_init__(self) -> None:
        """Fill the folders the run left empty from the environment (this is the edge)."""
        super().__post_init__()
        data = self.data_dir or os.environ.get("PERSONAE_DATA_DIR", "").strip() or "data"
        object.__setattr__(self, "data_dir", data)
        cache = self.cache_dir or str(load_settings(os.environ).cache_dir)
        object.__setattr__(self, "cache_dir", cache)

    def cache(self) -> AnswerStore:
        """The answer cache of this run (disabled by ``cache_dir="none"``)."""
        return AnswerStore(None if self.cache_dir == "none" else Path(self.cache_dir) / "arcane")

    def model_for(self, spec: str = "") -> tuple[BaseChatModel, str]:
        """The chat model of ``spec`` (empty: the strong model) and its cache name.

        The cache name is the spec plus the server: the same name elsewhere is another model.
        """
        chosen = spec or self.model
        name = f"{chosen}@{self.openai_base_url}" if self.openai_base_url else chosen
        return self.chat_model(chosen, "strong"), name


@described
@dataclass(frozen=True, kw_only=True)
class ChunkStoreContext(ArcaneContext):
    """Plus the novel chunk index's store: the project's embedding and Chroma settings.

    Like every Personae Chroma store: ``PERSONAE_EMBEDDINGS`` picks the embedding and
    ``CHROMA_HOST`` / ``CHROMA_PORT`` a Chroma server (else embedded Chroma in the novel's
    folder); both are read here, when the context is built, and the fields win.
    """

    embedding: str = ""
    """Chunk embedding: hashing (offline), local (all-MiniLM-L6-v2) or openai:<model> (the
    paper: openai:text-embedding-3-small), as the index was prepared with. Empty:
    PERSONAE_EMBEDDINGS, else hashing."""
    chroma_host: str = ""
    """Chroma server holding the chunk index. Empty: CHROMA_HOST, else embedded Chroma in the
    novel's folder."""
    chroma_port: int = 0
    """Port of the Chroma server. 0: CHROMA_PORT, else 8000."""

    def __post_init__(self) -> None:
        """Fill the embedding and the Chroma server from the environment (the edge)."""
        super().__post_init__()
        spec = self.embedding or os.environ.get("PERSONAE_EMBEDDINGS", "").strip()
        object.__setattr__(self, "embedding", check_embeddings_spec(spec or DEFAULT_EMBEDDINGS))
        if not self.chroma_host:
            settings = load_settings()  # checks CHROMA_PORT when CHROMA_HOST is set
            object.__setattr__(self, "chroma_host", settings.chroma_host or "")
            object.__setattr__(self, "chroma_port", self.chroma_port or settings.chroma_port)
        object.__setattr__(self, "chroma_port", self.chroma_port or 8000)

    def text_embedding(self) -> TextEmbedding:
        """The chunk embedding (``openai:`` on this context's server); may raise a config error."""
        from personae.memory.embeddings import open_embedding

        key: str = getattr(self, "_openai_api_key", "")
        return open_embedding(
            self.embedding, base_url=self.openai_base_url or None, api_key=key or None
        )

    def chroma_settings(self) -> Settings | None:
        """Settings naming the Chroma server (None: embedded Chroma on disk)."""
        if not self.chroma_host:
            return None
        return load_settings(
            {"CHROMA_HOST": self.chroma_host, "CHROMA_PORT": str(self.chroma_port)}
        )


STATE_MODULES = (
    "personae.agents.arcane.streams",
    "personae.agents.arcane.axes",
    "personae.agents.arcane.probe_prep",
    "personae.agents.arcane.designers",
    "personae.memory.arcane.records",
)
"""Modules whose pydantic records older ARCANE checkpoints hold (state is plain JSON now)."""


def checkpoint_serde() -> JsonPlusSerializer:
    """A checkpoint serializer that may still rebuild pydantic records of older checkpoints.

    ARCANE graph state holds plain JSON (:mod:`personae.memory.arcane.records_json`), so new
    checkpoints need no registered types (``langgraph dev`` loads them without a warning).
    SQLite checkpoints written before that hold pydantic records; the CLI's savers allow
    exactly those, so a build killed under the previous version still loads.
    """
    allowed: list[tuple[str, str]] = []
    for name in STATE_MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__ == name
            ):
                allowed.append((name, value.__name__))
    return JsonPlusSerializer(allowed_msgpack_modules=allowed)
