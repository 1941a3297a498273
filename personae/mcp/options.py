"""What ``personae mcp`` serves: folders, storylines and the run-context fields of its flags."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from personae.run_queue import DEFAULT_MAX_JOBS


@dataclass(frozen=True, kw_only=True)
class ServerOptions:
    """The MCP server's configuration (flags); what it leaves empty the settings fill."""

    profiles_dir: Path = Path("profiles")
    """Where ``personae profile`` wrote profiles (the ``personae://profiles`` resources)."""
    personas_dir: Path = Path("personas")
    """The AMADEUS persona memory (``personae amadeus index --memory``): ``ask_character``
    and the ``personae://personas`` resources."""
    storylines: tuple[Path, ...] = ()
    """Storylines ``storyline_memory`` answers about (none: the tool says how to add one)."""
    bookmarks_memory: Path | None = None
    """The bookmark bank's folder (None: a bank in the server's process, lost on exit)."""
    data_dir: str = ""
    """ARCANE's data folder for ``arcane_act`` (empty: PERSONAE_DATA_DIR, else ./data)."""
    arcane_mode: str = "arc"
    """ARCANE context mode of ``arcane_act`` (the paper's method: arc)."""
    method: str = "amadeus"
    """AMADEUS method of ``ask_character`` (amadeus, naive or none)."""
    web_search: bool = True
    """``profile_character`` searches the web (Tavily) as well as wikis."""
    wiki: str | None = None
    """A wiki ``profile_character`` always uses (an app about one franchise); None: found."""
    embedding: str = ""
    """Embedding of the Chroma memories (empty: PERSONAE_EMBEDDINGS, else hashing)."""
    max_jobs: int = DEFAULT_MAX_JOBS
    """``profile_character`` calls run at once (``--max-jobs``); later ones wait in line."""
    models: dict[str, Any] = field(default_factory=dict)
    """Run-context model fields from the flags (``personae.commands.models.model_fields``)."""
