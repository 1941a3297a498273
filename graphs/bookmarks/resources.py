"""What the BOOKMARKS graph opens once per (memory dir, storyline) and reuses on every step.

The benchmark invokes the graph once per test instance, thousands of times on one storyline:
reopening Chroma, reparsing the storyline or rebuilding its inverted index on every step would
dominate the run. :func:`resources_for` caches them under the
:class:`~personae.graphs.bookmarks.resource_cache.StorylineKey` the baselines use too.

It also keeps the "answered unknown" list: after a step's syncs, a bookmark whose answer is
still ``""`` at the target is recorded as unknown for (character, question) with that target,
the position where it was found unanswerable, and the proposer of a later step is told not to
ask it again (its code also drops near-duplicate re-asks). A step at an earlier position does
not see it: knowing that a question stays unanswerable further on is knowledge from the future.
The list is a small JSON file beside the Chroma directory (``unknown-<scope>.json``), written
atomically, once per step; with no memory directory it lives in the process only, like the
in-memory bank.

The bank and the list are scoped by :attr:`Storyline.scope` (name and content fingerprint), like
the baselines' stores: a corrected re-download of a storyline must not reuse bookmarks built
from the old text, whose answers and positions may no longer hold. Banks and lists written
before this scoping (named by the storyline alone) are left in place and no longer read.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from typing_extensions import TypedDict

from personae.agents.bookmarks.question_proposer import is_near_duplicate
from personae.files import write_json_atomic
from personae.graphs.bookmarks.resource_cache import ResourceCache, StorylineKey, storyline_key
from personae.memory.bookmarks.bank import BookmarkBank
from personae.memory.bookmarks.storyline import Storyline
from personae.memory.chroma import safe_collection_name
from personae.memory.embeddings import TextEmbedding, open_embedding
from personae.process_caches import clears_on_reset
from personae.settings import DEFAULT_EMBEDDINGS
from personae.tools.bookmarks.storyline_index import StorylineIndex, index_for

logger = logging.getLogger(__name__)

UNKNOWN_LIMIT = 50
"""Most recent unknown questions kept per character (the prompt lists them all)."""


class UnknownEntry(TypedDict):
    """One question found unanswerable."""

    question: str
    position: int
    """The target of the sync that left it unknown: steps before it do not see the entry."""


@dataclass
class UnknownQuestions:
    """Questions whose answer came back unknown, per character, with the position where."""

    path: Path | None
    by_character: dict[str, list[UnknownEntry]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, path: Path | None) -> UnknownQuestions:
        """Read the list at ``path`` (missing or unreadable file: start empty).

        Entries of the older format (a bare question, no position) are dropped: without the
        position they could leak to earlier targets; the question is simply found again.
        """
        data: dict[str, list[UnknownEntry]] = {}
        if path is not None and path.is_file():
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                data = {
                    str(c): [
                        UnknownEntry(question=str(e["question"]), position=int(e["position"]))
                        for e in entries
                        if isinstance(e, dict)
                    ]
                    for c, entries in dict(raw).items()
                }
            except (json.JSONDecodeError, TypeError, ValueError, KeyError) as error:
                logger.info("unknown-questions file unreadable, starting empty: %s", error)
                data = {}
        return cls(path=path, by_character=data)

    def questions(self, character: str, before: int | None = None) -> list[str]:
        """The questions not to ask again for ``character`` at target ``before``.

        Only entries found at or before ``before`` (every entry when ``None``).
        """
        with self._lock:
            return [
                e["question"]
                for e in self.by_character.get(character, [])
                if before is None or e["position"] <= before
            ]

    def record(self, character: str, question: str, position: int) -> bool:
        """Remember ``question`` as unknown for ``character`` at ``position``.

        A near-duplicate already listed keeps the earlier of the two positions. Returns False
        when nothing changed.
        """
        return self.record_all(character, [question], position)

    def record_all(self, character: str, questions: Iterable[str], position: int) -> bool:
        """:meth:`record` for each question, then one write of the file if anything changed."""
        with self._lock:
            changed = [self._add(character, question, position) for question in questions]
            if any(changed) and self.path is not None:
                write_json_atomic(self.path, self.by_character)
            return any(changed)

    def _add(self, character: str, question: str, position: int) -> bool:
        known = self.by_character.setdefault(character, [])
        same = [e for e in known if is_near_duplicate(question, [e["question"]])]
        if same:
            if all(e["position"] <= position for e in same):
                return False
            for entry in same:
                entry["position"] = min(entry["position"], position)
        else:
            known.append(UnknownEntry(question=question, position=position))
            del known[:-UNKNOWN_LIMIT]
        return True


@dataclass(frozen=True)
class BookmarkResources:
    """The storyline, its index, its bank and its unknown-question list."""

    storyline: Storyline
    index: StorylineIndex
    bank: BookmarkBank
    unknown: UnknownQuestions


_CACHE: ResourceCache[BookmarkResources] = ResourceCache()


def resources_for(
    storyline_path: str,
    memory_dir: str | None,
    chroma: str = "",
    embedding: TextEmbedding | None = None,
) -> BookmarkResources:
    """The cached resources for a storyline file, memory directory and embedding.

    Raises :class:`~personae.errors.InputError` for a missing or malformed storyline file.
    ``chroma`` (``host:port``, the run context's Chroma server) puts the bank on that server.
    ``embedding`` (default ``hashing``; a context's
    :meth:`~personae.graphs.bookmarks.graph.BookmarksContext.embedding`) embeds the bank's questions:
    each embedding has its own collection. Blocks (files, Chroma): async callers go through a
    thread.
    """
    key = storyline_key(storyline_path, memory_dir, chroma)
    chosen = embedding or open_embedding(DEFAULT_EMBEDDINGS)
    resources: BookmarkResources = _CACHE.get((key, chosen), lambda: _open(key, chosen))
    return resources


def _open(key: StorylineKey, embedding: TextEmbedding) -> BookmarkResources:
    storyline, path = key.storyline(), key.memory_dir
    bank = BookmarkBank.open(
        storyline.name, path, key.chroma_settings(), scope=storyline.scope, embedding=embedding
    )
    name = safe_collection_name(storyline.scope, prefix="unknown-")
    unknown = UnknownQuestions.load(path / f"{name}.json" if path else None)
    return BookmarkResources(storyline, index_for(storyline), bank, unknown)


def forget_resources() -> None:
    """Drop every cached resource (tests that simulate a restart; long-lived servers)."""
    _CACHE.clear()


clears_on_reset("graphs.bookmarks.resources.step_resources", forget_resources)
