"""Run settings of graphs whose memory is in Chroma: the server and the embedding, one resolver.

BOOKMARKS' bank and RICL's scene index, the AMADEUS persona index and the ARCANE chunk index all
live in Chroma and embed their texts with the embedding the user picked. Each of their contexts
declares the fields itself (``chroma_host``, ``chroma_port``, ``embedding``: every paper names
them alike) and takes the behaviour from :class:`ChromaAccess` / :class:`EmbeddingAccess`, which
hold no fields: they fill them from the same settings (``CHROMA_HOST``, ``CHROMA_PORT``,
``PERSONAE_EMBEDDINGS``) and open the embedding through :meth:`EmbeddingAccess.text_embedding`,
on the run's own OpenAI-compatible server. :class:`EmbeddingContext` is the context of a store
alone (building a persona index).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from personae.run_context import LLMContext, described
from personae.settings import Settings, check_embeddings_spec

if TYPE_CHECKING:
    from personae.memory.embeddings import TextEmbedding


class ChromaAccess:
    """How a context reaches its Chroma server (the context declares the two fields).

    Call :meth:`fill_chroma` from ``__post_init__``, after :class:`LLMContext`'s.
    """

    chroma_host: str
    chroma_port: int

    if TYPE_CHECKING:  # LLMContext's read-only property, declared so for the type checkers

        @property
        def settings(self) -> Settings:
            """The settings the context was filled from (:class:`LLMContext` defines it)."""
            ...

    def fill_chroma(self) -> None:
        """Fill the Chroma server from the settings where the run left it empty."""
        settings = self.settings
        if not self.chroma_host:  # None from a JSON null counts as empty
            object.__setattr__(self, "chroma_host", settings.chroma_host or "")
            object.__setattr__(self, "chroma_port", self.chroma_port or settings.chroma_port)
        object.__setattr__(self, "chroma_port", self.chroma_port or 8000)

    @property
    def chroma(self) -> str:
        """``host:port`` of the Chroma server, ``""`` for embedded Chroma."""
        return f"{self.chroma_host}:{self.chroma_port}" if self.chroma_host else ""

    def chroma_settings(self) -> Settings | None:
        """Settings naming this run's Chroma server (None: embedded Chroma on disk)."""
        if not self.chroma_host:
            return None
        return replace(self.settings, chroma_host=self.chroma_host, chroma_port=self.chroma_port)


class EmbeddingAccess(ChromaAccess):
    """Plus the embedding of the run's Chroma stores (the context declares ``embedding``).

    Call :meth:`fill_store` from ``__post_init__``, after :class:`LLMContext`'s.
    """

    embedding: str
    openai_base_url: str

    def fill_store(self) -> None:
        """Fill the server and the embedding from the settings; reject an embedding typo."""
        self.fill_chroma()
        self.fill_embedding()

    def fill_embedding(self) -> None:
        """Fill the embedding from the settings if the run left it empty; reject a typo."""
        spec = self.embedding or self.settings.embedding
        object.__setattr__(self, "embedding", check_embeddings_spec(spec))

    def text_embedding(self) -> TextEmbedding:
        """The embedding this run's stores use (``openai:`` on this context's server).

        Raises :class:`~personae.errors.ConfigurationError` when it cannot be opened (no
        server for ``openai:``, ``local`` without its model package).
        """
        from personae.memory.embeddings import open_embedding

        return open_embedding(
            self.embedding,
            base_url=self.openai_base_url or None,
            api_key=self.settings.openai_api_key,
        )


@described
@dataclass(frozen=True, kw_only=True)
class EmbeddingContext(EmbeddingAccess, LLMContext):
    """A Chroma store alone: its server and embedding, plus the models (building an index)."""

    # -- plumbing: the store
    chroma_host: str = ""
    """Chroma server for the memory instead of embedded Chroma on disk. Empty: CHROMA_HOST,
    else embedded Chroma."""
    chroma_port: int = 0
    """Port of the Chroma server. 0: CHROMA_PORT, else 8000."""
    embedding: str = ""
    """Embedding of the Chroma memory: hashing (word overlap, offline), local (all-MiniLM-L6-v2
    on numpy, offline) or openai:<model> (the /embeddings endpoint of this run's server). Each
    embedding keeps its own collections. Empty: PERSONAE_EMBEDDINGS, else hashing."""

    def __post_init__(self) -> None:
        """Fill the store from the settings (this is the edge)."""
        super().__post_init__()
        self.fill_store()
