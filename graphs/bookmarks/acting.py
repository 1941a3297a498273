"""The contract every role-play method graph follows (BOOKMARKS agent and its baselines).

The benchmark, the ``personae bookmarks act`` command and larger apps call any method the same way:
input ``{character, position}``, output ``{action, grounding, stats}``, run settings in a
context that extends :class:`ActingContext`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from typing_extensions import TypedDict

from personae.graphs.store_context import ChromaAccess
from personae.run_context import LLMContext, described

NEAR_DETERMINISTIC: Mapping[str, str] = {"temperature": "0"}
"""The BOOKMARKS runs' default sampling: temperature 0 for every role, as the released runner's
near-deterministic 1e-8 (a run's ``temperature`` or ``PERSONAE_TEMPERATURE`` wins)."""


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
class ActingContext(ChromaAccess, LLMContext):
    """Run settings shared by every method; method contexts subclass it and add their own.

    The strong model acts; the fast one does routine calls (matching, sync checks). Sampling
    defaults to temperature 0 (:data:`NEAR_DETERMINISTIC`), on the CLI and the server alike.
    Methods whose memory is embedded add the ``embedding`` field and
    :class:`~personae.graphs.store_context.EmbeddingAccess`.
    """

    default_sampling: ClassVar[Mapping[str, str]] = NEAR_DETERMINISTIC

    # -- the storyline and what the actor sees
    storyline_path: str
    """BOOKMARKS release JSON or JSONL file of the storyline."""
    scene_size: int = 10
    """Actions shown as the current scene."""
    hide_title: bool = True
    """Leave the story's title out of every prompt (the default: the released prompts name no
    story, and a famous title invites recall of later plot); false names it (``--show-title``,
    ours)."""
    # -- plumbing: where the memory lives
    memory_dir: str | None = None
    """Directory of the persistent memory (embedded Chroma, JSON); null keeps it in process."""
    chroma_host: str = ""
    """Chroma server for the memory instead of embedded Chroma on disk. Empty: CHROMA_HOST,
    else embedded Chroma."""
    chroma_port: int = 0
    """Port of the Chroma server. 0: CHROMA_PORT, else 8000."""

    def __post_init__(self) -> None:
        """Fill the Chroma server from the settings where the run left it empty (the edge)."""
        super().__post_init__()
        self.fill_chroma()

    def story_title(self, name: str) -> str | None:
        """The title prompts show for storyline ``name``: ``None`` when hidden."""
        return None if self.hide_title else name
