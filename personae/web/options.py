"""What ``personae web`` serves: its folders and the run-context fields of its flags."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from personae.run_queue import DEFAULT_MAX_JOBS


@dataclass(frozen=True, kw_only=True)
class WebOptions:
    """The web page's configuration (flags); what it leaves empty the settings fill.

    Every folder is resolved to an absolute path once, at the edge (:func:`resolved`), so a
    page never serves a file outside them whatever the working directory becomes.
    """

    profiles_dir: Path = Path("profiles")
    """Where ``personae profile`` writes profiles (the Profiles list; new characters go here)."""
    personas_dir: Path = Path("personas")
    """The AMADEUS persona memory (``personae amadeus index --memory``): the chat page."""
    data_dir: Path = Path("data")
    """ARCANE's data folder (``PERSONAE_DATA_DIR``): imported novels, their arcs."""
    storylines: tuple[Path, ...] = ()
    """BOOKMARKS storylines (JSONL) the storyline view shows."""
    bookmarks_memory: Path | None = None
    """The bookmark bank's folder (``personae bookmarks act --memory``); None: a bank in the
    server's process, lost on exit (as ``personae mcp`` without ``--bookmarks-memory``)."""
    runs_dir: Path = Path("runs")
    """Where bench and evaluation reports were written (the Reports view)."""
    jobs_dir: Path | None = None
    """Where background jobs keep their state (None: ``<profiles>/.web-jobs``)."""
    web_search: bool = True
    """New characters search the web (Tavily) as well as wikis."""
    embedding: str = ""
    """Embedding of the Chroma memories (empty: PERSONAE_EMBEDDINGS, else hashing)."""
    max_jobs: int = DEFAULT_MAX_JOBS
    """Profile jobs run at once (``--max-jobs``); later ones wait in line."""
    models: dict[str, Any] = field(default_factory=dict)
    """Run-context model fields from the flags (``personae.commands.models.model_fields``)."""

    def resolved(self) -> WebOptions:
        """The same options with every folder absolute (done once, when the server starts)."""
        return WebOptions(
            profiles_dir=self.profiles_dir.resolve(),
            personas_dir=self.personas_dir.resolve(),
            data_dir=self.data_dir.resolve(),
            storylines=tuple(path.resolve() for path in self.storylines),
            bookmarks_memory=self.bookmarks_memory.resolve() if self.bookmarks_memory else None,
            runs_dir=self.runs_dir.resolve(),
            jobs_dir=(self.jobs_dir or self.profiles_dir / ".web-jobs").resolve(),
            web_search=self.web_search,
            embedding=self.embedding,
            max_jobs=self.max_jobs,
            models=dict(self.models),
        )

    @property
    def folders(self) -> tuple[Path, ...]:
        """Every folder (and storyline file) the page may read from."""
        return (
            self.profiles_dir,
            self.personas_dir,
            self.data_dir,
            self.runs_dir,
            *self.storylines,
            *((self.bookmarks_memory,) if self.bookmarks_memory else ()),
        )
