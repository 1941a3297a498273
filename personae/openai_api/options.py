"""What ``personae serve openai`` serves: its folders and the run-context fields of its flags."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from personae.graphs.amadeus.graph import AmadeusContext
    from personae.graphs.arcane.roleplay import RoleplayContext


@dataclass(frozen=True, kw_only=True)
class OpenAIServerOptions:
    """The server's configuration (flags); what it leaves empty the settings fill.

    The folders are the ones ``personae serve web`` reads: a persona indexed for the page or
    the terminal is a model here too.
    """

    personas_dir: Path = Path("personas")
    """The AMADEUS persona memory (``personae amadeus index --memory``): one model per persona."""
    data_dir: Path = Path("data")
    """ARCANE's data folder: one model per character with arcs and chapter of its novel."""
    embedding: str = ""
    """Embedding of the persona memory (empty: PERSONAE_EMBEDDINGS, else hashing)."""
    models: dict[str, Any] = field(default_factory=dict)
    """Run-context model fields from the flags (``personae.commands.models.model_fields``)."""

    def resolved(self) -> OpenAIServerOptions:
        """The same options with every folder absolute (done once, when the server starts)."""
        return OpenAIServerOptions(
            personas_dir=self.personas_dir.resolve(),
            data_dir=self.data_dir.resolve(),
            embedding=self.embedding,
            models=dict(self.models),
        )

    def amadeus_context(self) -> AmadeusContext:
        """The run settings of a persona's turn (the settings fill what the flags leave)."""
        from personae.graphs.amadeus.graph import AmadeusContext

        return AmadeusContext(
            memory_dir=str(self.personas_dir), embedding=self.embedding, **self.models
        )

    def roleplay_context(self) -> RoleplayContext:
        """The run settings of an ARCANE character's turn as of a chapter."""
        from personae.graphs.arcane.roleplay import RoleplayContext

        return RoleplayContext(
            arc_scope="character",
            data_dir=str(self.data_dir),
            embedding=self.embedding,
            **self.models,
        )
