"""The bookmark bank: one Chroma collection per storyline (CONTRACT STUB, being implemented).

Implemented by the bookmarks-memory work; the bookmarks agent codes against these signatures.
"""

from __future__ import annotations

from pathlib import Path

from chromadb.api import ClientAPI

from personae.memory.bookmark import Bookmark, BookmarkType
from personae.settings import Settings


class BookmarkBank:
    """All bookmarks of one storyline, persisted in Chroma."""

    def __init__(self, client: ClientAPI, storyline: str) -> None:
        """Open (or create) the storyline's collection with the hashing embedding."""
        raise NotImplementedError

    @classmethod
    def open(
        cls, storyline: str, path: Path | None, settings: Settings | None = None
    ) -> BookmarkBank:
        """Open the bank under ``path`` (embedded), on ``CHROMA_HOST``, or in memory (None)."""
        raise NotImplementedError

    def create(
        self,
        *,
        question: str,
        type: BookmarkType,
        character: str,
        answer: str = "",
        position: int = 0,
        parent_id: str | None = None,
        keyword: str | None = None,
    ) -> Bookmark:
        """Create and store a bookmark; the bank assigns its id."""
        raise NotImplementedError

    def get(self, bookmark_id: str) -> Bookmark:
        """The stored bookmark; ``KeyError`` if unknown."""
        raise NotImplementedError

    def save(self, bookmark: Bookmark) -> None:
        """Write answer, position and memory in one upsert (never half-updated)."""
        raise NotImplementedError

    def candidates(
        self, question: str, *, type: BookmarkType, character: str, synced_by: int, k: int = 5
    ) -> list[Bookmark]:
        """Same type, position <= synced_by, same character for behavioral; lexical top-k."""
        raise NotImplementedError

    def near(self, target: int, *, character: str, window: int = 5) -> list[Bookmark]:
        """Bookmarks synced within ``window`` actions before ``target`` (not others' behavioral)."""
        raise NotImplementedError

    def all(self) -> list[Bookmark]:
        """Every bookmark."""
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError
