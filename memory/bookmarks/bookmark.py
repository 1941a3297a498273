"""The bookmark record: a question about the story, its answer, and how far it is synced.

Position convention used everywhere: ``position = p`` means the answer reflects exactly the
actions ``[0, p)``. Syncing to a target ``t`` reads only ``[p, t)``; nothing at or after ``t``.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class BookmarkType(StrEnum):
    """The paper's three bookmark types, each with its own sync operator."""

    CONCEPT = "concept"
    """About a named entity; synced by a keyword scan of the unseen actions."""
    STATE = "state"
    """About the current situation; synced chunk by chunk (reset / update / no change)."""
    BEHAVIORAL = "behavioral"
    """A general pattern of the proposing character; synced from that character's actions."""


class AnswerVersion(BaseModel):
    """An answer and the position from which it is valid."""

    position: int
    """The answer holds for readers at positions >= this (it reflects actions [0, position))."""
    answer: str


class StateTransition(BaseModel):
    """One state-sync decision (kept as the state bookmark's memory)."""

    position: int
    """End of the chunk that caused it (exclusive)."""
    operation: str
    """``reset``, ``update`` or ``no_change``."""
    answer: str


class Bookmark(BaseModel):
    """One bookmark in the bank."""

    id: str
    """Stable id assigned by the bank (never by a model)."""
    question: str
    type: BookmarkType
    character: str
    """The character whose proposer asked it."""
    answer: str = ""
    """Answer at ``position``; ``""`` means unknown so far."""
    position: int = 0
    """Synced through actions [0, position)."""
    parent_id: str | None = None
    """For derived bookmarks: the bookmark it was initialised from."""
    keyword: str | None = None
    """Concept bookmarks: the entity name scanned for."""
    evidence: list[int] = Field(default_factory=list)
    """Behavioral bookmarks: positions of actions that support the pattern."""
    transitions: list[StateTransition] = Field(default_factory=list)
    """State bookmarks: the chunk-by-chunk decisions."""
    history: list[AnswerVersion] = Field(default_factory=list)
    """Answers with the position each became valid from, oldest first: every one, or (when
    ``archived``) the latest ones, the bank's archive holding the older."""
    archived: bool = False
    """Older answer versions are in the bank's archive: ``BookmarkBank.get(id, at=p)`` brings
    back those a reader at ``p`` needs."""

    def answer_at(self, position: int) -> str:
        """The answer a reader at ``position`` may see: never one that used later actions.

        ``""`` (unknown) before the first version held; for an ``archived`` bookmark read with
        ``BookmarkBank.get(id, at=position)`` that is its true first answer.
        """
        seen = [v.answer for v in self.history if v.position <= position]
        return seen[-1] if seen else ""
