"""Run settings every ARCANE graph shares: the models (LLMContext), the data and cache folders.

Filled at the edge like every Personae context: what a run leaves empty comes from the settings
when the context is built (``PERSONAE_DATA_DIR``, ``PERSONAE_CACHE_DIR``), never inside nodes.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from personae.answer_store import AnswerStore
from personae.graphs.store_context import EmbeddingAccess
from personae.run_context import LLMContext, described

JUDGE_SAMPLING: Mapping[str, str] = {"temperature": "judge=0"}
"""Judges and coders at T = 0 (App. D: "the TimeCHARA two-stage hint extractor and the LLM judge
both run at T = 0"; App. G's coder: "temperature 0"); role-play, arcs and probes keep the
server's default sampling, as the paper's do. A run's ``temperature`` still wins."""


@described
@dataclass(frozen=True, kw_only=True)
class ArcaneContext(LLMContext):
    """Models, the folder holding ``novels/`` and the LLM answer cache."""

    default_sampling: ClassVar[Mapping[str, str]] = JUDGE_SAMPLING

    # -- plumbing: the folders
    data_dir: str = ""
    """Folder holding novels/. Empty: PERSONAE_DATA_DIR, else ./data."""
    cache_dir: str = ""
    """LLM answer cache folder (answers under arcane/). Empty: PERSONAE_CACHE_DIR, else
    ~/.cache/personae; "none": no cache (every call is made)."""

    def __post_init__(self) -> None:
        """Fill the folders the run left empty from the settings (this is the edge)."""
        super().__post_init__()
        object.__setattr__(self, "data_dir", self.data_dir or str(self.settings.data_dir))
        object.__setattr__(self, "cache_dir", self.cache_dir or str(self.settings.cache_dir))

    def cache(self) -> AnswerStore:
        """The answer cache of this run (disabled by ``cache_dir="none"``)."""
        return AnswerStore(None if self.cache_dir == "none" else Path(self.cache_dir) / "arcane")

    def model_for(self, spec: str = "") -> tuple[BaseChatModel, str]:
        """The chat model of ``spec`` (empty: the strong model) and its cache name.

        The cache name is the spec plus the server: the same name elsewhere is another model.
        """
        chosen = spec or self.model
        return self.chat_model(chosen, "strong"), self.cache_name(chosen)

    def judge_for(self, spec: str) -> tuple[BaseChatModel, str]:
        """The chat model of ``spec`` sampled as the ``judge`` role (T = 0), and its cache name."""
        return self.chat_model(spec, "judge"), self.cache_name(spec)


@described
@dataclass(frozen=True, kw_only=True)
class ChunkStoreContext(EmbeddingAccess, ArcaneContext):
    """The novel chunk index's store: embedding and Chroma server, declared once.

    Like every Personae Chroma store: ``PERSONAE_EMBEDDINGS`` picks the embedding and
    ``CHROMA_HOST`` / ``CHROMA_PORT`` a Chroma server (else embedded Chroma in the novel's
    folder); the settings are read when the context is built, and the fields win. Preparing a
    novel runs on it alone; the graphs that read the index (role-play, evaluation) take it as
    their store base, so the three fields and their filling are written here only
    (``tests/core/test_context_shape.py`` allows a context one such base, of plumbing only).
    """

    # -- plumbing: the chunk index
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
        """Fill the store from the settings (this is the edge)."""
        super().__post_init__()
        self.fill_store()


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
