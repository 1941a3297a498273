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

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from personae.memory.call_cache import CallCache
from personae.run_context import LLMContext, described
from personae.settings import load_settings


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

    def cache(self) -> CallCache:
        """The answer cache of this run (disabled by ``cache_dir="none"``)."""
        return CallCache(None if self.cache_dir == "none" else Path(self.cache_dir) / "arcane")

    def model_for(self, spec: str = "") -> tuple[BaseChatModel, str]:
        """The chat model of ``spec`` (empty: the strong model) and its cache name.

        The cache name is the spec plus the server: the same name elsewhere is another model.
        """
        chosen = spec or self.model
        name = f"{chosen}@{self.openai_base_url}" if self.openai_base_url else chosen
        return self.chat_model(chosen, "strong"), name


STATE_MODULES = (
    "personae.agents.arcane_streams",
    "personae.agents.arcane_axes",
    "personae.agents.arcane_probe_prep",
    "personae.agents.arcane_designers",
    "personae.memory.arcane_records",
)
"""Modules whose pydantic records travel in ARCANE graph state (and so in checkpoints)."""


def checkpoint_serde() -> JsonPlusSerializer:
    """A checkpoint serializer that may rebuild ARCANE's pydantic state records.

    LangGraph warns on (and will refuse) unregistered types in checkpoints; the CLI's SQLite
    savers allow exactly the records ARCANE graphs keep in state.
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
