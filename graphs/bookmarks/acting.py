"""The contract every role-play method graph follows (BOOKMARKS agent and its baselines).

The benchmark, the ``personae act`` command and larger apps call any method the same way:
input ``{character, position}``, output ``{action, grounding, stats}``, run settings in a
context that extends :class:`ActingContext`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from typing_extensions import TypedDict

from personae.run_context import LLMContext, described
from personae.settings import DEFAULT_EMBEDDINGS, check_embeddings_spec, load_settings

if TYPE_CHECKING:
    from personae.memory.embeddings import TextEmbedding


class ActInput(TypedDict):
    """Who acts and where: the method predicts the action at ``position``."""

    character: str
    """A character of the storyline (not ``Other``/``Environment``)."""
    position: int
    """Target position; only actions before it may be read."""


class ActOutput(TypedDict):
    """The predicted action and what grounded it."""

    action: str
    """The character's predicted next action, one sentence."""
    grounding: list[str]
    """The memory shown to the actor (bookmark Q/A lines, retrieved pairs, profile)."""
    stats: dict[str, int]
    """Counters for this step: ``llm_calls``, ``input_tokens``, ``output_tokens`` and method
    specific ones (``reuse``, ``derive``, ``new``, ``actions_read``, ``actions_from_scratch``)."""


@described
@dataclass(frozen=True, kw_only=True)
class ActingContext(LLMContext):
    """Run settings shared by every method; method contexts subclass it.

    The strong model acts; the fast one does routine calls (matching, sync checks).
    """

    storyline_path: str
    """BOOKMARKS release JSON or JSONL file of the storyline."""
    memory_dir: str | None = None
    """Directory of the persistent memory (embedded Chroma, JSON); null keeps it in process."""
    chroma_host: str = ""
    """Chroma server for the memory instead of embedded Chroma in memory_dir. Empty:
    CHROMA_HOST, else embedded Chroma."""
    chroma_port: int = 0
    """Port of the Chroma server. 0: CHROMA_PORT, else 8000."""
    scene_size: int = 10
    """Actions shown as the current scene."""
    hide_title: bool = False
    """Leave the story's title out of every prompt (a famous title invites recall of later
    plot; ``--hide-title``)."""

    def story_title(self, name: str) -> str | None:
        """The title prompts show for storyline ``name``: ``None`` when hidden."""
        return None if self.hide_title else name

    def __post_init__(self) -> None:
        """Fill the models and the Chroma server from the environment where left empty."""
        super().__post_init__()
        if not self.chroma_host:
            settings = load_settings()  # checks CHROMA_PORT when CHROMA_HOST is set
            object.__setattr__(self, "chroma_host", settings.chroma_host or "")
            object.__setattr__(self, "chroma_port", self.chroma_port or settings.chroma_port)
        object.__setattr__(self, "chroma_port", self.chroma_port or 8000)

    @property
    def chroma(self) -> str:
        """``host:port`` of the Chroma server, ``""`` for embedded Chroma."""
        return f"{self.chroma_host}:{self.chroma_port}" if self.chroma_host else ""


@described
@dataclass(frozen=True, kw_only=True)
class EmbeddingContext(ActingContext):
    """Run settings of methods whose memory is in Chroma (BOOKMARKS, RICL): plus the embedding."""

    embeddings: str = ""
    """Embedding of the Chroma memory: hashing (word overlap, offline), local (all-MiniLM-L6-v2
    on numpy, offline) or openai:<model> (the /embeddings endpoint of this run's server). Each
    embedding keeps its own collections. Empty: PERSONAE_EMBEDDINGS, else hashing."""

    def __post_init__(self) -> None:
        """Fill the embedding from the environment if the run left it empty (the edge)."""
        super().__post_init__()
        spec = self.embeddings or os.environ.get("PERSONAE_EMBEDDINGS", "").strip()
        object.__setattr__(self, "embeddings", check_embeddings_spec(spec or DEFAULT_EMBEDDINGS))

    def embedding(self) -> TextEmbedding:
        """The embedding this run's stores use (``openai:`` on this context's server).

        Raises :class:`~personae.errors.ConfigurationError` when it cannot be opened.
        """
        from personae.memory.embeddings import open_embedding

        key: str = getattr(self, "_openai_api_key", "")
        return open_embedding(
            self.embeddings, base_url=self.openai_base_url or None, api_key=key or None
        )
